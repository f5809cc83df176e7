#include "diagnostics/analyze/analyzer_triggers.h"

#include "core/check.h"

namespace ccscope::diagnostics {

const std::vector<std::string>& triggerKeywords() {
  // One keyword per Trigger, in its order (the crash keywords from kFirstCrash on).
  // clang-format off
  static const std::vector<std::string> k = {
      "SeqNum=",                // kSeqNum
      "NCCL work:",             // kNcclWork
      "CA '",                   // kCaName
      "state:",                 // kState
      "hca_id:",                // kHcaId
      "port",                   // kPort
      "Bandwidth",              // kBandwidth
      "Access Peer",            // kAccessPeer
      "nranks ",                // kNranks
      "world_size",             // kWorldSize
      "world size ",            // kWorldSizeSpaced
      "NCCL version ",          // kNcclVersion
      " 0 of 1",                // kZeroOfOne
      " 0 out of 1",            // kZeroOutOfOne
      "mpirun ",                // kMpirun
      "mpiexec",                // kMpiexec
      "srun ",                  // kSrun
      "NET/Plugin",             // kNetPlugin
      "Plugin Path",            // kPluginPath
      " launched ",             // kRasOperation
      " managed by process ",   // kRasManaged
      "INCOMPLETE",             // kRasIncomplete
      "MISMATCH",               // kRasMismatch
      "considered dead",        // kRasDead
      " operation counts",      // kRasCounts
      "GLOBAL_RANK: ",          // kGlobalRank
      "processes registered",   // kRegistered
      "Caught signal",          // kFirstCrash
      "received signal",
      "Segmentation fault",
      "SIGSEGV",
      "SIGABRT",
      "SIGILL"};
  // clang-format on
  CCSCOPE_CHECK(k[triggers::kFirstCrash] == "Caught signal", "a Trigger without its keyword");
  return k;
}

}  // namespace ccscope::diagnostics
