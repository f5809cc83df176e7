// The rendezvous store's wire format: fixed, versioned binary frames (never parsed text).
// Frame = FrameHeader + payload; payload fields are little-endian integers and
// length-prefixed byte strings, written by Writer and read back by Reader.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/deadline.h"
#include "core/status.h"

namespace ccscope::launch {

inline constexpr uint32_t kStoreMagic = 0x43435354;  // "CCST"
inline constexpr uint16_t kStoreVersion = 3;
inline constexpr uint32_t kMaxFrame = 64u << 20;

enum class MsgType : uint16_t {
  kHello = 1,    // token, rank, size, pid, host, role(0 = kv, 1 = control), host key, address
  kHelloOk,      //
  kReject,       // reason
  kSet,          // id, key, value
  kGet,          // id, key            -> kValue when the key exists
  kAdd,          // id, key, delta     -> kValue (decimal of the new count)
  kValue,        // id, value
  kHeartbeat,    // progress note (free text, for humans)
  kAbort,        // reason: this rank is giving up
  kHealth,       // id                 -> kHealthReply
  kHealthReply,  // id, count, {rank, state, ms since heartbeat, ms since change, host, note,
                 //   progress, address seen, host key, address sent, end signal}*
  kBye,          // clean shutdown
};

#pragma pack(push, 1)
struct FrameHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t type;
  uint32_t length;
};
#pragma pack(pop)

class Writer {
 public:
  explicit Writer(MsgType t) {
    buf_.resize(sizeof(FrameHeader));
    type_ = t;
  }
  Writer& u32(uint32_t v) {
    append(&v, 4);
    return *this;
  }
  Writer& i64(int64_t v) {
    append(&v, 8);
    return *this;
  }
  Writer& str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    append(s.data(), s.size());
    return *this;
  }
  // Finalises the header and returns the frame bytes.
  const std::string& frame() {
    FrameHeader h{kStoreMagic, kStoreVersion, static_cast<uint16_t>(type_),
                  static_cast<uint32_t>(buf_.size() - sizeof(FrameHeader))};
    std::memcpy(buf_.data(), &h, sizeof h);
    return buf_;
  }

 private:
  void append(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  std::string buf_;
  MsgType type_;
};

class Reader {
 public:
  explicit Reader(std::string_view payload) : p_(payload) {}
  bool u32(uint32_t* v) { return take(v, 4); }
  bool i64(int64_t* v) { return take(v, 8); }
  bool str(std::string* s) {
    uint32_t n;
    if (!u32(&n) || n > p_.size()) return false;
    s->assign(p_.substr(0, n));
    p_.remove_prefix(n);
    return true;
  }

 private:
  bool take(void* v, size_t n) {
    if (p_.size() < n) return false;
    std::memcpy(v, p_.data(), n);
    p_.remove_prefix(n);
    return true;
  }
  std::string_view p_;
};

struct Frame {
  MsgType type;
  std::string payload;
};

// Blocking frame I/O on a socket, bounded by a deadline (poll-based; the fd may be non-blocking).
core::Status sendFrame(int fd, const std::string& frame, core::Deadline deadline);
core::Result<Frame> recvFrame(int fd, core::Deadline deadline);

}  // namespace ccscope::launch
