#include "diagnostics/analyze/pickle_value.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace ccscope::diagnostics::pickle {
namespace {

using nlohmann::json;

// Length of the valid UTF-8 sequence at s[i], or 0 (overlong forms and surrogates are invalid).
size_t utf8Length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  const size_t n = c >= 0xC2 && c <= 0xDF   ? 2
                   : c >= 0xE0 && c <= 0xEF ? 3
                   : c >= 0xF0 && c <= 0xF4 ? 4
                                            : 0;
  if (n == 0 || i + n > s.size()) return 0;
  const auto c1 = static_cast<unsigned char>(s[i + 1]);
  if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
      (c == 0xF4 && c1 > 0x8F))
    return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return n;
}

class JsonWriter {
 public:
  JsonWriter(const Values& v, const PickleLimits& lim) : nodes_(v.nodes), lim_(lim) {}
  bool write(uint32_t idx, size_t depth, json& out);
  std::string error;

 private:
  bool fail(const std::string& what) {
    if (error.empty()) error = "pickle: " + what;
    return false;
  }
  bool text(const Node& n, json& out);
  bool key(uint32_t idx, size_t depth, std::string& out);

  const std::vector<Node>& nodes_;
  const PickleLimits& lim_;
  size_t values_ = 0;
  size_t bytes_ = 0;
};

bool JsonWriter::text(const Node& n, json& out) {
  bytes_ += n.text.size();
  if (bytes_ > lim_.max_output_bytes)
    return fail(fmt::format("expands to more than {} bytes of text", lim_.max_output_bytes));
  if (n.kind == Kind::kBytes) {
    out = json::binary(std::vector<uint8_t>(n.text.begin(), n.text.end()));
  } else {
    out = toUtf8(n.text);
  }
  return true;
}

// JSON keys are text: a str as it is, other keys as json.dumps writes them.
bool JsonWriter::key(uint32_t idx, size_t depth, std::string& out) {
  const Node& k = nodes_[idx];
  if (k.kind == Kind::kString || k.kind == Kind::kOpaque) {
    out = toUtf8(k.text);
    return true;
  }
  json j;
  if (!write(idx, depth, j)) return false;
  out = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return true;
}

bool JsonWriter::write(uint32_t idx, size_t depth, json& out) {
  if (depth > lim_.max_depth) return fail(fmt::format("nested deeper than {}", lim_.max_depth));
  if (++values_ > lim_.max_output_values)
    return fail(fmt::format("expands to more than {} values", lim_.max_output_values));
  const Node& n = nodes_[idx];
  switch (n.kind) {
    case Kind::kNone:
      out = nullptr;
      return true;
    case Kind::kBool:
      out = n.i != 0;
      return true;
    case Kind::kInt:
      out = n.i;
      return true;
    case Kind::kUint:
      out = static_cast<uint64_t>(n.i);
      return true;
    case Kind::kFloat: {
      double f = 0;
      std::memcpy(&f, &n.i, sizeof f);
      out = f;
      return true;
    }
    case Kind::kString:
    case Kind::kOpaque:
    case Kind::kBytes:
      return text(n, out);
    case Kind::kDict:
      out = json::object();
      for (size_t k = 0; k + 1 < n.items.size(); k += 2) {
        std::string name;
        if (!key(n.items[k], depth + 1, name) || !write(n.items[k + 1], depth + 1, out[name]))
          return false;
      }
      return true;
    default:  // list, tuple, set
      out = json::array();
      for (const uint32_t item : n.items) {
        if (!write(item, depth + 1, out.emplace_back())) return false;
      }
      return true;
  }
}

}  // namespace

std::string toUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8Length(s, i);
    out += n ? s.substr(i, n) : std::string_view("\xEF\xBF\xBD");
    i += n ? n : 1;
  }
  return out;
}

bool memoStoreAt(std::string_view in, size_t at, size_t next) {
  if (at + 1 >= in.size()) return false;
  const auto op = static_cast<uint8_t>(in[at]);
  if (op == 0x94) return true;
  if (op == 'q') return next < 256 && static_cast<uint8_t>(in[at + 1]) == next;
  if (op != 'r' || at + 4 >= in.size()) return false;
  uint32_t v = 0;
  for (size_t k = 4; k > 0; --k) v = (v << 8) | static_cast<uint8_t>(in[at + k]);
  return v == next;
}

uint64_t memoizedStrLength(std::string_view in, size_t start, uint64_t stated, size_t next,
                           size_t window) {
  const size_t end = start + static_cast<size_t>(std::min<uint64_t>(stated, in.size() - start));
  const size_t limit = std::min(in.size(), end + window);
  // whole[k]: in[start, start + k) is whole, valid UTF-8.
  std::vector<bool> whole(limit - start + 1, false);
  whole[0] = true;
  for (size_t i = start, n = 0; i < limit && (n = utf8Length(in, i)) != 0 && i + n <= limit;) {
    i += n;
    whole[i - start] = true;
  }
  for (size_t d = 0; d <= window; ++d) {
    for (const size_t at : {end - std::min(d, end - start), end + d}) {
      if (at <= limit && whole[at - start] && memoStoreAt(in, at, next)) return at - start;
    }
  }
  return stated;
}

bool toJson(const Values& values, uint32_t root, const PickleLimits& limits, nlohmann::json& out,
            std::string& error) {
  JsonWriter w(values, limits);
  const bool ok = w.write(root, 0, out);
  error = w.error;
  return ok;
}

}  // namespace ccscope::diagnostics::pickle
