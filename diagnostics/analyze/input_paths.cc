#include "diagnostics/analyze/input_paths.h"

#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

namespace ccscope::diagnostics {
namespace {

namespace fs = std::filesystem;

core::Status badInput(const std::string& what) {
  return core::Status(core::Code::kInvalidArgument, what);
}

core::Status addDirectory(const std::string& dir, std::vector<std::string>& out) {
  std::error_code ec;
  std::vector<std::string> found;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) return badInput("cannot read directory '" + dir + "': " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return badInput("cannot read directory '" + dir + "': " + ec.message());
    std::error_code fec;
    if (it->is_regular_file(fec)) found.push_back(it->path().string());
  }
  std::sort(found.begin(), found.end());
  out.insert(out.end(), found.begin(), found.end());
  return core::Status::ok();
}

core::Status addPath(const std::string& path, std::vector<std::string>& out) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return badInput("no such file or directory: '" + path + "'");
  if (fs::is_directory(st)) return addDirectory(path, out);
  if (::access(path.c_str(), R_OK) != 0) return badInput("cannot read '" + path + "'");
  out.push_back(path);
  return core::Status::ok();
}

bool hasGlobChars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

core::Status addGlob(const std::string& pattern, std::vector<std::string>& out) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  if (rc != 0) {
    globfree(&g);
    return badInput("no input matches '" + pattern + "'");
  }
  std::vector<std::string> matches(g.gl_pathv, g.gl_pathv + g.gl_pathc);
  globfree(&g);
  for (const auto& m : matches) CCSCOPE_RETURN_IF_ERROR(addPath(m, out));
  return core::Status::ok();
}

// How many digits (at most 7) start at `i`.
size_t digitsAt(const std::string& s, size_t i) {
  size_t j = i;
  while (j < s.size() && j - i < 7 && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  return j - i;
}
}  // namespace

core::Result<std::vector<std::string>> expandInputs(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const auto& arg : args) {
    if (arg == "-") {
      out.push_back(arg);
      continue;
    }
    std::error_code ec;
    if (hasGlobChars(arg) && !fs::exists(arg, ec)) {
      CCSCOPE_RETURN_IF_ERROR(addGlob(arg, out));
    } else {
      CCSCOPE_RETURN_IF_ERROR(addPath(arg, out));
    }
  }
  if (out.empty()) return badInput("no input files");
  return out;
}

int rankFromFileName(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* key : {"rank", "worker", "trainer", "proc"}) {
    const size_t at = name.find(key);
    if (at == std::string::npos) continue;
    size_t i = at + std::char_traits<char>::length(key);
    while (i < name.size() && (name[i] == '_' || name[i] == '-' || name[i] == '.')) ++i;
    if (size_t n = digitsAt(name, i)) return std::stoi(name.substr(i, n));
  }
  // ccscope's own per-rank files: ccscope-nccl-r3-4121.log, ccscope-flight-r3-....
  const size_t at = name.starts_with("ccscope-") ? name.find("-r") : std::string::npos;
  if (at == std::string::npos) return -1;
  const size_t n = digitsAt(name, at + 2);
  return n > 0 && name.substr(at + 2 + n, 1) == "-" ? std::stoi(name.substr(at + 2, n)) : -1;
}

}  // namespace ccscope::diagnostics
