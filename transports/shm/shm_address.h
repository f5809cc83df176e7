// What a rank publishes through the bootstrap store about its shm segment, so that every peer
// can map it: fixed binary, versioned, and checked to come from this same host.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "transports/common/host_identity.h"

namespace ccscope::transports::shm {

struct ShmAddress {
  int32_t pid = 0;
  uint64_t header = 0;  // address of the segment header in the owner's address space
  std::string name;     // of the segment in /dev/shm
  std::string host;     // hostIdentity() of the owner
};

std::string encodeAddress(const ShmAddress& a);
// `from` and `self` (ranks) only word the errors; `a.host` must equal `self_host`.
core::Result<ShmAddress> decodeAddress(std::string_view bytes, int from, int self,
                                       const std::string& self_host);

}  // namespace ccscope::transports::shm
