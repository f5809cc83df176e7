// The backend for our own algorithms: a schedule per size, the shared executor, a transport.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "collectives/algorithms.h"
#include "collectives/auto_select.h"
#include "collectives/collective_backend.h"
#include "collectives/executor.h"
#include "collectives/schedule.h"
#include "transports/transport.h"

namespace ccscope::collectives {

struct AlgorithmOptions {
  std::string algorithm = "ring";
  size_t segment_bytes = 0;  // 0: chosen from the message size
  double timeout_s = 30;     // deadline of each collective auto runs while calibrating
  core::HostPages host_pages = core::HostPages::kBase;  // of auto's calibration buffer
};

class ScheduleBackend final : public CollectiveBackend {
 public:
  static core::Result<std::unique_ptr<ScheduleBackend>> create(transports::Transport& t,
                                                               const AlgorithmOptions& opts);
  std::string algorithm() const override { return opts_.algorithm; }
  std::string transport() const override { return t_.name(); }
  int rank() const override { return t_.rank(); }
  int size() const override { return t_.size(); }
  core::Status allocate(size_t max_bytes, core::HostPages pages) override;
  bool shareBuffers(CollectiveBackend& other, size_t max_bytes) override;
  std::string allocationNote() const override;
  char* sendBuffer() override { return send_ ? send_->buf.data() : nullptr; }
  char* recvBuffer() override { return recv_ ? recv_->buf.data() : nullptr; }
  core::Status prepare(const OpConfig& cfg) override;
  core::Status run(bool in_place, core::Deadline deadline) override;
  core::Status barrier(core::Deadline deadline) override;
  core::Status maxDoubles(std::span<double> values, core::Deadline deadline) override;
  core::Status sumInts(std::span<int64_t> values, core::Deadline deadline) override;
  void corruptNextResult() override { exec_.corruptNextResult(); }
  std::string chosenAlgorithm() const override { return algo_name_; }
  std::string choiceNote() const override { return choice_note_; }
  std::string setupNote() const override;
  const Calibration& calibration() const { return calibration_; }

 private:
  ScheduleBackend(transports::Transport& t, AlgorithmOptions o) : t_(t), opts_(std::move(o)) {}
  core::Status smallAllreduce(void* data, size_t count, core::DataType dt, core::ReduceOp op,
                              core::Deadline deadline);
  uint64_t segmentElems(const OpConfig& cfg) const;
  core::Status ensureScratch(size_t bytes);
  // auto: the candidates of cfg's collective measured on this machine (once per collective,
  // dtype and reduction), on the same executor as the measured runs so message tags line up.
  core::Result<Corrections*> corrections(const OpConfig& cfg);
  core::Result<double> timeAlgorithm(const AlgorithmInfo& a, const OpConfig& cfg, uint64_t count,
                                     int iters);
  // One run of a prepared executor, in the flight recorder when there is one. Every collective
  // a rank takes part in is recorded, the harness's own too: a hang in a barrier or a
  // statistics reduction must show whom each rank waits on, as one in a measured run does.
  // `op`, `algo` and `dtype` must be static strings: records may outlive this backend.
  core::Status runRecorded(Executor& ex, const Buffers& b, const char* op, const char* algo,
                           const char* dtype, uint64_t bytes, core::Deadline deadline);

  transports::Transport& t_;
  AlgorithmOptions opts_;
  core::HostPages pages_ = core::HostPages::kBase;  // as allocate() was asked; scratch too
  // Host memory and its registration, destroyed registration first.
  struct RegisteredBuffer {
    core::HostBuffer buf;
    transports::Registration reg;
  };
  std::shared_ptr<RegisteredBuffer> send_, recv_;  // shared by the backends of one sweep
  RegisteredBuffer scratch_;
  Schedule sched_;
  Executor exec_;
  Geometry geo_;
  size_t elem_ = 1;
  OpConfig cfg_;
  const char* algo_name_ = "";
  std::string choice_note_;
  Calibration calibration_;  // "auto" only
  std::map<std::tuple<int, int, int>, Corrections> corrections_;
  Schedule calib_sched_;
  // The harness's own barrier and statistics reductions use a separate executor.
  Schedule barrier_sched_;
  Executor barrier_exec_;  // prepared once: barriers sit between timed iterations
  Executor aux_exec_;
  RegisteredBuffer aux_;
};

}  // namespace ccscope::collectives
