// Helpers for the pickle tests: opcodes spelled out byte by byte, and a small pickler of JSON
// values (protocol 2, as PyTorch writes its Flight Recorder dumps) for whole documents.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ccscope::diagnostics::pickle_test {

inline std::string le(uint64_t v, int bytes) {
  std::string out;
  for (int k = 0; k < bytes; ++k) out += static_cast<char>((v >> (8 * k)) & 0xFF);
  return out;
}
inline std::string op(int code) { return std::string(1, static_cast<char>(code)); }
inline std::string proto(int p = 2) { return op(0x80) + op(p); }
inline std::string str(std::string_view s) { return "X" + le(s.size(), 4) + std::string(s); }
inline std::string put(int idx) { return "q" + op(idx); }
inline std::string get(int idx) { return "h" + op(idx); }
inline std::string K(int v) { return "K" + op(v); }

// One value: dicts with SETITEMS, lists with APPENDS, ints as BININT or LONG1.
inline std::string pickled(const nlohmann::json& v) {
  if (v.is_null()) return "N";
  if (v.is_boolean()) return op(v.get<bool>() ? 0x88 : 0x89);
  if (v.is_string()) return str(v.get<std::string>());
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i >= INT32_MIN && i <= INT32_MAX) return "J" + le(static_cast<uint64_t>(i), 4);
    return op(0x8a) + op(8) + le(static_cast<uint64_t>(i), 8);
  }
  std::string out = v.is_object() ? "}(" : "](";
  for (const auto& [key, item] : v.items()) {
    if (v.is_object()) out += str(key);
    out += pickled(item);
  }
  return out + (v.is_object() ? "u" : "e");
}

inline std::string pickleDocument(const nlohmann::json& v) { return proto() + pickled(v) + "."; }

}  // namespace ccscope::diagnostics::pickle_test
