// `--algo auto` for a ScheduleBackend: the cost model calibrated once on the measured transport,
// per collective, dtype and reduction the candidates measured at anchor sizes (the corrections),
// and per size the close candidates timed where the rows will run. The backend asks it for an
// algorithm at every prepare(); the note says why that one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "collectives/algorithms.h"
#include "collectives/auto_select.h"
#include "collectives/collective_backend.h"
#include "collectives/device_runtime.h"
#include "collectives/harness_channel.h"
#include "collectives/schedule.h"
#include "core/deadline.h"
#include "core/host_memory.h"
#include "core/status.h"
#include "transports/transport.h"

namespace ccscope::collectives {

// What the policy times candidates on: the backend's own executor and buffers, so that the
// timing runs are tagged and recorded as the rows' runs are.
class CandidateRunner {
 public:
  virtual ~CandidateRunner() = default;
  // The pipeline segment the backend would cut `cfg` into.
  virtual uint64_t segmentElems(const OpConfig& cfg) const = 0;
  // Binds `s`, built for cfg, on the executor the rows run on (scratch grows to fit).
  virtual core::Status bindCandidate(const Schedule& s, const OpConfig& cfg) = 0;
  // One recorded run of what bindCandidate() bound; `algo` names it in the flight recorder.
  virtual core::Status runCandidate(const AlgorithmInfo& algo, const OpConfig& cfg,
                                    core::Deadline deadline) = 0;
};

// Collective over all ranks of `t`, on buffers of `pages` (those the bench's buffers use), or on
// `device`'s memory and kernels where one is given; `max_over_ranks` reduces a vector to its
// elementwise max.
core::Result<Calibration> calibrate(
    transports::Transport& t, core::HostPages pages,
    const std::function<core::Status(std::span<double>)>& max_over_ranks, core::Deadline deadline,
    DeviceRuntime* device = nullptr);

class AutoPolicy {
 public:
  // Calibrates the model (collective: every rank calls it alike). The harness reduces the
  // timings and separates the timed batches; both must outlive the policy.
  static core::Result<std::unique_ptr<AutoPolicy>> create(transports::Transport& t,
                                                          HarnessChannel& harness,
                                                          core::HostPages pages, double timeout_s,
                                                          DeviceRuntime* device = nullptr);
  // The algorithm for cfg, on buffers of buffer_bytes each: the corrected model's pick, or the
  // fastest of the close candidates timed at this size. Collective: every rank calls it alike.
  core::Result<const AlgorithmInfo*> choose(const OpConfig& cfg, size_t buffer_bytes,
                                            CandidateRunner& runner);
  // Why the last choose() picked what it did, for the rows.
  const std::string& note() const { return note_; }
  // The calibration, for the line above the table.
  std::string setupNote() const;
  const Calibration& calibration() const { return calibration_; }

 private:
  AutoPolicy(int rank, int size, HarnessChannel& harness, double timeout_s)
      : rank_(rank), size_(size), harness_(harness), timeout_s_(timeout_s) {}
  // The candidates of cfg's collective measured on this machine (once per collective, dtype
  // and reduction).
  core::Result<Corrections*> corrections(const OpConfig& cfg, size_t buffer_bytes,
                                         CandidateRunner& runner);
  core::Result<double> timeAlgorithm(const AlgorithmInfo& a, const OpConfig& cfg, uint64_t count,
                                     int iters, CandidateRunner& runner);
  core::Status maxOverRanks(std::span<double> v);

  const int rank_, size_;
  HarnessChannel& harness_;
  const double timeout_s_;
  Calibration calibration_;
  bool device_buffers_ = false;  // calibrated on the device's memory and kernels
  std::map<std::tuple<int, int, int>, Corrections> corrections_;
  Schedule calib_sched_;  // the candidate being timed (the executor keeps it by reference)
  std::string note_;
};

}  // namespace ccscope::collectives
