// Memory a transport moves: what kind it is (host, pinned host, a CUDA device), the keys the
// transport registered it under, and bounds every view of it is checked against
// (transports/README.md, "Memory").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/status.h"

namespace ccscope::transports {

enum class MemoryKind : uint8_t { kHost, kHostPinned, kCuda };
const char* memoryKindName(MemoryKind k);

// A set of kinds: what a transport or a compute backend can work on.
class MemoryKinds {
 public:
  constexpr MemoryKinds() = default;
  constexpr MemoryKinds(std::initializer_list<MemoryKind> ks) {
    for (MemoryKind k : ks) bits_ |= bit(k);
  }
  constexpr bool has(MemoryKind k) const { return (bits_ & bit(k)) != 0; }
  std::string names() const;  // "host, host-pinned"

 private:
  static constexpr uint8_t bit(MemoryKind k) { return uint8_t(1u << static_cast<unsigned>(k)); }
  uint8_t bits_ = 0;
};

// What a transport needs to name registered memory on the wire or to its device: verbs
// lkey/rkey, or an opaque handle (a UCX memory handle, a CUDA IPC handle's local state).
struct MemoryKeys {
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  void* handle = nullptr;
};

// A registered range, or a bounds-checked view of one. Views share the registration's keys and
// id; `offset()` is where the view starts inside the registered range (what a one-sided write
// names together with the rkey).
class MemoryRegion {
 public:
  MemoryRegion() = default;
  MemoryRegion(char* base, size_t len, MemoryKind kind, int device, uint32_t id, MemoryKeys keys)
      : base_(base), len_(len), kind_(kind), device_(device), id_(id), keys_(keys) {}

  char* base() const { return base_; }
  size_t len() const { return len_; }
  MemoryKind kind() const { return kind_; }
  int device() const { return device_; }  // CUDA device ordinal; -1 for host memory
  uint32_t id() const { return id_; }     // 0: not registered
  const MemoryKeys& keys() const { return keys_; }
  size_t offset() const { return offset_; }

  bool contains(size_t offset, size_t len) const { return offset <= len_ && len <= len_ - offset; }
  // The view [offset, offset + len); an error naming the region if it would overrun.
  core::Result<MemoryRegion> slice(size_t offset, size_t len) const;
  // As slice(), for a range the caller already checked with contains().
  MemoryRegion view(size_t offset, size_t len) const {
    MemoryRegion v = *this;
    v.base_ = base_ + offset;
    v.len_ = len;
    v.offset_ = offset_ + offset;
    return v;
  }
  // The view from `offset` to the end.
  core::Result<MemoryRegion> from(size_t offset) const {
    return slice(offset, offset <= len_ ? len_ - offset : 0);
  }

 private:
  char* base_ = nullptr;
  size_t len_ = 0;
  MemoryKind kind_ = MemoryKind::kHost;
  int device_ = -1;
  uint32_t id_ = 0;
  MemoryKeys keys_;
  size_t offset_ = 0;
};

class Transport;

// One registration; deregisters when it goes (or on reset()). Move-only. Safe to outlive its
// transport: it then does nothing (the transport let go of every registration when it went).
class Registration {
 public:
  Registration() = default;
  ~Registration() { reset(); }
  Registration(Registration&& o) noexcept { *this = std::move(o); }
  Registration& operator=(Registration&& o) noexcept;
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

  const MemoryRegion& region() const { return mr_; }
  bool registered() const { return mr_.id() != 0; }
  void reset();

 private:
  friend class Transport;
  struct Owner;  // the transport, while it lives (Transport holds the only strong reference)
  Registration(std::weak_ptr<Owner> owner, MemoryRegion mr) : owner_(std::move(owner)), mr_(mr) {}
  std::weak_ptr<Owner> owner_;
  MemoryRegion mr_;
};

}  // namespace ccscope::transports
