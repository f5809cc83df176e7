// ProgressTracker: per-rank collective progress as the logs report it (PyTorch watchdog
// "WorkNCCL(SeqNum=..)" and "last enqueued/completed NCCL work", Flight Recorder pg_status and
// entries). Compared across ranks it names the rank that is behind: the one whose last enqueued
// collective is lowest never called the collective the others wait in. It also spots
// collectives whose type differs across ranks at the same sequence number.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/analyze/event.h"

namespace ccscope::diagnostics {

struct RankProgress {
  long last_enqueued = -1;
  long last_completed = -1;
  long timed_out_seq = -1;
  std::string op;  // OpType of the collective that timed out
  reports::Evidence evidence;
};

class ProgressTracker {
 public:
  // Parses one watchdog line (any line; cheap when it is not one). rank may be -1: then the
  // line's own "Rank N]" is used. Returns true when the line carried progress.
  bool parseWatchdogLine(std::string_view body, int rank, const reports::Evidence& where);
  // NCCL RAS's "Rank N has launched up to operation M" (the rank's last enqueued collective);
  // `host` gets the node the line names. Returns the rank, -1 when the line is not one.
  int parseRasOperationLine(std::string_view body, const reports::Evidence& where,
                            std::string* host = nullptr, long* count = nullptr);
  // The collective recorded at sequence number `seq` in any process group ("" when unknown).
  std::string opAt(long seq) const;
  void recordEnqueued(int rank, long last_enqueued, long last_completed,
                      const reports::Evidence& where);
  // One Flight Recorder entry: collective `seq` of process group `pg` was `op` on `rank`.
  void recordOp(int rank, const std::string& pg, long seq, const std::string& op,
                const reports::Evidence& where);

  // The job's size, where a line states it ("nranks 8", "world_size=8", "WORLD_SIZE: 8").
  void parseWorldSize(std::string_view body);
  // A rank that left at least one line in the logs.
  void noteRankSeen(int rank);

  // Cross-rank conclusions, as events for the accumulator.
  std::vector<Event> conclude() const;
  // The ranks whose last enqueued collective is the lowest, a minority below the others (empty
  // when none is behind); lo and hi are the lowest and highest last enqueued.
  std::vector<int> behind(long* lo = nullptr, long* hi = nullptr) const;
  const std::map<int, RankProgress>& ranks() const { return ranks_; }

 private:
  std::optional<Event> opMismatch() const;
  std::vector<Event> absentRanks() const;
  RankProgress* slot(int rank);

  std::map<int, RankProgress> ranks_;
  long world_size_ = -1;
  std::vector<bool> seen_;  // by rank, below world size limits
  struct OpKey {
    std::string pg;
    long seq;
    bool operator<(const OpKey& o) const { return pg != o.pg ? pg < o.pg : seq < o.seq; }
  };
  std::map<OpKey, std::map<std::string, std::vector<int>>> ops_;  // key -> op -> ranks
  std::map<OpKey, reports::Evidence> op_evidence_;
};

// Specs of the findings this tracker derives (also listed in docs/diagnosis.md).
const FindingSpec& rankBehindSpec();
const FindingSpec& opMismatchSpec();
const FindingSpec& rankAbsentSpec();

}  // namespace ccscope::diagnostics
