// Wire formats of the TCP transport: the hello that opens every connection and the frame header
// that precedes every message part. Fixed, versioned binary structs in host byte order (the
// magic doubles as a byte-order check: a mismatched host fails the hello, never the data path).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ccscope::transports {

inline constexpr uint32_t kTcpMagic = 0x54435043;  // "CPCT"
inline constexpr uint16_t kTcpVersion = 1;
inline constexpr int kTcpMaxStreams = 64;

struct TcpHello {
  uint32_t magic = kTcpMagic;
  uint16_t version = kTcpVersion;
  uint16_t stream = 0;  // index of this connection among the pair's streams
  int32_t rank = 0;     // the sender of the hello
  int32_t size = 0;     // world size as the sender sees it
  int32_t streams = 0;  // streams per pair as the sender sees it
  uint32_t reserved = 0;
  uint64_t token_hash = 0;  // FNV-1a of the job token: strays and other jobs are refused
};
static_assert(sizeof(TcpHello) == 32);

// Frame kinds are distinctive words, so a desynchronised stream is detected, not misread.
enum class TcpFrameKind : uint32_t {
  kData = 0x41544144,         // a message part follows: `len` is the whole message's length
  kAbortTag = 0x47415441,     // receiver saw a tag mismatch: tag = sender's tag, len = expected
  kAbortLength = 0x4e454c41,  // receive too short: tag = sender's tag, len = posted length
  kAbortPeer = 0x52454550,    // the sender ended every exchange with us (Transport::abortPeer)
};

struct TcpFrameHeader {
  uint32_t tag = 0;
  TcpFrameKind kind = TcpFrameKind::kData;
  uint64_t len = 0;
};
static_assert(sizeof(TcpFrameHeader) == 16);

inline bool tcpIsAbort(const TcpFrameHeader& h) {
  return h.kind == TcpFrameKind::kAbortTag || h.kind == TcpFrameKind::kAbortLength ||
         h.kind == TcpFrameKind::kAbortPeer;
}

// Messages at least this long are striped over all streams; shorter ones travel whole on
// stream 0, so small messages cost one header and one syscall.
inline constexpr size_t kTcpStripeMinBytes = size_t{256} << 10;
inline constexpr size_t kTcpStripeAlign = 4096;

inline int tcpPartsFor(size_t len, int streams) { return len >= kTcpStripeMinBytes ? streams : 1; }

struct TcpPart {
  size_t off = 0;
  size_t len = 0;
};

// The contiguous slice of a `len`-byte message carried by stream `i`; both sides compute it
// from the length in the header, so parts need no offsets on the wire.
inline TcpPart tcpPartRange(size_t len, int streams, int i) {
  int parts = tcpPartsFor(len, streams);
  if (i >= parts) return {len, 0};
  if (parts == 1) return {0, len};
  size_t chunk = (len + parts - 1) / parts;
  chunk = (chunk + kTcpStripeAlign - 1) / kTcpStripeAlign * kTcpStripeAlign;
  size_t off = std::min(len, chunk * static_cast<size_t>(i));
  return {off, std::min(len, off + chunk) - off};
}

inline uint64_t tcpTokenHash(std::string_view token) {
  uint64_t h = 1469598103934665603ull;
  for (char c : token) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace ccscope::transports
