#include "diagnostics/analyze/world_tracker.h"

#include <fmt/format.h>

#include <cctype>
#include <regex>
#include <string>

namespace ccscope::diagnostics {
namespace {

constexpr size_t kMaxEvidence = 4;

bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

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

// How many processes a launcher command line asks for; 0 when the line is not one.
int launchedCount(std::string_view body) {
  static const std::regex re(
      R"((?:^|[\s$#>/])(?:mpirun|mpiexec(?:\.hydra)?|orterun|prterun|srun|aprun)\s(?:[^\n]*?\s)?(?:-np|--np|-n|--ntasks)[ =](\d{1,7})\b)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(body.begin(), body.end(), m, re)) return 0;
  return std::stoi(m[1].str());
}

}  // namespace

const FindingSpec& singletonWorldsSpec() {
  static const FindingSpec spec{
      "library.mpi-singleton-worlds",
      core::Layer::kLibrary,
      reports::FindingKind::kRoot,
      70,
      "every process started as rank 0 of a world of one: the program and the launcher come "
      "from different MPI installations",
      "Build and launch with the same MPI: compare `which mpirun` with the MPI the program "
      "links (`ldd ./program | grep -i mpi`), remove or unload the other MPI from PATH and "
      "LD_LIBRARY_PATH, and rebuild."};
  return spec;
}

void WorldTracker::parseLine(std::string_view body, const reports::Evidence& where) {
  if (saysSingleton(body)) {
    ++singletons_;
    if (evidence_.size() < kMaxEvidence) evidence_.push_back(where);
    return;
  }
  const int n = launchedCount(body);
  if (n <= 0) return;
  launched_one_ = launched_one_ || n == 1;
  if (n > most_launched_) most_launched_ = n;
  if (n >= 2 && !launch_kept_ && evidence_.size() < kMaxEvidence) {
    evidence_.push_back(where);
    launch_kept_ = true;
  }
}

std::vector<Event> WorldTracker::conclude() const {
  // Several singletons and no launcher asked for one process, or any singleton where the
  // only launches asked for several.
  const bool several = singletons_ >= 2 && !launched_one_;
  const bool under_launcher = singletons_ >= 1 && most_launched_ >= 2 && !launched_one_;
  if (!several && !under_launcher) return {};
  Event e;
  e.spec = &singletonWorldsSpec();
  e.verdict =
      most_launched_ >= 2
          ? fmt::format("{} (the launcher asked for {} processes; {} line(s) say rank 0 of 1)",
                        e.spec->verdict, most_launched_, singletons_)
          : fmt::format("{} ({} processes say rank 0 of 1)", e.spec->verdict, singletons_);
  e.evidence = evidence_;
  return {e};
}

}  // namespace ccscope::diagnostics
