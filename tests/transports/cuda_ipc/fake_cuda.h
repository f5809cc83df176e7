// A fake of the CUDA calls behind the CUDA-IPC transport's seam (CudaIpcOps), for its protocol
// tests without a GPU. It works across processes, as the transport does: device memory is a
// /dev/shm object per allocation (its IPC handle holds the name, so a forked rank opens it),
// and each process has one fake GPU thread that runs the stream work (copies, event records)
// in stream order, each item after a random delay (max_delay_us): copies and event records
// that run late, so a host that trusts anything but a completed event of its own reads or
// overwrites a buffer too early. Stream memory operations (a 32-bit write, a wait until a
// word reaches a value) run in the same order; a wait holds the fake GPU until its word, which
// another process's host or stream writes, is reached. Events are this process's only, as the
// transport's are: CUDA does not say when another process sees a record, so its protocol does not
// rest on one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "transports/cuda_ipc/cuda_ipc_ops.h"

namespace ccscope::transports::cuda_ipc::fake {

struct FakeGpuOptions {
  int64_t max_delay_us = 0;  // each stream item waits a random 0..max before it runs
  uint64_t seed = 1;
  bool stream_ops = true;  // stream memory operations (the stream path) are available
};

// The names of this test process's allocations start with this (set before forking ranks),
// so the parent can remove what a killed rank left in /dev/shm.
void setFakeGpuPrefix(const std::string& prefix);
// Removes every /dev/shm object under the prefix.
void removeFakeGpuObjects(const std::string& prefix);

// Starts this process's fake GPU (in each rank, after fork) and returns the table.
const CudaIpcOps& startFakeGpu(const FakeGpuOptions& options);

// Device memory of this process's fake GPU, openable by other processes through its handle.
char* fakeDeviceAlloc(size_t len);
void fakeDeviceFree(char* p);
// Items the fake GPU has run so far (copies and records).
uint64_t fakeGpuItemsRun();

}  // namespace ccscope::transports::cuda_ipc::fake
