// The keywords that wake the analyzer's structured parsers (progress counters, IB and P2P
// blocks, versions, launch lines, NCCL RAS reports, crashes), one per Trigger.
#pragma once

#include <string>
#include <vector>

namespace ccscope::diagnostics {

// Indices into triggerKeywords(), in a namespace of their own: short names, one user.
namespace triggers {
enum Trigger {
  kSeqNum,
  kNcclWork,
  kCaName,
  kState,
  kHcaId,
  kPort,
  kBandwidth,
  kAccessPeer,
  kNranks,
  kWorldSize,
  kWorldSizeSpaced,
  kNcclVersion,
  kZeroOfOne,
  kZeroOutOfOne,
  kMpirun,
  kMpiexec,
  kSrun,
  kNetPlugin,
  kPluginPath,
  kRasOperation,
  kRasManaged,
  kRasIncomplete,
  kRasMismatch,
  kRasDead,
  kRasCounts,
  kGlobalRank,
  kRegistered,
  kFirstCrash,  // the rest report a fatal signal
};
}  // namespace triggers

const std::vector<std::string>& triggerKeywords();

}  // namespace ccscope::diagnostics
