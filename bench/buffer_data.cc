#include "bench/buffer_data.h"

namespace ccscope::bench {

namespace {

class HostData final : public BufferData {
 public:
  core::Status fillInput(const CheckContext& c, void* in) override {
    bench::fillInput(c, in);
    return core::Status::ok();
  }
  core::Status poison(const CheckContext& c, void* buf, uint64_t elems) override {
    bench::poison(c, buf, elems);
    return core::Status::ok();
  }
  core::Result<int64_t> countWrong(const CheckContext& c, const void* out) override {
    return bench::countWrong(c, out);
  }
};

}  // namespace

BufferData& hostBufferData() {
  static HostData data;
  return data;
}

}  // namespace ccscope::bench
