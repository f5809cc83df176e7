// NCCL's version code as people write it, for the probe and the nccl transport alike (no NCCL
// header needed: the code is an int).
#pragma once

#include <fmt/format.h>

#include <string>

namespace ccscope::transports {

// "2.28.9" from NCCL_VERSION_CODE or ncclGetVersion: X*10000 + Y*100 + Z from 2.9,
// X*1000 + Y*100 + Z before.
inline std::string ncclVersionText(int v) {
  if (v < 10000) return fmt::format("{}.{}.{}", v / 1000, (v % 1000) / 100, v % 100);
  return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
}

}  // namespace ccscope::transports
