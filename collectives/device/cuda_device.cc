#include "collectives/device/cuda_device.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <deque>
#include <utility>
#include <vector>

#include "collectives/cuda/cuda_kernels.h"
#include "core/cuda_status.h"

namespace ccscope::collectives::device {

using core::Status;

namespace {

// Local steps on the rank's stream, each followed by an event: a step has finished when its
// event has (steps on one stream finish in order, so only the oldest is polled).
class CudaCompute final : public ComputeBackend {
 public:
  explicit CudaCompute(cudaStream_t stream) : stream_(stream) {}
  ~CudaCompute() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  CudaCompute(const CudaCompute&) = delete;
  CudaCompute& operator=(const CudaCompute&) = delete;

  const char* name() const override { return "cuda"; }
  transports::MemoryKinds memoryKinds() const override { return {transports::MemoryKind::kCuda}; }
  // Every step goes on the rank's stream, in order: the stream a stream-ordered transport (nccl)
  // is given (TransportOptions::cuda_stream).
  bool streamOrdered() const override { return true; }
  Status bind(core::DataType dtype, core::ReduceOp op, int ranks) override {
    dtype_ = dtype;
    op_ = reduceOpForKernel(op);
    ranks_ = ranks;
    elem_ = core::dataTypeSize(dtype);
    return Status::ok();
  }
  core::Result<bool> start(const LocalStep& s, uint32_t token) override;
  bool anyFinished() const override {
    return !pending_.empty() &&
           cudaEventQuery(events_[pending_.front().event]) != cudaErrorNotReady;
  }
  // A step whose event reports an error (a faulted kernel) finishes too, and its error is kept
  // for takeError: its dependents must not read what it did not write.
  bool nextFinished(uint32_t* token) override {
    if (pending_.empty()) return false;
    cudaError_t e = cudaEventQuery(events_[pending_.front().event]);
    if (e == cudaErrorNotReady) return false;
    if (e != cudaSuccess && error_.isOk()) error_ = core::cudaStatus("a reduction step", e);
    *token = pending_.front().token;
    pending_.pop_front();
    return true;
  }
  Status takeError() override { return std::exchange(error_, Status::ok()); }
  void flipLowBit(char* p) override {
    unsigned char b = 0;
    if (cudaMemcpyAsync(&b, p, 1, cudaMemcpyDeviceToHost, stream_) != cudaSuccess ||
        cudaStreamSynchronize(stream_) != cudaSuccess)
      return;
    b ^= 1u;
    if (cudaMemcpyAsync(p, &b, 1, cudaMemcpyHostToDevice, stream_) == cudaSuccess)
      cudaStreamSynchronize(stream_);
  }

 private:
  struct Pending {
    size_t event;
    uint32_t token;
  };
  core::Result<size_t> nextEvent();

