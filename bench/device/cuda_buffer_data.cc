#include "bench/device/cuda_buffer_data.h"

#include <vector>

#include "bench/cuda/check_kernels.h"

namespace ccscope::bench::device {

namespace {

class CudaBufferData final : public BufferData {
 public:
  explicit CudaBufferData(collectives::DeviceRuntime& d) : dev_(d) {}
  ~CudaBufferData() override {
    if (offsets_) dev_.release(offsets_);
  }
  CudaBufferData(const CudaBufferData&) = delete;
  CudaBufferData& operator=(const CudaBufferData&) = delete;

  core::Status fillInput(const CheckContext& c, void* in) override {
    CCSCOPE_ASSIGN_OR_RETURN(DeviceCheckContext d, context(c));
    CCSCOPE_RETURN_IF_ERROR(fillInputOnDevice(d, in, dev_.stream()));
    return dev_.synchronize();
  }
  core::Status poison(const CheckContext& c, void* buf, uint64_t elems) override {
    CCSCOPE_ASSIGN_OR_RETURN(DeviceCheckContext d, context(c));
    CCSCOPE_RETURN_IF_ERROR(poisonOnDevice(d, buf, elems, dev_.stream()));
    return dev_.synchronize();
  }
  core::Result<int64_t> countWrong(const CheckContext& c, const void* out) override {
    CCSCOPE_ASSIGN_OR_RETURN(DeviceCheckContext d, context(c));
    return countWrongOnDevice(d, out, dev_.stream());
  }

 private:
  // All-to-allv's offsets for this rank, copied to the device when the plan changes.
  core::Result<DeviceCheckContext> context(const CheckContext& c) {
    if (!c.plan) return deviceCheckContext(c, nullptr, nullptr);
    AlltoallvOffsets o = alltoallvOffsets(*c.plan, c.rank);
    std::vector<uint64_t> both(o.send);
    both.insert(both.end(), o.recv.begin(), o.recv.end());
    if (both != host_offsets_) {
      if (offsets_ && both.size() != host_offsets_.size()) {
        dev_.release(offsets_);
        offsets_ = nullptr;
      }
      if (!offsets_) {
        CCSCOPE_ASSIGN_OR_RETURN(void* p, dev_.allocate(both.size() * sizeof(uint64_t)));
        offsets_ = static_cast<uint64_t*>(p);
      }
      CCSCOPE_RETURN_IF_ERROR(dev_.copy(offsets_, both.data(), both.size() * sizeof(uint64_t)));
      host_offsets_ = std::move(both);
    }
    return deviceCheckContext(c, offsets_, offsets_ + o.send.size());
  }

  collectives::DeviceRuntime& dev_;
  std::vector<uint64_t> host_offsets_;
  uint64_t* offsets_ = nullptr;
};

}  // namespace

std::unique_ptr<BufferData> cudaBufferData(collectives::DeviceRuntime& device) {
  return std::make_unique<CudaBufferData>(device);
}

}  // namespace ccscope::bench::device
