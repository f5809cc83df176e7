// Binary blobs (UCX worker addresses, CUDA IPC handles, QP addresses) as text for the bootstrap's
// key-value store, and back.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ccscope::transports {

inline std::string toHex(const void* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[b[i] >> 4];
    out[2 * i + 1] = kDigits[b[i] & 15];
  }
  return out;
}

// The bytes of lower-case hex text; empty when it is not that (odd length, another character).
inline std::vector<unsigned char> fromHex(const std::string& s) {
  auto nibble = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  };
  if (s.size() % 2) return {};
  std::vector<unsigned char> out(s.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return {};
    out[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return out;
}

// Exactly n bytes from hex text into p; false when the text is not n bytes of hex.
inline bool fromHex(const std::string& s, void* p, size_t n) {
  const std::vector<unsigned char> bytes = fromHex(s);
  if (bytes.size() != n) return false;
  for (size_t i = 0; i < n; ++i) static_cast<unsigned char*>(p)[i] = bytes[i];
  return true;
}

}  // namespace ccscope::transports
