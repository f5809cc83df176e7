// The seam between the CUDA-IPC transport and CUDA: every CUDA call the transport makes goes
// through this table of plain function pointers, so that its protocol can be driven without a
// GPU, through a fake with adversarial timing (tests/transports/cuda_ipc/fake_cuda.h), as the
// verbs transport is through VerbsOps. The real table (cuda_ipc_ops_real.cc) calls the CUDA
// runtime. Calls keep the runtime's conventions (cudaError_t; cudaErrorNotReady from a query).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "transports/transport.h"

namespace ccscope::transports::cuda_ipc {

struct CudaIpcOps {
  const char* (*error_name)(cudaError_t e);
  const char* (*error_string)(cudaError_t e);
  cudaError_t (*get_device_count)(int* n);
  cudaError_t (*get_device)(int* device);
  // The allocation that holds `ptr` (cuMemGetAddressRange): cudaErrorInvalidValue when `ptr`
  // is not device memory.
  cudaError_t (*address_range)(const void* ptr, char** base, size_t* len);
  cudaError_t (*ipc_get_mem_handle)(cudaIpcMemHandle_t* handle, void* alloc_base);
  cudaError_t (*ipc_open_mem_handle)(void** ptr, cudaIpcMemHandle_t handle);
  cudaError_t (*ipc_close_mem_handle)(void* ptr);
  cudaError_t (*stream_create)(cudaStream_t* stream);  // non-blocking
  cudaError_t (*stream_destroy)(cudaStream_t stream);
  cudaError_t (*stream_synchronize)(cudaStream_t stream);
  cudaError_t (*memcpy_async)(void* dst, const void* src, size_t len, cudaStream_t stream);
  cudaError_t (*event_create)(cudaEvent_t* event);  // without timing, this process only
  cudaError_t (*event_record)(cudaEvent_t event, cudaStream_t stream);
  cudaError_t (*event_query)(cudaEvent_t event);
  cudaError_t (*event_destroy)(cudaEvent_t event);
  // The stream path (cuda_ipc_stream.cc). Page-locks and maps host memory (cudaHostRegister,
  // mapped and portable) and gives the address devices use for it.
  cudaError_t (*host_register)(void* p, size_t len, void** device_ptr);
  cudaError_t (*host_unregister)(void* p);
  // cudaSuccess where the stream memory operations below can run, else why not.
  cudaError_t (*stream_ops_available)();
  // cuStreamWriteValue32 (with its default fence: earlier work of the stream is visible first)
  // and cuStreamWaitValue32 with CU_STREAM_WAIT_VALUE_GEQ ((int32_t)(*addr - v) >= 0).
  cudaError_t (*stream_write_value32)(cudaStream_t stream, void* device_addr, uint32_t v);
  cudaError_t (*stream_wait_value32)(cudaStream_t stream, void* device_addr, uint32_t v);
};

// The runtime's own calls (links cudart; cuMemGetAddressRange through its entry-point lookup).
const CudaIpcOps& realCudaIpcOps();
// The transport over any table (the factory uses realCudaIpcOps(), the seam tests a fake).
std::unique_ptr<Transport> makeCudaIpcTransportOn(const TransportOptions& opts,
                                                  const CudaIpcOps& ops);

}  // namespace ccscope::transports::cuda_ipc
