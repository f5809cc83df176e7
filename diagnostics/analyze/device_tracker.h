// DeviceTracker: two processes on one host that join one communicator on the same GPU. NCCL's
// init lines name each rank's device ("ncclCommInitRank comm 0x.. rank 1 nranks 2 cudaDev 0
// nvmlDev 0 busId 100000 commId 0x.. - Init START"); two of them with one bus id, one host and
// one communicator, from two processes, are two ranks on one GPU (NCCL then refuses with
// "Duplicate GPU detected", which the logs often stop before), unless the communicator logged
// "Init COMPLETE": NCCL's own check passed (each process set its own NCCL_HOSTID). Seen only
// across lines: each line alone is a healthy init.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/analyze/event.h"

namespace ccscope::diagnostics {

class DeviceTracker {
 public:
  // A line that may be an NCCL "Init START" or "Init COMPLETE" line naming its rank and bus id.
  void parseLine(std::string_view body, const reports::Evidence& where);
  // One event per host and communicator where two processes took one GPU (none otherwise).
  std::vector<Event> conclude() const;

 private:
  struct Seat {
    std::string pid;
    int rank = -1;
    reports::Evidence where;
  };
  struct Clash {
    std::string host, comm, bus_id;
    Seat first, second;
  };
  // (host, communicator, bus id) -> the first process seen there.
  std::map<std::string, Seat> seats_;
  std::vector<Clash> clashes_;
  std::set<std::string> accepted_;  // (host, communicator) that logged "Init COMPLETE"
};

// RankClaimTracker: one rank claimed by several processes while other ranks never appear
// ("initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8" twice, ranks 4 to 7 never), and the world
// never formed (no "All distributed processes registered"): the launcher started processes
// with each other's ranks, as a task count that does not match the framework's nodes x
// devices does. A full second round of every rank (a restart) is no such claim.
class RankClaimTracker {
 public:
  void parseClaim(std::string_view body, const reports::Evidence& where);
  void noteRegistered() { registered_ = true; }
  std::vector<Event> conclude() const;

 private:
  struct Claim {
    int lines = 0;  // lines that claimed the rank
    reports::Evidence first;
  };
  std::map<int, Claim> claims_;
  int world_ = 0;
  int twice_ = -1;  // the first rank claimed twice
  std::vector<reports::Evidence> evidence_;
  bool registered_ = false;
  bool overflow_ = false;
};

const FindingSpec& rankClaimedTwiceSpec();

// The communicator init fields of one NCCL line; empty strings when the line has none.
struct NcclInitLine {
  std::string host, pid, comm, bus_id;
  int rank = -1;
};
NcclInitLine parseNcclInitLine(std::string_view body);

const FindingSpec& duplicateDeviceSpec();

}  // namespace ccscope::diagnostics
