#include "diagnostics/analyze/world_tracker.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace ccscope::diagnostics {
namespace {

constexpr size_t kMaxEvidence = 4;
constexpr size_t kMaxTokens = 64;  // options looked at after the launcher's name

bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool isSpace(char c) { return c == ' ' || c == '\t'; }

// "process 0 of 1", "rank 0 out of 1 processors": the word before names a process, and the 1 is
// the whole number (not "of 16", not "of 1.5").
bool saysSingleton(std::string_view body) {
  for (std::string_view gap : {" 0 of 1", " 0 out of 1"}) {
    for (size_t at = body.find(gap); at != std::string_view::npos; at = body.find(gap, at + 1)) {
      const size_t end = at + gap.size();
      if (end < body.size() && (isWordChar(body[end]) || body[end] == '.')) continue;
      size_t w = at;
      while (w > 0 && isWordChar(body[w - 1])) --w;
      std::string word(body.substr(w, at - w));
      for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (word == "rank" || word == "process" || word == "processor" || word == "proc") return true;
    }
  }
  return false;
}

int leadingNumber(std::string_view s) {
  int n = 0;
  size_t i = 0;
  for (; i < s.size() && i < 7 && std::isdigit(static_cast<unsigned char>(s[i])); ++i)
    n = n * 10 + (s[i] - '0');
  return i > 0 && i == s.size() ? n : 0;
}

// The launcher's name as a whole token (a path or a prompt may precede it).
size_t findLauncher(std::string_view body) {
  static constexpr std::array<std::string_view, 6> kNames = {"mpirun",  "mpiexec", "orterun",
                                                             "prterun", "srun",    "aprun"};
  for (std::string_view name : kNames) {
    for (size_t at = body.find(name); at != std::string_view::npos; at = body.find(name, at + 1)) {
      const size_t end = at + name.size();
      const bool starts = at == 0 || !isWordChar(body[at - 1]);
      const bool ends = end < body.size() && (isSpace(body[end]) || body[end] == '.');
      if (starts && ends) return end;
    }
  }
  return std::string_view::npos;
}

}  // namespace

int launchedProcesses(std::string_view body) {
  size_t i = findLauncher(body);
  if (i == std::string_view::npos) return 0;
  // The first -np/-n/--ntasks after the launcher: a program's own options come later.
  bool value_next = false;
  for (size_t tokens = 0; i < body.size() && tokens < kMaxTokens; ++tokens) {
    while (i < body.size() && isSpace(body[i])) ++i;
    size_t j = i;
    while (j < body.size() && !isSpace(body[j])) ++j;
    std::string_view tok = body.substr(i, j - i);
    i = j;
    if (tok.empty()) break;
    if (value_next) return leadingNumber(tok);
    for (std::string_view opt : {"--ntasks", "--np", "-np", "-n"}) {
      if (tok.substr(0, opt.size()) != opt) continue;
      std::string_view rest = tok.substr(opt.size());
      if (rest.empty())
        value_next = true;
      else if (rest.front() == '=')
        return leadingNumber(rest.substr(1));
      else if (const int n = leadingNumber(rest); opt == "-n" && n > 0)
        return n;  // srun -n8
      break;
    }
  }
  return 0;
}

const FindingSpec& singletonWorldsSpec() {
  static const FindingSpec spec{
      "library.mpi-singleton-worlds",
      core::Layer::kLibrary,
      reports::FindingKind::kRoot,
      70,
      "processes started by a launcher of several each came up as rank 0 of a world of one: the "
      "program and the launcher come from different MPI installations",
      "Build and launch with the same MPI: compare `which mpirun` with the MPI the program "
      "links (`ldd ./program | grep -i mpi`), remove or unload the other MPI from PATH and "
      "LD_LIBRARY_PATH, and rebuild."};
  return spec;
}

void WorldTracker::parseLaunch(std::string_view body, const reports::Evidence& where) {
  const int n = launchedProcesses(body);
  if (n <= 0) return;
  launch_file_ = where.file;
  launched_ = n;
  launch_ = where;
}

void WorldTracker::parseSingleton(std::string_view body, const reports::Evidence& where) {
  if (launched_ < 2 || where.file != launch_file_ || !saysSingleton(body)) return;
  if (singletons_++ == 0) evidence_.push_back(launch_);
  most_launched_ = std::max(most_launched_, launched_);
  if (evidence_.size() < kMaxEvidence) evidence_.push_back(where);
}

std::vector<Event> WorldTracker::conclude() const {
  if (singletons_ == 0) return {};
  Event e;
  e.spec = &singletonWorldsSpec();
  e.verdict = fmt::format("{} (the launcher asked for {} processes; {} line(s) say rank 0 of 1)",
                          e.spec->verdict, most_launched_, singletons_);
  e.evidence = evidence_;
  return {e};
}

}  // namespace ccscope::diagnostics
