// Which messages the shm transport moves by one process_vm_readv from the sender's buffer, and
// which it copies twice through the receiver's ring slots: the threshold and why it applies.
#pragma once

#include <cstddef>

namespace ccscope::transports::shm {

// With a core per rank the receiver is running when the sender posts, so the rendezvous costs
// one handshake, and one copy from the sender's buffer beats two through slots that the other
// core has just written, most of all when cache lines are slow to cross between cores.
// Oversubscribed, the eager slots let a sender finish without its receiver being scheduled, and
// 32 KiB by single copy is slower (docs/performance.md, "Shared-memory single-copy threshold").
inline constexpr size_t kSingleCopyFromCorePerRank = size_t{32} * 1024;
inline constexpr size_t kSingleCopyFromOversubscribed = size_t{64} * 1024;

struct SingleCopyThreshold {
  size_t from_bytes;  // messages of this size and more go by single copy
  const char* why;    // for the debug log
};

// `asked`: TransportOptions::single_copy_from, which the job sets only from
// $CCSCOPE_SHM_SINGLE_COPY_FROM (0: not set).
SingleCopyThreshold singleCopyThreshold(size_t asked, bool oversubscribed);

}  // namespace ccscope::transports::shm
