#include "diagnostics/analyze/nccl_debug_log.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "diagnostics/analyze/analyzer.h"

namespace ccscope::diagnostics {

std::string expandNcclDebugFile(const std::string& pattern, const std::string& host, long pid) {
  const std::string short_host = host.substr(0, host.find('.'));
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char c = pattern[++i];
    if (c == 'h')
      out += short_host;
    else if (c == 'p')
      out += std::to_string(pid);
    else if (c == '%')
      out += '%';
    else
      out += {'%', c};
  }
  return out;
}

namespace {
bool operatorsFile() {
  const char* set = std::getenv("NCCL_DEBUG_FILE");
  return set && *set;
}

// Something written into it at or after `not_before`.
bool written(const std::string& path, std::time_t not_before) {
  struct stat st {};
  return !path.empty() && stat(path.c_str(), &st) == 0 && st.st_size > 0 &&
         st.st_mtime >= not_before;
}

std::optional<reports::Diagnosis> conclusiveOn(const std::vector<std::string>& files) {
  auto result = analyzeInputs(files, {});
  if (!result || !result->diagnosis.conclusive) return std::nullopt;
  return std::move(result->diagnosis);
}
}  // namespace

std::string ncclDebugPath(int rank, long pid, const std::string& host) {
  if (operatorsFile()) return expandNcclDebugFile(std::getenv("NCCL_DEBUG_FILE"), host, pid);
  const char* dir = std::getenv("CCSCOPE_DUMP_DIR");
  return fmt::format("{}/ccscope-nccl-r{}-{}.log", dir && *dir ? dir : "/tmp", rank, pid);
}

NcclDebugRoute routeNcclDebugOutput(int rank) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const long pid = static_cast<long>(getpid());
  std::string path = ncclDebugPath(rank, pid, host);
  // Only where unset: an operator's NCCL_DEBUG=TRACE or own file pattern stays as it is.
  if (operatorsFile()) {
    setenv("NCCL_DEBUG", "INFO", 0);
    return {path, false};
  }
  if (!std::ofstream(path)) return {};  // NCCL would print to stdout, into the table
  setenv("NCCL_DEBUG", "INFO", 0);
  setenv("NCCL_DEBUG_FILE", path.c_str(), 1);
  return {path, true};
}

std::optional<reports::Diagnosis> diagnoseNcclLog(const std::string& path) {
  if (!written(path, 0)) return std::nullopt;
  return conclusiveOn({path});
}

std::optional<reports::Diagnosis> diagnoseNcclLogs(const std::vector<std::string>& paths,
                                                   std::time_t not_before, size_t* read) {
  std::vector<std::string> files;
  for (const std::string& p : paths)
    if (written(p, not_before) && std::find(files.begin(), files.end(), p) == files.end())
      files.push_back(p);
  if (read) *read = files.size();
  if (files.size() < 2) return std::nullopt;
  return conclusiveOn(files);
}

}  // namespace ccscope::diagnostics