  cudaStream_t stream_;
  core::DataType dtype_ = core::DataType::kFloat;
  core::ReduceOp op_ = core::ReduceOp::kSum;
  int ranks_ = 1;
  size_t elem_ = 4;
  std::vector<cudaEvent_t> events_;  // a ring: step k uses events_[k % size]
  size_t next_ = 0;
  std::deque<Pending> pending_;
  Status error_;
};

// The ring grows while every event is in use, so a step never waits for an older one here.
core::Result<size_t> CudaCompute::nextEvent() {
  if (events_.empty() || pending_.size() == events_.size()) {
    cudaEvent_t e = nullptr;
    CCSCOPE_CUDA_RETURN("cudaEventCreateWithFlags",
                        cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_.insert(events_.begin() + static_cast<std::ptrdiff_t>(next_), e);
    for (Pending& p : pending_)
      if (p.event >= next_) ++p.event;
  }
  const size_t i = next_;
  next_ = (next_ + 1) % events_.size();
  return i;
}

core::Result<bool> CudaCompute::start(const LocalStep& s, uint32_t token) {
  switch (s.kind) {
    case OpKind::kReduce:
      CCSCOPE_RETURN_IF_ERROR(reduceOnDevice(dtype_, op_, s.dst, s.a, s.b, s.count, stream_));
      break;
    case OpKind::kCopy:
      if (s.a == s.dst || s.count == 0) return true;
      CCSCOPE_CUDA_RETURN("cudaMemcpyAsync", cudaMemcpyAsync(s.dst, s.a, s.count * elem_,
                                                             cudaMemcpyDeviceToDevice, stream_));
      break;
    case OpKind::kScale:
      CCSCOPE_RETURN_IF_ERROR(scaleOnDevice(dtype_, s.dst, s.count, ranks_, stream_));
      break;
    default:
      return Status(core::Code::kInternal, "a message given to the compute backend");
  }
  CCSCOPE_ASSIGN_OR_RETURN(size_t ev, nextEvent());
  CCSCOPE_CUDA_RETURN("cudaEventRecord", cudaEventRecord(events_[ev], stream_));
  pending_.push_back({ev, token});
  return false;
}

class CudaDevice final : public DeviceRuntime {
 public:
  static core::Result<std::unique_ptr<DeviceRuntime>> open(int device);
  ~CudaDevice() override {
    cudaSetDevice(device_);
    releaseGraph();
    compute_.reset();
    for (cudaEvent_t e : marks_) cudaEventDestroy(e);
    if (stream_) cudaStreamDestroy(stream_);
  }
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  int device() const override { return device_; }
  std::string describe() const override { return describe_; }
  core::Result<void*> allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess)
      return core::cudaStatus("cudaMalloc", e)
          .prepend(fmt::format("{} bytes on {}", bytes, describe_));
    return p;
  }
  void release(void* p) override { cudaFree(p); }
  ComputeBackend& compute() override { return *compute_; }
  void* stream() override { return stream_; }
  Status synchronize() override {
    CCSCOPE_CUDA_RETURN("cudaStreamSynchronize", cudaStreamSynchronize(stream_));
    return Status::ok();
  }
  Status copy(void* dst, const void* src, size_t bytes) override {
    CCSCOPE_CUDA_RETURN("cudaMemcpyAsync",
                        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
    CCSCOPE_CUDA_RETURN("cudaStreamSynchronize", cudaStreamSynchronize(stream_));
    return Status::ok();
  }
  Status pinHost(void* p, size_t bytes) override {
    CCSCOPE_CUDA_RETURN("cudaHostRegister", cudaHostRegister(p, bytes, cudaHostRegisterDefault));
    return Status::ok();
  }
  void unpinHost(void* p) override { cudaHostUnregister(p); }
  Status mark(int index) override {
    while (marks_.size() <= static_cast<size_t>(index)) {
      cudaEvent_t e = nullptr;
      CCSCOPE_CUDA_RETURN("cudaEventCreate", cudaEventCreate(&e));
      marks_.push_back(e);
    }
    CCSCOPE_CUDA_RETURN("cudaEventRecord", cudaEventRecord(marks_[index], stream_));
    return Status::ok();
  }
  core::Result<double> elapsedUs(int from, int to) override {
    CCSCOPE_CUDA_RETURN("cudaEventSynchronize", cudaEventSynchronize(marks_.at(to)));
    float ms = 0;
    CCSCOPE_CUDA_RETURN("cudaEventElapsedTime",
                        cudaEventElapsedTime(&ms, marks_.at(from), marks_.at(to)));
    return ms * 1e3;
  }
  core::Result<bool> passed(int index) override {
    const cudaError_t e = cudaEventQuery(marks_.at(index));
    if (e == cudaErrorNotReady) return false;
    CCSCOPE_CUDA_RETURN("cudaEventQuery", e);
    return true;
  }
  // Thread-local mode: NCCL's own threads keep making CUDA calls while this one captures.
  Status beginCapture() override {
    releaseGraph();
    CCSCOPE_CUDA_RETURN("cudaStreamBeginCapture",
                        cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    return Status::ok();
  }
  Status endCapture(bool keep) override {
    cudaGraph_t g = nullptr;
    const cudaError_t e = cudaStreamEndCapture(stream_, &g);
    graph_ = g;
    if (!keep) releaseGraph();
    CCSCOPE_CUDA_RETURN("cudaStreamEndCapture", e);
    if (keep) CCSCOPE_CUDA_RETURN("cudaGraphInstantiate", cudaGraphInstantiate(&exec_, graph_, 0));
    return Status::ok();
  }
  Status launchGraph() override {
    if (!exec_) return Status(core::Code::kInternal, "launchGraph before a capture ended");
    CCSCOPE_CUDA_RETURN("cudaGraphLaunch", cudaGraphLaunch(exec_, stream_));
    return Status::ok();
  }
  // CUDA frees an executable graph that is still running once it finishes.
  void releaseGraph() override {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
    exec_ = nullptr;
    graph_ = nullptr;
  }

 private:
  explicit CudaDevice(int device) : device_(device) {}
  int device_;
  std::string describe_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CudaCompute> compute_;
  std::vector<cudaEvent_t> marks_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

core::Result<std::unique_ptr<DeviceRuntime>> CudaDevice::open(int device) {
  std::unique_ptr<CudaDevice> d(new CudaDevice(device));
  CCSCOPE_CUDA_RETURN("cudaSetDevice", cudaSetDevice(device));
  CCSCOPE_CUDA_RETURN("cudaStreamCreateWithFlags",
                      cudaStreamCreateWithFlags(&d->stream_, cudaStreamNonBlocking));
  cudaDeviceProp p{};
  CCSCOPE_CUDA_RETURN("cudaGetDeviceProperties", cudaGetDeviceProperties(&p, device));
  char bus[32] = "";
  cudaDeviceGetPCIBusId(bus, sizeof bus, device);
  d->describe_ = fmt::format("cuda:{} {} ({})", device, p.name, bus);
  d->compute_ = std::make_unique<CudaCompute>(d->stream_);
  return std::unique_ptr<DeviceRuntime>(std::move(d));
}

}  // namespace

Status cudaUsable() {
  int n = 0;
  CCSCOPE_RETURN_IF_ERROR(core::cudaStatus("cudaGetDeviceCount", cudaGetDeviceCount(&n)));
  if (n == 0)
    return Status(core::Code::kUnavailable, "cudaGetDeviceCount: no CUDA device visible")
        .withLayer(core::Layer::kGpu);
  return Status::ok();
}

core::Result<std::unique_ptr<DeviceRuntime>> openCudaDevice(int local_rank, int gpus_per_node) {
  int n = 0;
  CCSCOPE_RETURN_IF_ERROR(core::cudaStatus("cudaGetDeviceCount", cudaGetDeviceCount(&n)));
  if (n == 0) return cudaUsable();
  const int per_node = gpus_per_node > 0 ? gpus_per_node : n;
  const int device = std::max(local_rank, 0) % per_node;
  if (device >= n)
    return Status(
        core::Code::kInvalidArgument,
        fmt::format(
            "--gpus-per-node {} but this process sees {} GPU{} "
            "(CUDA_VISIBLE_DEVICES={})",
            gpus_per_node, n, n == 1 ? "" : "s",
            std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "unset"));
  return CudaDevice::open(device);
}

}  // namespace ccscope::collectives::device
