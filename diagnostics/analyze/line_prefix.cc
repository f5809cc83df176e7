#include "diagnostics/analyze/line_prefix.h"

#include <cctype>
#include <cstdint>

namespace ccscope::diagnostics {
namespace {

constexpr int kMaxPrefixes = 8;
constexpr size_t kMaxTagLength = 48;

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view skipSpaces(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && isSpace(s[i])) ++i;
  return s.substr(i);
}

// Reads up to max_digits digits at s[i]; returns the count read (0 when none).
size_t readNumber(std::string_view s, size_t i, size_t max_digits, long& value) {
  size_t n = 0;
  value = 0;
  while (i + n < s.size() && n < max_digits && isDigit(s[i + n])) {
    value = value * 10 + (s[i + n] - '0');
    ++n;
  }
  return n;
}

bool fixedNumber(std::string_view s, size_t i, size_t digits, long& value) {
  return readNumber(s, i, digits, value) == digits;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
long daysFromCivil(long y, long m, long d) {
  y -= m <= 2;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const long yoe = y - era * 400;
  const long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// "YYYY-MM-DD[T ]HH:MM:SS[.,frac][Z|+HH:MM]" at the start of s; returns its length or 0.
size_t parseIsoTime(std::string_view s, double& t) {
  long y, mo, d, h, mi, se;
  if (s.size() < 19 || !fixedNumber(s, 0, 4, y) || s[4] != '-' || !fixedNumber(s, 5, 2, mo) ||
      s[7] != '-' || !fixedNumber(s, 8, 2, d) || (s[10] != 'T' && s[10] != ' ') ||
      !fixedNumber(s, 11, 2, h) || s[13] != ':' || !fixedNumber(s, 14, 2, mi) || s[16] != ':' ||
      !fixedNumber(s, 17, 2, se) || mo < 1 || mo > 12 || d < 1 || d > 31) {
    return 0;
  }
  size_t i = 19;
  double frac = 0, scale = 0.1;
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
    ++i;
    while (i < s.size() && isDigit(s[i])) {
      if (scale > 1e-9) frac += (s[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
  }
  if (i < s.size() && s[i] == 'Z') ++i;
  long tzh, tzm;
  if (i + 6 <= s.size() && (s[i] == '+' || s[i] == '-') && fixedNumber(s, i + 1, 2, tzh) &&
      s[i + 3] == ':' && fixedNumber(s, i + 4, 2, tzm)) {
    i += 6;
  }
  t = static_cast<double>(daysFromCivil(y, mo, d)) * 86400.0 + h * 3600 + mi * 60 + se + frac;
  return i;
}

// Consumes separators that follow a timestamp or tag: spaces, '|', '-', ':' runs.
std::string_view afterSeparator(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (isSpace(s[i]) || s[i] == '|' || s[i] == ':' ||
                          (s[i] == '-' && i + 1 < s.size() && isSpace(s[i + 1])))) {
    ++i;
  }
  return s.substr(i);
}

// "[N,M]<stdout>:" (Open MPI --tag-output); rank = M.
bool stripMpiTag(std::string_view& s, LineContext& ctx) {
  long job, rank;
  if (s.size() < 5 || s[0] != '[') return false;
  size_t n = readNumber(s, 1, 9, job);
  if (n == 0 || 1 + n >= s.size() || s[1 + n] != ',') return false;
  size_t m = readNumber(s, 2 + n, 9, rank);
  size_t i = 2 + n + m;
  if (m == 0 || i >= s.size() || s[i] != ']') return false;
  ++i;
  for (std::string_view tag : {"<stdout>:", "<stderr>:", "<stddiag>:"}) {
    if (s.substr(i).starts_with(tag)) i += tag.size();
  }
  ctx.rank = static_cast<int>(rank);
  s = skipSpaces(s.substr(i));
  return true;
}

bool stripDmesg(std::string_view& s) {
  if (s.size() < 4 || s[0] != '[') return false;
  size_t i = 1;
  while (i < s.size() && isSpace(s[i])) ++i;
  const size_t digits_from = i;
  while (i < s.size() && isDigit(s[i])) ++i;
  if (i == digits_from || i >= s.size() || s[i] != '.') return false;
  ++i;
  while (i < s.size() && isDigit(s[i])) ++i;
  if (i >= s.size() || s[i] != ']') return false;
  s = skipSpaces(s.substr(i + 1));
  return true;
}

// Timestamps at the start, bare or in brackets.
bool stripIsoTime(std::string_view& s, LineContext& ctx) {
  const bool bracket = !s.empty() && s[0] == '[';
  double t = 0;
  size_t n = parseIsoTime(bracket ? s.substr(1) : s, t);
  if (n == 0) return false;
  size_t i = n + (bracket ? 1 : 0);
  if (bracket) {
    while (i < s.size() && s[i] != ']' && i < 40) ++i;
    if (i >= s.size() || s[i] != ']') return false;
    ++i;
  }
  ctx.has_time = true;
  ctx.time = t;
  s = afterSeparator(s.substr(i));
  // RFC 3339 syslog: "<time> host kernel: " or "<time> host proc[pid]: ".
  const size_t sp = s.find(' ');
  if (sp != std::string_view::npos && sp > 0 && sp < 64 &&
      s.substr(0, sp).find(':') == std::string_view::npos) {
    const std::string_view rest = s.substr(sp + 1);
    const size_t colon = rest.find(": ");
    const std::string_view tag =
        colon == std::string_view::npos ? std::string_view() : rest.substr(0, colon);
    if (tag == "kernel" ||
        (!tag.empty() && tag.back() == ']' && tag.find('[') != std::string_view::npos &&
         tag.find(' ') == std::string_view::npos)) {
      ctx.host = s.substr(0, sp);
      s = rest.substr(colon + 2);
    }
  }
  return true;
}

bool stripTimeFormats(std::string_view& s, LineContext& ctx);

}  // namespace

std::string_view ncclHeaderHost(std::string_view body) {
  // host:pid:tid [dev]
  const size_t c1 = body.find(':');
  if (c1 == 0 || c1 == std::string_view::npos || c1 > 128) return {};
  for (size_t k = 0; k < c1; ++k) {
    if (isSpace(body[k]) || body[k] == '[') return {};
  }
  long v;
  size_t n1 = readNumber(body, c1 + 1, 10, v);
  if (n1 == 0 || c1 + 1 + n1 >= body.size() || body[c1 + 1 + n1] != ':') return {};
  size_t n2 = readNumber(body, c1 + 2 + n1, 10, v);
  size_t i = c1 + 2 + n1 + n2;
  if (n2 == 0 || i + 2 >= body.size() || body[i] != ' ' || body[i + 1] != '[') return {};
  return body.substr(0, c1);
}

namespace {

bool isHostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

// UCX's log header: "[1618778295.702469] [host:pid:tid]" or "[host:pid :tid:tid]" (the pid is
// padded), as ucs_log and its signal handler print it.
std::string_view ucxHeaderHost(std::string_view body) {
  if (body.size() > 2 && body[0] == '[' && isDigit(body[1])) {  // "[sec.usec] " first
    size_t close = 1;
    while (close < body.size() && close < 32 && (isDigit(body[close]) || body[close] == '.'))
      ++close;
    if (close < body.size() && body[close] == ']') body = skipSpaces(body.substr(close + 1));
  }
  if (body.size() < 4 || body[0] != '[') return {};
  size_t i = 1;
  bool digits_only = true;  // "[10:00:05]" is a time, not a host
  while (i < body.size() && i < 129 && isHostChar(body[i])) digits_only &= isDigit(body[i++]);
  if (i == 1 || digits_only || i >= body.size() || body[i] != ':') return {};
  long v;
  const size_t n = readNumber(body, i + 1, 10, v);
  size_t j = i + 1 + n;
  while (j < body.size() && body[j] == ' ') ++j;
  if (n == 0 || j >= body.size() || body[j] != ':') return {};
  return body.substr(1, i - 1);
}

// nccl-tests' failure lines: "host: Test CUDA failure ..." and " .. host pid 411: Test failure".
std::string_view ncclTestsHost(std::string_view body) {
  if (body.substr(0, 3) == ".. ") {
    size_t i = 3;
    while (i < body.size() && i < 131 && isHostChar(body[i])) ++i;
    long pid;
    if (i == 3 || body.substr(i, 5) != " pid ") return {};
    const size_t n = readNumber(body, i + 5, 10, pid);
    return n > 0 && body.substr(i + 5 + n, 7) == ": Test " ? body.substr(3, i - 3)
                                                           : std::string_view{};
  }
  const size_t colon = body.substr(0, 140).find(": Test ");
  if (colon == 0 || colon == std::string_view::npos) return {};
  for (size_t k = 0; k < colon; ++k)
    if (!isHostChar(body[k])) return {};
  const std::string_view rest = body.substr(colon + 7);
  return rest.substr(0, 5) == "CUDA " || rest.substr(0, 5) == "NCCL " ? body.substr(0, colon)
                                                                      : std::string_view{};
}

bool stripSrunLabel(std::string_view& s, LineContext& ctx) {
  long rank;
  size_t n = readNumber(s, 0, 6, rank);
  if (n == 0 || n + 1 >= s.size() || s[n] != ':' || s[n + 1] != ' ') return false;
  ctx.rank = static_cast<int>(rank);
  s = skipSpaces(s.substr(n + 2));
  return true;
}

int firstNumberIn(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    long v;
    if (isDigit(s[i]) && readNumber(s, i, 7, v) > 0) return static_cast<int>(v);
  }
  return -1;
}

// "[rank3]:", "[Rank 3]", "[default3]:", "[trainer0|0]:".
bool stripBracketTag(std::string_view& s, LineContext& ctx) {
  if (s.size() < 3 || s[0] != '[') return false;
  const size_t close = s.find(']');
  if (close == std::string_view::npos || close > kMaxTagLength || close < 2) return false;
  const std::string_view name = s.substr(1, close - 1);
  bool has_alpha = false;
  for (char c : name) {
    if (std::isalpha(static_cast<unsigned char>(c))) has_alpha = true;
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '|' &&
        c != ' ' && c != '.') {
      return false;
    }
  }
  const bool colon = close + 1 < s.size() && s[close + 1] == ':';
  const bool ranky =
      name.size() > 4 &&
      (name.substr(0, 4) == "rank" || name.substr(0, 4) == "Rank" || name.substr(0, 4) == "RANK");
  if (!has_alpha || (!colon && !ranky)) return false;
  const int rank = firstNumberIn(name);
  if (rank >= 0) ctx.rank = rank;
  s = skipSpaces(s.substr(close + (colon ? 2 : 1)));
  return true;
}

// "rank_3.log:" or "logs/node1/rank3.txt:" as written by grep over several files.
bool stripFileNamePrefix(std::string_view& s, LineContext& ctx) {
  size_t i = 0;
  while (i < s.size() && i < 256 && !isSpace(s[i]) && s[i] != ':') ++i;
  if (i == 0 || i >= s.size() || s[i] != ':') return false;
  const std::string_view name = s.substr(0, i);
  bool ok = false;
  for (std::string_view ext : {".log", ".txt", ".out", ".err"}) {
    const size_t at = name.rfind(ext);
    if (at != std::string_view::npos && at + ext.size() == name.size()) ok = true;
  }
  if (!ok) return false;
  for (std::string_view key : {"rank", "Rank", "RANK"}) {
    const size_t at = name.find(key);
    if (at != std::string_view::npos) ctx.rank = firstNumberIn(name.substr(at));
  }
  s = skipSpaces(s.substr(i + 1));
  return true;
}

// "Mmm dd HH:MM:SS host proc[pid]: " (syslog); keeps the host.
bool stripSyslog(std::string_view& s, LineContext& ctx) {
  static constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
  if (s.size() < 16 || kMonths.find(s.substr(0, 3)) % 3 != 0 || s[3] != ' ') return false;
  size_t i = 4;
  while (i < s.size() && isSpace(s[i])) ++i;
  long v;
  size_t n = readNumber(s, i, 2, v);
  if (n == 0 || i + n + 9 > s.size() || s[i + n] != ' ' || s[i + n + 3] != ':') return false;
  i += n + 9;
  const size_t host_end = s.find(' ', i + 1);
  if (host_end == std::string_view::npos) return false;
  ctx.host = s.substr(i + 1, host_end - i - 1);
  const size_t tag_end = s.find(": ", host_end + 1);
  if (tag_end != std::string_view::npos && tag_end - host_end < 40) {
    s = skipSpaces(s.substr(tag_end + 2));
  } else {
    s = skipSpaces(s.substr(host_end + 1));
  }
  return true;
}

// glog: "I0504 19:55:27.123456  1234 file.cc:12] ".
bool stripGlog(std::string_view& s) {
  if (s.size() < 20 || std::string_view("IWEF").find(s[0]) == std::string_view::npos) return false;
  long v;
  if (!fixedNumber(s, 1, 4, v) || s[5] != ' ' || s[8] != ':') return false;
  const size_t close = s.find("] ");
  if (close == std::string_view::npos || close > 80) return false;
  s = skipSpaces(s.substr(close + 2));
  return true;
}

bool stripTimeFormats(std::string_view& s, LineContext& ctx) {
  return stripIsoTime(s, ctx) || stripDmesg(s) || stripSyslog(s, ctx) || stripGlog(s);
}

}  // namespace

LineContext parseLinePrefix(std::string_view raw) {
  LineContext ctx;
  std::string_view s = raw;
  for (int k = 0; k < kMaxPrefixes; ++k) {
    std::string_view t = skipSpaces(s);
    if (t.empty()) break;
    if (stripMpiTag(t, ctx) || stripTimeFormats(t, ctx) || stripSrunLabel(t, ctx) ||
        stripBracketTag(t, ctx) || stripFileNamePrefix(t, ctx)) {
      s = t;
      continue;
    }
    break;
  }
  ctx.body = s;
  const std::string_view body = skipSpaces(s);
  if (ctx.host.empty()) ctx.host = ncclHeaderHost(body);
  if (ctx.host.empty() && !body.empty() && (body[0] == '[' || body[0] == '.'))
    ctx.host = ucxHeaderHost(body);
  if (ctx.host.empty()) ctx.host = ncclTestsHost(body);
  return ctx;
}

}  // namespace ccscope::diagnostics
