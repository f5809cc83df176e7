// Exact data on the GPU: fill, poison and check device buffers with the values of
// bench/check_data.h (bench/check_values.h, bit for bit), so a GPU run is checked without
// copying its buffers back. Host-callable without CUDA headers: streams are void* (a
// cudaStream_t; null is the legacy default stream).
#pragma once

#include <cstdint>

#include "bench/check_data.h"
#include "collectives/collective.h"
#include "core/dtype.h"
#include "core/status.h"

namespace ccscope::bench {

// bench::CheckContext for device buffers: all-to-allv's offsets (AlltoallvOffsets, ranks + 1
// entries each) live in device memory the caller owns; null for the other collectives.
struct DeviceCheckContext {
  collectives::Collective collective = collectives::Collective::kAllreduce;
  core::DataType dtype = core::DataType::kFloat;
  core::ReduceOp op = core::ReduceOp::kSum;
  int rank = 0;
  int ranks = 1;
  uint64_t count = 0;
  int root = 0;
  const uint64_t* send_offsets = nullptr;  // device memory
  const uint64_t* recv_offsets = nullptr;  // device memory
  uint64_t in_elems = 0;                   // geometry(): this rank's input and output lengths
  uint64_t out_elems = 0;
};

// The device context of a host one: lengths from collectives::geometry (c.plan for all-to-allv),
// offsets as given (device copies of alltoallvOffsets(*c.plan, c.rank)).
DeviceCheckContext deviceCheckContext(const CheckContext& c, const uint64_t* device_send_offsets,
                                      const uint64_t* device_recv_offsets);

// Writes this rank's input (in_elems elements) into device memory; enqueues only.
core::Status fillInputOnDevice(const DeviceCheckContext& c, void* in, void* stream);
// Overwrites elems elements with the poison value of check_data.h's poison(); enqueues only.
core::Status poisonOnDevice(const DeviceCheckContext& c, void* buf, uint64_t elems, void* stream);
// Elements of out (out_elems) that differ bit for bit from the exact result, counted on the
// device; waits for the stream (one 8-byte copy back).
core::Result<int64_t> countWrongOnDevice(const DeviceCheckContext& c, const void* out,
                                         void* stream);

}  // namespace ccscope::bench
