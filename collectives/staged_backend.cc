#include "collectives/staged_backend.h"

#include <fmt/format.h>

#include <algorithm>

namespace ccscope::collectives {

using core::Status;

namespace {

// Device buffers the harness sees; the host backend's own buffers (pinned here) are what the
// transport moves. Copies are whole input and output ranges, as a GPU-unaware fabric needs.
class StagedBackend final : public CollectiveBackend {
 public:
  StagedBackend(std::unique_ptr<CollectiveBackend> host, DeviceRuntime& dev)
      : host_(std::move(host)), dev_(dev) {}
  ~StagedBackend() override { releaseAll(); }
  StagedBackend(const StagedBackend&) = delete;
  StagedBackend& operator=(const StagedBackend&) = delete;

  std::string algorithm() const override { return host_->algorithm(); }
  std::string chosenAlgorithm() const override { return host_->chosenAlgorithm(); }
  std::string choiceNote() const override { return host_->choiceNote(); }
  std::string setupNote() const override { return host_->setupNote(); }
  std::string transport() const override { return host_->transport(); }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  Status allocate(size_t max_bytes, core::HostPages pages) override;
  std::string allocationNote() const override { return host_->allocationNote(); }
  char* sendBuffer() override { return send_; }
  char* recvBuffer() override { return recv_; }
  DeviceRuntime* device() override { return &dev_; }
  std::string dataPath() const override { return "staged"; }
  Status prepare(const OpConfig& cfg) override {
    CCSCOPE_RETURN_IF_ERROR(host_->prepare(cfg));
    geo_ = geometry(cfg.collective, cfg.count, size(), rank(), cfg.plan);
    elem_ = core::dataTypeSize(cfg.dtype);
    return Status::ok();
  }
  Status run(bool in_place, core::Deadline deadline) override;
  Status barrier(core::Deadline d) override { return host_->barrier(d); }
  Status maxDoubles(std::span<double> v, core::Deadline d) override {
    return host_->maxDoubles(v, d);
  }
  Status sumInts(std::span<int64_t> v, core::Deadline d) override { return host_->sumInts(v, d); }
  void corruptNextResult() override { host_->corruptNextResult(); }
  void setFlightRecorder(core::FlightRecorder* r) override { host_->setFlightRecorder(r); }

 private:
  void releaseAll() {
    for (char* p : {send_, recv_})
      if (p) dev_.release(p);
    for (char* p : pinned_) dev_.unpinHost(p);
    send_ = recv_ = nullptr;
    pinned_.clear();
  }
  std::unique_ptr<CollectiveBackend> host_;
  DeviceRuntime& dev_;
  char* send_ = nullptr;
  char* recv_ = nullptr;
  std::vector<char*> pinned_;
  Geometry geo_;
  size_t elem_ = 1;
};

Status StagedBackend::allocate(size_t max_bytes, core::HostPages pages) {
  releaseAll();
  CCSCOPE_RETURN_IF_ERROR(host_->allocate(max_bytes, pages));
  const size_t bytes = std::max<size_t>(max_bytes, 64);
  for (char* h : {host_->sendBuffer(), host_->recvBuffer()}) {
    CCSCOPE_RETURN_IF_ERROR(dev_.pinHost(h, bytes));
    pinned_.push_back(h);
  }
  CCSCOPE_ASSIGN_OR_RETURN(void* s, dev_.allocate(bytes));
  send_ = static_cast<char*>(s);
  CCSCOPE_ASSIGN_OR_RETURN(void* r, dev_.allocate(bytes));
  recv_ = static_cast<char*>(r);
  return Status::ok();
}

// Down, the collective on the host buffers, up: the input range of this placement to the host
// backend's buffer at the same offset, and the output range back.
Status StagedBackend::run(bool in_place, core::Deadline deadline) {
  const size_t in_off = in_place ? geo_.in_place_in_offset * elem_ : 0;
  const size_t out_off = in_place ? geo_.in_place_out_offset * elem_ : 0;
  char* dev_in = in_place ? recv_ : send_;
  char* host_in = in_place ? host_->recvBuffer() : host_->sendBuffer();
  if (geo_.in_elems)
    CCSCOPE_RETURN_IF_ERROR(dev_.copy(host_in + in_off, dev_in + in_off, geo_.in_elems * elem_));
  CCSCOPE_RETURN_IF_ERROR(host_->run(in_place, deadline));
  if (geo_.out_elems)
    CCSCOPE_RETURN_IF_ERROR(
        dev_.copy(recv_ + out_off, host_->recvBuffer() + out_off, geo_.out_elems * elem_));
  return Status::ok();
}

}  // namespace

std::unique_ptr<CollectiveBackend> stagedBackend(std::unique_ptr<CollectiveBackend> host,
                                                 DeviceRuntime& device) {
  return std::make_unique<StagedBackend>(std::move(host), device);
}

}  // namespace ccscope::collectives
