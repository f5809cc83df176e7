#include "diagnostics/analyze/version_tracker.h"

#include <fmt/format.h>

#include <cctype>

namespace ccscope::diagnostics {
namespace {

constexpr size_t kMaxVersions = 16;
constexpr size_t kMaxPluginHosts = 4096;
constexpr size_t kMaxPluginCulprits = 8;

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

const FindingSpec& netPluginMismatchSpec() {
  static const FindingSpec spec{
      "library.nccl-net-plugin-differs",
      core::Layer::kLibrary,
      reports::FindingKind::kRoot,
      62,
      "hosts of one job load different NCCL network plugins: some use NCCL's internal one",
      "Make every node load the same plugin: the same image, NCCL_NET_PLUGIN and "
      "LD_LIBRARY_PATH (the plugin's directory) on every node; NCCL_DEBUG=INFO prints each "
      "node's NET/Plugin line."};
  return spec;
}

void NetPluginTracker::parseLine(std::string_view body, const std::string& host,
                                 const reports::Evidence& where) {
  if (host.empty()) return;  // a line that names no host cannot be compared
  // Only the final fallback: NCCL also reports each plugin name it tried ("No plugin found
  // (X)") before it loads another.
  const bool internal = body.find("Using internal net") != std::string_view::npos ||
                        body.find("using internal implementation") != std::string_view::npos;
  // "Plugin Path" is printed by the nccl-rdma-sharp plugins themselves, for net and collnet.
  const bool loaded =
      !internal && (body.find("Loaded net plugin") != std::string_view::npos ||
                    body.find("Plugin name set by env to") != std::string_view::npos ||
                    (body.find("Plugin Path :") != std::string_view::npos &&
                     body.find("nccl-net") != std::string_view::npos));
  auto& into = internal ? internal_ : loaded_;
  if ((internal || loaded) && (into.size() < kMaxPluginHosts || into.count(host)))
    into.try_emplace(host, where);
}

std::vector<Event> NetPluginTracker::conclude() const {
  std::vector<Event> out;
  if (loaded_.empty() || internal_.empty()) return out;
  const reports::Evidence& loaded = loaded_.begin()->second;
  size_t only_internal = 0;
  for (const auto& [host, where] : internal_) only_internal += loaded_.count(host) ? 0 : 1;
  for (const auto& [host, where] : internal_) {
    if (loaded_.count(host)) continue;  // one host that says both: two processes differ there
    if (out.size() >= kMaxPluginCulprits) break;
    Event e;
    e.spec = &netPluginMismatchSpec();
    e.verdict = fmt::format("{} ({} of {} host(s) fell back to it; {} loaded one)", e.spec->verdict,
                            only_internal, only_internal + loaded_.size(), loaded_.begin()->first);
    e.host = host;
    e.evidence = {where, loaded};
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace ccscope::diagnostics
