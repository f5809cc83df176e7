#include "diagnostics/live/library_init.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#ifdef CCSCOPE_HAVE_ANALYZE
#include "diagnostics/analyze/analyzer.h"
#include "diagnostics/analyze/reasoner.h"
#endif

namespace ccscope::diagnostics {

using core::Layer;
using nlohmann::json;

namespace {

constexpr size_t kMaxEvidence = 4;
constexpr int kExitNotCompiled = 5;

const char* displayName(const std::string& library) {
  return library == "ucx" ? "UCX" : library == "nccl" ? "NCCL" : "MPI";
}

// The helper's own lines: "ccscope-init: <key> <rest>".
std::string initLine(const ChildRun& run, const std::string& key) {
  const std::string prefix = std::string(kInitLinePrefix) + " " + key;
  for (const auto& l : run.lines)
    if (l.rfind(prefix, 0) == 0) {
      size_t start = l.find_first_not_of(": ", prefix.size());  // "error: x" and "version x"
      return start == std::string::npos ? "" : l.substr(start);
    }
  return {};
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(' ', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// The last lines of the log that are not the helper's own: what the library said before dying.
std::vector<std::string> tail(const ChildRun& run, size_t n) {
  std::vector<std::string> out;
  for (auto it = run.lines.rbegin(); it != run.lines.rend() && out.size() < n; ++it)
    if (!it->empty() && it->rfind(kInitLinePrefix, 0) != 0) out.insert(out.begin(), *it);
  return out;
}

bool isLibraryRoot(const reports::Finding& f) {
#ifdef CCSCOPE_HAVE_ANALYZE
  if (f.score < kMinRootScore) return false;  // weak "roots" are only listed by the analyzer too
#endif
  return f.kind == reports::FindingKind::kRoot && f.layer == Layer::kLibrary;
}

const reports::Finding* libraryRoot(const reports::Diagnosis* d) {
  if (!d) return nullptr;
  for (const auto& f : d->findings)
    if (isLibraryRoot(f)) return &f;
  return nullptr;
}

InitCheck runOne(const LibraryInitContext& ctx, const std::string& library,
                 const std::string& arg) {
  ChildSpec spec;
  spec.argv = ctx.child_command;
  spec.argv.push_back(arg);
  spec.timeout_s = ctx.timeout_s;
  if (library == "ucx") {
    spec.set_env = {{"UCX_LOG_LEVEL", "info"}};
    spec.unset_env = {"UCX_LOG_FILE"};  // the log must reach the pipe
  } else {
    spec.set_env = {{"NCCL_DEBUG", "INFO"}};
    spec.unset_env = {"NCCL_DEBUG_FILE"};
  }
  ChildRun run = runChild(spec);
  auto analysis = analyzeLog(run.lines, library + "-init");
  return judgeInitRun(library, run, analysis ? &*analysis : nullptr);
}

void addUnique(std::vector<std::string>& v, const std::string& s) {
  if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// UCX resources "tcp/eth0", "posix/memory" summed up as "tcp (eth0, lo)", "posix".
using TransportDevices = std::vector<std::pair<std::string, std::vector<std::string>>>;
void addResource(TransportDevices& tls, const std::string& resource) {
  size_t slash = resource.find('/');
  std::string tl = resource.substr(0, slash);
  std::string dev = slash == std::string::npos ? "" : resource.substr(slash + 1);
  if (dev.rfind("memory", 0) == 0) dev.clear();
  auto it = std::find_if(tls.begin(), tls.end(), [&](auto& p) { return p.first == tl; });
  if (it == tls.end()) it = tls.insert(tls.end(), {tl, {}});
  if (!dev.empty() && std::find(it->second.begin(), it->second.end(), dev) == it->second.end())
    it->second.push_back(dev);
}

ProbeResult judgeOneLibrary(const std::string& lib, const std::vector<json>& per_rank,
                            const std::vector<std::string>& hosts) {
  ProbeResult r{Layer::kLibrary, lib + " init", ProbeOutcome::kSkip, "", {}, {}, {}};
  std::vector<std::string> versions, skipped, same;
  TransportDevices tls;
  int passed = 0;
  for (size_t k = 0; k < per_rank.size(); ++k) {
    InitCheck c =
        initCheckFromJson(per_rank[k].is_object() ? per_rank[k].value(lib, json()) : json());
    std::string who = rankLabel(static_cast<int>(k), hosts);
    if (c.outcome == ProbeOutcome::kFail) {
      r.culprit.ranks.push_back(static_cast<int>(k));
      if (k < hosts.size()) r.culprit.hosts.push_back(hosts[k]);
      if (r.outcome != ProbeOutcome::kFail) {  // the first failing rank speaks for the others
        r.outcome = ProbeOutcome::kFail;
        r.detail = c.detail;
        r.next_step = c.next_step;
        for (const auto& e : c.evidence) r.evidence.push_back(fmt::format("{}: {}", who, e));
      } else if (c.detail == r.detail) {
        same.push_back(std::to_string(k));
      } else {
        r.evidence.push_back(fmt::format("{}: {}", who, c.detail));
      }
    } else if (c.outcome == ProbeOutcome::kPass) {
      ++passed;
      addUnique(versions, c.version);
      for (const auto& t : c.transports) addResource(tls, t);
    } else {
      skipped.push_back(std::to_string(k));
      if (r.detail.empty()) r.detail = c.detail;
    }
  }
  if (!same.empty())
    r.evidence.push_back(fmt::format("the same on ranks {}", fmt::join(same, ", ")));
  if (r.outcome == ProbeOutcome::kFail || passed == 0) {
    if (r.detail.empty()) r.detail = "skipped";
    return r;
  }
  r.outcome = ProbeOutcome::kPass;
  std::string name = displayName(lib);
  r.detail = lib == "mpi" ? "MPI initialised"
                          : fmt::format("{} {} initialised", name, fmt::join(versions, ", "));
  r.detail += skipped.empty() ? " on every rank"
                              : fmt::format(" (skipped on ranks {})", fmt::join(skipped, ", "));
  if (lib == "mpi" && !versions.empty())
    r.detail += fmt::format(" ({})", fmt::join(versions, ", "));
  std::vector<std::string> summary;
  for (const auto& [tl, devs] : tls)
    summary.push_back(devs.empty() ? tl : fmt::format("{} ({})", tl, fmt::join(devs, ", ")));
  if (!summary.empty()) r.detail += fmt::format("; transports: {}", fmt::join(summary, ", "));
  return r;
}

}  // namespace

std::vector<ProbeResult> judgeLibraryInit(const std::vector<json>& per_rank,
                                          const std::vector<std::string>& hosts) {
  return {judgeOneLibrary("ucx", per_rank, hosts), judgeOneLibrary("nccl", per_rank, hosts),
          judgeOneLibrary("mpi", per_rank, hosts)};
}

json toJson(const InitCheck& c) {
  return {
      {"outcome", outcomeName(c.outcome)}, {"detail", c.detail},   {"evidence", c.evidence},
      {"next_step", c.next_step},          {"version", c.version}, {"transports", c.transports}};
}

InitCheck initCheckFromJson(const json& j) {
  InitCheck c;
  if (!j.is_object()) return c;
  std::string o = j.value("outcome", std::string("SKIP"));
  c.outcome = o == "PASS"   ? ProbeOutcome::kPass
              : o == "FAIL" ? ProbeOutcome::kFail
                            : ProbeOutcome::kSkip;
  c.detail = j.value("detail", std::string());
  c.evidence = j.value("evidence", std::vector<std::string>());
  c.next_step = j.value("next_step", std::string());
  c.version = j.value("version", std::string());
  c.transports = j.value("transports", std::vector<std::string>());
  return c;
}

InitCheck judgeInitRun(const std::string& library, const ChildRun& run,
                       const reports::Diagnosis* analysis) {
  InitCheck c;
  const char* name = displayName(library);
  c.version = initLine(run, "version");
  c.transports = words(initLine(run, "transports"));
  if (!run.started) {  // our helper, not the library: nothing to say about the library
    c.detail = fmt::format("skipped: could not start the {} helper: {}", name, run.start_error);
    return c;
  }
  if (run.exit_code == kExitNotCompiled && !initLine(run, "skip").empty()) {
    c.detail = "skipped: " + initLine(run, "skip");
    return c;
  }
  if (const reports::Finding* f = libraryRoot(analysis)) {
    c.outcome = ProbeOutcome::kFail;
    c.detail = f->verdict;
    c.next_step = f->next_step;
    for (const auto& g : analysis->findings)  // the top one first, then the other root lines
      if (&g == f || isLibraryRoot(g))
        for (const auto& e : g.evidence)
          if (c.evidence.size() < kMaxEvidence &&
              std::find(c.evidence.begin(), c.evidence.end(), e.text) == c.evidence.end())
            c.evidence.push_back(e.text);
    if (!run.ok())
      c.evidence.push_back(fmt::format("{} initialisation helper: {}", name, run.describe()));
    return c;
  }
  if (!run.ok()) {
    c.outcome = ProbeOutcome::kFail;
    std::string err = initLine(run, "error");
    c.detail = run.timed_out ? fmt::format("{} initialisation {}", name, run.describe())
                             : fmt::format("{} initialisation failed: {}", name,
                                           err.empty() ? run.describe() : err);
    c.evidence = tail(run, kMaxEvidence);
    c.next_step = fmt::format("Rerun with {} and read the last lines before the failure.",
                              library == "ucx" ? "UCX_LOG_LEVEL=debug" : "NCCL_DEBUG=INFO");
    return c;
  }
  c.outcome = ProbeOutcome::kPass;
  c.detail =
      fmt::format("{} {} initialised", name, c.version.empty() ? "(version unknown)" : c.version);
  if (!analysis) c.detail += " (log not analysed: built without the rule set)";
  return c;
}

InitCheck judgeMpi(MpiState state, const std::string& version) {
  InitCheck c;
  switch (state) {
    case MpiState::kNotLaunched:
      c.detail = "skipped: not launched by mpirun";
      break;
    case MpiState::kNotCompiled:
      c.detail = "skipped: launched by mpirun, but ccscope was built without MPI";
      break;
    case MpiState::kUp:
      c.outcome = ProbeOutcome::kPass;
      c.detail = "MPI initialised";
      c.version = version;
      break;
    case MpiState::kDown:
      c.outcome = ProbeOutcome::kFail;
      c.detail = "launched by mpirun, but MPI is not initialised";
      c.next_step =
          "Check that mpirun and the MPI library ccscope links are the same installation.";
      break;
  }
  return c;
}

std::optional<reports::Diagnosis> analyzeLog(const std::vector<std::string>& lines,
                                             const std::string& name) {
#ifdef CCSCOPE_HAVE_ANALYZE
  auto a = Analyzer::create({});
  if (!a) return std::nullopt;
  (*a)->beginFile(name);
  for (size_t i = 0; i < lines.size(); ++i) (*a)->feedLine(lines[i], static_cast<long>(i + 1));
  (*a)->endFile();
  return (*a)->finish();
#else
  (void)lines;
  (void)name;
  return std::nullopt;
#endif
}

json runLibraryInit(const LibraryInitContext& ctx) {
  json j;
  j["ucx"] = toJson(runOne(ctx, "ucx", "ucx"));
  InitCheck nccl;
  nccl.detail = "skipped: no GPU";
  j["nccl"] =
      toJson(ctx.gpu_usable ? runOne(ctx, "nccl", fmt::format("nccl:{}", ctx.local_rank)) : nccl);
  j["mpi"] = toJson(judgeMpi(ctx.mpi, ctx.mpi_version));
  return j;
}

int runLibraryInitChild(const std::string& what) {
  if (what == "ucx") {
#ifdef CCSCOPE_HAVE_UCX
    return ucxInitChild();
#else
    std::printf("%s skip built without UCX (libucx-dev not found at build time)\n",
                kInitLinePrefix);
    return kExitNotCompiled;
#endif
  }
  if (what.rfind("nccl", 0) == 0) {
#ifdef CCSCOPE_HAVE_NCCL
    return ncclInitChild(what.size() > 5 ? std::atoi(what.c_str() + 5) : 0);
#else
    std::printf("%s skip built without NCCL\n", kInitLinePrefix);
    return kExitNotCompiled;
#endif
  }
  std::printf("%s error: unknown library '%s'\n", kInitLinePrefix, what.c_str());
  return 2;
}

}  // namespace ccscope::diagnostics
