#include "core/units.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace ccscope::core {

namespace {
std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

Result<uint64_t> parseSize(std::string_view s) {
  auto bad = [&] {
    return Status(Code::kInvalidArgument,
                  fmt::format("cannot parse size '{}' (examples: 8, 4K, 64M, 1G)", s));
  };
  if (s.empty()) return bad();
  uint64_t value = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || p == s.data()) return bad();
  std::string suffix = lower(std::string_view(p, s.data() + s.size() - p));
  uint64_t mult = 1;
  if (suffix.empty() || suffix == "b")
    mult = 1;
  else if (suffix == "k" || suffix == "kb" || suffix == "kib")
    mult = 1ull << 10;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib")
    mult = 1ull << 20;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib")
    mult = 1ull << 30;
  else if (suffix == "t" || suffix == "tb" || suffix == "tib")
    mult = 1ull << 40;
  else
    return bad();
  if (value > UINT64_MAX / mult) return bad();
  return value * mult;
}

Result<double> parseDurationSeconds(std::string_view s) {
  std::string str(s);
  char* end = nullptr;
  double v = std::strtod(str.c_str(), &end);
  std::string suffix = lower(end ? std::string_view(end) : std::string_view());
  double mult = 0;
  if (suffix.empty() || suffix == "s")
    mult = 1;
  else if (suffix == "ms")
    mult = 1e-3;
  else if (suffix == "us")
    mult = 1e-6;
  else if (suffix == "m" || suffix == "min")
    mult = 60;
  else if (suffix == "h")
    mult = 3600;
  if (end == str.c_str() || mult == 0 || !std::isfinite(v))
    return Status(Code::kInvalidArgument,
                  fmt::format("cannot parse duration '{}' (examples: 30s, 500ms, 2m)", s));
  if (v <= 0)
    return Status(Code::kInvalidArgument, fmt::format("duration '{}' must be positive", s));
  return v * mult;
}

std::string formatBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 4 && std::fmod(v, 1024) == 0) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{} {}", static_cast<uint64_t>(v), kUnits[u]);
}

}  // namespace ccscope::core
