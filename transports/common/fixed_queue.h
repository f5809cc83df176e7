// A fixed-capacity FIFO of request slots: per-peer send and receive queues without allocation
// on the data path.
#pragma once

#include <cstdint>
#include <vector>

#include "core/check.h"

namespace ccscope::transports {

class FixedQueue {
 public:
  explicit FixedQueue(uint32_t capacity = 0) : items_(capacity) {}
  bool empty() const { return head_ == tail_; }
  uint32_t size() const { return static_cast<uint32_t>(tail_ - head_); }
  uint32_t front() const { return items_[head_ % items_.size()]; }
  uint32_t at(uint32_t i) const { return items_[(head_ + i) % items_.size()]; }
  void push(uint32_t v) {
    CCSCOPE_CHECK(size() < items_.size(), "fixed queue overflow");
    items_[tail_++ % items_.size()] = v;
  }
  void pop() { ++head_; }
  void clear() { head_ = tail_ = 0; }

 private:
  std::vector<uint32_t> items_;
  uint64_t head_ = 0, tail_ = 0;
};

}  // namespace ccscope::transports
