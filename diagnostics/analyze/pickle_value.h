// The values a pickle builds, held in an arena of nodes so that memo references share one value
// as Python shares one object, and their copy into JSON under output limits (shared values are
// copied each time they are referenced, so the copy is bounded separately); and the text checks
// that find where an edited str really ends. Internal to pickle_reader.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/analyze/pickle_reader.h"

namespace ccscope::diagnostics::pickle {

enum class Kind : uint8_t {
  kNone,
  kBool,
  kInt,
  kUint,
  kFloat,
  kString,
  kBytes,
  kList,
  kTuple,
  kDict,
  kSet,
  kOpaque
};

struct Node {
  Kind kind = Kind::kNone;
  int64_t i = 0;                // bool, int; the bits of a kUint or kFloat
  std::string_view text;        // str and bytes: a view of the input; kOpaque: its placeholder
  std::vector<uint32_t> items;  // elements; a dict's keys and values alternate
};

struct Values {
  std::vector<Node> nodes;
  std::deque<std::string> names;  // placeholder texts; a deque keeps the nodes' views valid
  std::string_view keep(std::string s) { return names.emplace_back(std::move(s)); }
};

// JSON text must be UTF-8: invalid bytes (a lone surrogate Python let through) become U+FFFD.
std::string toUtf8(std::string_view s);

// Whether the memo store of entry `next` (BINPUT, LONG_BINPUT or MEMOIZE) starts at in[at].
bool memoStoreAt(std::string_view in, size_t at, size_t next);

// Picklers memoize every str as soon as it is written, numbering entries 0, 1, 2, ...: the length
// nearest `stated` of the str at in[start] that such a store follows and that leaves whole UTF-8,
// within `window` bytes; `stated` when there is none.
uint64_t memoizedStrLength(std::string_view in, size_t start, uint64_t stated, size_t next,
                           size_t window);

// Copies the value at `root` into `out`; false, with `error` set, past a limit.
bool toJson(const Values& values, uint32_t root, const PickleLimits& limits, nlohmann::json& out,
            std::string& error);

}  // namespace ccscope::diagnostics::pickle
