#include "diagnostics/analyze/version_tracker.h"

#include <fmt/format.h>

#include <cctype>

namespace ccscope::diagnostics {
namespace {

constexpr size_t kMaxVersions = 16;

}  // namespace

const FindingSpec& versionMismatchSpec() {
  static const FindingSpec spec{
      "library.nccl-version-mismatch",
      core::Layer::kLibrary,
      reports::FindingKind::kRoot,
      60,
      "ranks of one job run different NCCL versions",
      "Install one NCCL version on every node (the container image, LD_LIBRARY_PATH, a plugin "
      "that brings its own libnccl); NCCL_DEBUG=INFO prints the version each rank loaded."};
  return spec;
}

void VersionTracker::parseLine(std::string_view body, const std::string& host,
                               const reports::Evidence& where) {
  const size_t at = body.find("NCCL version ");
  if (at == std::string_view::npos) return;
  size_t i = at + 13, j = i;
  // "2.21.5": digits and dots only; a "+cuda12.4" build suffix is the same NCCL.
  while (j < body.size() && j - i < 16 &&
         (std::isdigit(static_cast<unsigned char>(body[j])) || body[j] == '.'))
    ++j;
  while (j > i && body[j - 1] == '.') --j;
  if (j == i || body.substr(i, j - i).find('.') == std::string_view::npos) return;
  std::string v(body.substr(i, j - i));
  if (versions_.size() >= kMaxVersions && !versions_.count(v)) return;
  versions_.try_emplace(std::move(v), Seen{host, where});
}

std::vector<Event> VersionTracker::conclude() const {
  if (versions_.size() < 2) return {};
  Event e;
  e.spec = &versionMismatchSpec();
  std::string list;
  for (const auto& [v, seen] : versions_) {
    list += fmt::format("{}{}{}", list.empty() ? "" : ", ", v,
                        seen.host.empty() ? "" : " (" + seen.host + ")");
  }
  e.verdict = "ranks of one job run different NCCL versions: " + list;
  // One event per version, each naming where it was seen: which side is wrong is the
  // operator's call, so every host is a culprit.
  std::vector<Event> out;
  for (const auto& [v, seen] : versions_) {
    Event one = e;
    one.host = seen.host;
    one.evidence.push_back(seen.evidence);
    out.push_back(std::move(one));
  }
  return out;
}

}  // namespace ccscope::diagnostics
