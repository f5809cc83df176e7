#include "diagnostics/hang/kernel_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <regex>

namespace ccscope::diagnostics {
namespace {

// Seconds since boot in a dmesg line's "[ 8812.101234]" prefix; -1 without one.
double dmesgTime(const std::string& line) {
  const size_t open = line.find('[');
  if (open == std::string::npos || open > 40) return -1;
  char* end = nullptr;
  const double t = std::strtod(line.c_str() + open + 1, &end);
  return end && *end == ']' ? t : -1;
}

void keep(std::deque<std::string>& out, std::string line, size_t max_lines) {
  out.push_back(std::move(line));
  if (out.size() > max_lines) out.pop_front();
}

}  // namespace

bool relevantKernelLine(const std::string& m) {
  static const char* const kWords[] = {"NVRM:",
                                       "Xid",
                                       "SXid",
                                       "nvidia",
                                       "NVLink",
                                       "nvlink",
                                       "mlx5",
                                       "infiniband",
                                       "ib_core",
                                       "Out of memory",
                                       "oom-kill",
                                       "Killed process",
                                       "blocked for more than",
                                       "hung_task",
                                       "AER:",
                                       "DMAR",
                                       "IOMMU",
                                       "EDAC"};
  for (const char* w : kWords)
    if (m.find(w) != std::string::npos) return true;
  return false;
}

bool parseXidLine(const std::string& line, XidLine& out) {
  static const std::regex re(
      R"(Xid \(([^)]*)\): (\d+)(?:, pid=('?<?[\w ]*>?'?|\d+))?(?:, name=([^,]*))?,? ?(.*))");
  std::smatch m;
  if (!std::regex_search(line, m, re)) return false;
  out = {};
  out.device = m[1];
  out.code = std::atoi(m[2].str().c_str());
  const std::string pid = m[3];
  out.pid = !pid.empty() && std::isdigit(static_cast<unsigned char>(pid[0]))
                ? std::atoi(pid.c_str())
                : -1;
  out.process = m[4];
  out.text = m[5];
  return true;
}

KernelLog readKernelLog(const std::string& source, double since_s, size_t max_lines) {
  KernelLog log;
  std::deque<std::string> kept;
  if (source.empty() || source == "/dev/kmsg") {
    const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      log.error = fmt::format("/dev/kmsg: {}{}", std::strerror(errno),
                              errno == EPERM || errno == EACCES
                                  ? " (needs root, or sysctl kernel.dmesg_restrict=0)"
                                  : "");
      return log;
    }
    // One record per read: "prio,seq,usec,flags;message", then continuation lines.
    std::string rec(8192, '\0');
    for (int records = 0; records < 1000000; ++records) {
      const ssize_t n = ::read(fd, rec.data(), rec.size());
      if (n < 0) {
        if (errno == EPIPE) continue;  // overwritten while read: go on with the next
        if (errno != EAGAIN) log.error = fmt::format("/dev/kmsg: {}", std::strerror(errno));
        break;
      }
      if (n == 0) break;
      const std::string r(rec.data(), static_cast<size_t>(n));
      const size_t semi = r.find(';');
      if (semi == std::string::npos) continue;
      const std::string head = r.substr(0, semi);
      std::string msg = r.substr(semi + 1);
      msg = msg.substr(0, msg.find('\n'));
      size_t c1 = head.find(','), c2 = c1 == std::string::npos ? c1 : head.find(',', c1 + 1);
      const double t =
          c2 == std::string::npos ? 0 : std::strtod(head.c_str() + c2 + 1, nullptr) / 1e6;
      if (t < since_s || !relevantKernelLine(msg)) continue;
      keep(kept, fmt::format("[{:12.6f}] {}", t, msg), max_lines);
    }
    ::close(fd);
  } else {
    std::ifstream in(source);
    if (!in) {
      log.error = fmt::format("{}: {}", source, std::strerror(errno));
      return log;
    }
    std::string line;
    while (std::getline(in, line)) {
      if (!relevantKernelLine(line)) continue;
      const double t = dmesgTime(line);
      if (since_s > 0 && t >= 0 && t < since_s) continue;
      keep(kept, line, max_lines);
    }
  }
  log.lines.assign(kept.begin(), kept.end());
  return log;
}

}  // namespace ccscope::diagnostics
