// The CUDA-IPC seam's real table: each entry is the CUDA runtime's own call.
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "transports/cuda_ipc/cuda_ipc_impl.h"

namespace ccscope::transports::cuda_ipc {

namespace {

// cuMemGetAddressRange through the runtime's entry-point lookup: the binary then needs no
// libcuda at link time, and runs (and says why it cannot) where no driver is installed.
cudaError_t addressRange(const void* ptr, char** base, size_t* len) {
  using GetAddressRange = PFN_cuMemGetAddressRange_v3020;
  thread_local void* fn = nullptr;
  if (!fn) {
    cudaDriverEntryPointQueryResult q{};
    cudaError_t e =
        cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess) return e;
    if (!fn || q != cudaDriverEntryPointSuccess) return cudaErrorNotSupported;
  }
  CUdeviceptr alloc = 0;
  if (reinterpret_cast<GetAddressRange>(fn)(&alloc, len, reinterpret_cast<CUdeviceptr>(ptr)) !=
      CUDA_SUCCESS)
    return cudaErrorInvalidValue;
  *base = reinterpret_cast<char*>(alloc);  // NOLINT(performance-no-int-to-ptr)
  return cudaSuccess;
}

const CudaIpcOps kReal = {
    .error_name = cudaGetErrorName,
    .error_string = cudaGetErrorString,
    .get_device_count = cudaGetDeviceCount,
    .get_device = cudaGetDevice,
    .address_range = addressRange,
    .ipc_get_mem_handle = cudaIpcGetMemHandle,
    .ipc_open_mem_handle =
        [](void** p, cudaIpcMemHandle_t h) {
          return cudaIpcOpenMemHandle(p, h, cudaIpcMemLazyEnablePeerAccess);
        },
    .ipc_close_mem_handle = cudaIpcCloseMemHandle,
    .stream_create =
        [](cudaStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); },
    .stream_destroy = cudaStreamDestroy,
    .stream_synchronize = cudaStreamSynchronize,
    .memcpy_async =
        [](void* dst, const void* src, size_t len, cudaStream_t s) {
          return cudaMemcpyAsync(dst, src, len, cudaMemcpyDeviceToDevice, s);
        },
    .event_create =
        [](cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDisableTiming); },
    .event_record = [](cudaEvent_t e, cudaStream_t s) { return cudaEventRecord(e, s); },
    .event_query = cudaEventQuery,
    .event_destroy = cudaEventDestroy,
};

}  // namespace

const CudaIpcOps& realCudaIpcOps() { return kReal; }

}  // namespace ccscope::transports::cuda_ipc

namespace ccscope::transports {

std::unique_ptr<Transport> makeCudaIpcTransport(const TransportOptions& opts) {
  return cuda_ipc::makeCudaIpcTransportOn(opts, cuda_ipc::realCudaIpcOps());
}

}  // namespace ccscope::transports
