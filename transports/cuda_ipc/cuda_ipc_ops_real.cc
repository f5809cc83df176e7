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

// The stream memory operations, looked up once per process: absent from an old driver, which
// then runs the host path.
struct StreamOps {
  PFN_cuStreamWriteValue32_v11070 write = nullptr;
  PFN_cuStreamWaitValue32_v11070 wait = nullptr;
  cudaError_t status = cudaErrorNotSupported;
};

const StreamOps& streamOps() {
  static const StreamOps ops = [] {
    StreamOps o;
    void* w = nullptr;
    void* v = nullptr;
    cudaDriverEntryPointQueryResult qw{}, qv{};
    o.status =
        cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &w, 11070, cudaEnableDefault, &qw);
    if (o.status == cudaSuccess)
      o.status = cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &v, 11070,
                                                  cudaEnableDefault, &qv);
    if (o.status == cudaSuccess &&
        (!w || !v || qw != cudaDriverEntryPointSuccess || qv != cudaDriverEntryPointSuccess))
      o.status = cudaErrorNotSupported;
    if (o.status == cudaSuccess) {
      o.write = reinterpret_cast<PFN_cuStreamWriteValue32_v11070>(w);
      o.wait = reinterpret_cast<PFN_cuStreamWaitValue32_v11070>(v);
    }
    return o;
  }();
  return ops;
}

cudaError_t fromDriver(CUresult r) {
  return r == CUDA_SUCCESS               ? cudaSuccess
         : r == CUDA_ERROR_NOT_SUPPORTED ? cudaErrorNotSupported
                                         : cudaErrorUnknown;
}

cudaError_t hostRegister(void* p, size_t len, void** device_ptr) {
  cudaError_t e = cudaHostRegister(p, len, cudaHostRegisterMapped | cudaHostRegisterPortable);
  if (e != cudaSuccess) return e;
  return cudaHostGetDevicePointer(device_ptr, p, 0);
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
    .host_register = hostRegister,
    .host_unregister = cudaHostUnregister,
    .stream_ops_available = [] { return streamOps().status; },
    .stream_write_value32 =
        [](cudaStream_t s, void* addr, uint32_t v) {
          return fromDriver(streamOps().write(reinterpret_cast<CUstream>(s),
                                              reinterpret_cast<CUdeviceptr>(addr), v,
                                              CU_STREAM_WRITE_VALUE_DEFAULT));
        },
    .stream_wait_value32 =
        [](cudaStream_t s, void* addr, uint32_t v) {
          return fromDriver(streamOps().wait(reinterpret_cast<CUstream>(s),
                                             reinterpret_cast<CUdeviceptr>(addr), v,
                                             CU_STREAM_WAIT_VALUE_GEQ));
        },
};

}  // namespace

const CudaIpcOps& realCudaIpcOps() { return kReal; }

}  // namespace ccscope::transports::cuda_ipc

namespace ccscope::transports {

std::unique_ptr<Transport> makeCudaIpcTransport(const TransportOptions& opts) {
  return cuda_ipc::makeCudaIpcTransportOn(opts, cuda_ipc::realCudaIpcOps());
}

}  // namespace ccscope::transports
