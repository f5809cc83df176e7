// The backend for our own algorithms: a schedule per size on the shared executor, over the
// transport under test. It ties together the buffers (BackendBuffers), `--algo auto`'s choice
// (AutoPolicy) and the harness's own collectives, which run on a HarnessChannel apart from the
// measured transport.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "collectives/algorithms.h"
#include "collectives/auto_policy.h"
#include "collectives/backend_buffers.h"
#include "collectives/collective_backend.h"
#include "collectives/executor.h"
#include "collectives/harness_channel.h"
#include "collectives/schedule.h"
#include "transports/transport.h"

namespace ccscope::collectives {

struct AlgorithmOptions {
  std::string algorithm = "ring";
  size_t segment_bytes = 0;  // 0: chosen from the message size
  double timeout_s = 30;     // deadline of each collective auto runs while calibrating
  core::HostPages host_pages = core::HostPages::kBase;  // of auto's calibration buffer
  // Buffers and local steps on this GPU (it must outlive the backend); nullptr: host memory.
  DeviceRuntime* device = nullptr;
};

class ScheduleBackend final : public CollectiveBackend, private CandidateRunner {
 public:
  // `harness` carries barriers and statistics (it must outlive the backend); without one, the
  // backend makes a channel that shares `t` (probes and tests that have no other).
  static core::Result<std::unique_ptr<ScheduleBackend>> create(transports::Transport& t,
                                                               const AlgorithmOptions& opts,
                                                               HarnessChannel* harness = nullptr);
  std::string algorithm() const override { return opts_.algorithm; }
  std::string transport() const override { return t_.name(); }
  int rank() const override { return t_.rank(); }
  int size() const override { return t_.size(); }
  core::Status allocate(size_t max_bytes, core::HostPages pages) override {
    return bufs_.allocate(max_bytes, pages);
  }
  bool shareBuffers(CollectiveBackend& other, size_t max_bytes) override;
  std::string allocationNote() const override { return bufs_.allocationNote(); }
  char* sendBuffer() override { return bufs_.send(); }
  char* recvBuffer() override { return bufs_.recv(); }
  DeviceRuntime* device() override { return opts_.device; }
  std::string dataPath() const override { return opts_.device ? "device" : "host"; }
  uint64_t segmentBytes() const override { return segment_bytes_; }
  core::Status prepare(const OpConfig& cfg) override;
  core::Status run(bool in_place, core::Deadline deadline) override;
  core::Status barrier(core::Deadline deadline) override;
  core::Status maxDoubles(std::span<double> values, core::Deadline deadline) override;
  core::Status sumInts(std::span<int64_t> values, core::Deadline deadline) override;
  void corruptNextResult() override { exec_.corruptNextResult(); }
  // A channel of its own (none was given) records where the backend does.
  void setFlightRecorder(core::FlightRecorder* r) override;
  std::string chosenAlgorithm() const override { return algo_name_; }
  std::string choiceNote() const override { return policy_ ? policy_->note() : ""; }
  // One line each: auto's calibration; that a transport which does not verify tags shows a
  // rank one collective ahead of its peer only as wrong data.
  std::string setupNote() const override;

 private:
  ScheduleBackend(transports::Transport& t, AlgorithmOptions o) : t_(t), opts_(std::move(o)) {}
  core::Status measureSegmentCost();
  uint64_t segmentElems(const OpConfig& cfg) const override;
  core::Status bindCandidate(const Schedule& s, const OpConfig& cfg) override;
  core::Status runCandidate(const AlgorithmInfo& algo, const OpConfig& cfg,
                            core::Deadline deadline) override;
  // One run of the executor, in the flight recorder when there is one. `op`, `algo` and
  // `dtype` must be static strings: records may outlive this backend.
  core::Status runRecorded(const Buffers& b, const char* op, const char* algo, const char* dtype,
                           uint64_t bytes, core::Deadline deadline);

  transports::Transport& t_;
  AlgorithmOptions opts_;
  std::unique_ptr<HarnessChannel> own_harness_;  // only when create() was given none
  HarnessChannel* harness_ = nullptr;
  BackendBuffers bufs_{t_};
  std::unique_ptr<AutoPolicy> policy_;  // "auto" only
  Schedule sched_;
  // The rows' runs and auto's timing runs alike, so that their message tags line up.
  Executor exec_;
  Geometry geo_;
  size_t elem_ = 1;
  uint64_t segment_bytes_ = 0;
  std::optional<CostParams> seg_cost_;  // measured on device buffers (measureSegmentCost)
  OpConfig cfg_;
  const char* algo_name_ = "";
};

}  // namespace ccscope::collectives
