#include "diagnostics/analyze/cue_tracker.h"

#include <algorithm>
#include <cctype>

#include "diagnostics/analyze/keyword_index.h"

namespace ccscope::diagnostics {

namespace {

using L = core::Layer;

// Severity words (layer kNone) and each layer's vocabulary: the words its components and its
// failures are written in, independent of any one message's wording.
const std::vector<CueWord> kWords = {
    // severity
    {"error", L::kNone, 2},
    {"failed", L::kNone, 2},
    {"failure", L::kNone, 2},
    {"exception", L::kNone, 2},
    {"fatal", L::kNone, 3},
    {"abort", L::kNone, 2},
    {"aborted", L::kNone, 2},
    {"killed", L::kNone, 3},
    {"segmentation fault", L::kNone, 3},
    {"core dumped", L::kNone, 3},
    {"terminate called", L::kNone, 3},
    {"panic", L::kNone, 3},
    {"timed out", L::kNone, 2},
    {"timeout", L::kNone, 1},
    {"refused", L::kNone, 2},
    {"unable to", L::kNone, 2},
    {"cannot", L::kNone, 2},
    {"can't", L::kNone, 2},
    {"could not", L::kNone, 2},
    {"invalid", L::kNone, 1},
    {"denied", L::kNone, 2},
    {"unreachable", L::kNone, 2},
    {"mismatch", L::kNone, 2},
    {"warn", L::kNone, 1},
    {"warning", L::kNone, 1},
    {"hang", L::kNone, 1},
    {"stuck", L::kNone, 1},
    {"not found", L::kNone, 1},
    {"no such", L::kNone, 2},
    {"traceback", L::kNone, 2},
    // progress (weight 0): the job got past its start
    {"init complete", L::kNone, 0},
    {"epoch", L::kNone, 0},
    {"iteration", L::kNone, 0},
    {"loss", L::kNone, 0},
    // a Python frame (weight -1): whose code the traceback runs through
    {"file \"", L::kNone, -1, false},
    // bootstrap: launch and rendezvous
    {"rendezvous", L::kBootstrap, 3},
    {"rdzv", L::kBootstrap, 3},
    {"init_process_group", L::kBootstrap, 3},
    {"tcpstore", L::kBootstrap, 3},
    {"store", L::kBootstrap, 1},
    {"master_addr", L::kBootstrap, 3},
    {"master_port", L::kBootstrap, 3},
    {"c10d", L::kBootstrap, 2},
    {"bootstrap", L::kBootstrap, 2},
    {"uniqueid", L::kBootstrap, 2},
    {"coordinator", L::kBootstrap, 2},
    {"coordination service", L::kBootstrap, 3},
    {"pmix", L::kBootstrap, 3},
    {"pmi", L::kBootstrap, 2},
    {"hostfile", L::kBootstrap, 3},
    {"orted", L::kBootstrap, 3},
    {"orte", L::kBootstrap, 2},
    {"prte", L::kBootstrap, 2},
    {"mpirun", L::kBootstrap, 1},
    {"srun", L::kBootstrap, 1},
    {"ssh", L::kBootstrap, 2},
    {"launcher", L::kBootstrap, 2},
    {"world_size", L::kBootstrap, 2},
    {"nnodes", L::kBootstrap, 2},
    {"node_rank", L::kBootstrap, 2},
    {"address already in use", L::kBootstrap, 3},
    {"kubectl", L::kBootstrap, 2},
    // host-network: TCP/IP, interfaces, routes
    {"connection refused", L::kHostNetwork, 3},
    {"connection reset", L::kHostNetwork, 3},
    {"no route to host", L::kHostNetwork, 3},
    {"network is unreachable", L::kHostNetwork, 3},
    {"broken pipe", L::kHostNetwork, 2},
    {"socket", L::kHostNetwork, 2},
    {"econnrefused", L::kHostNetwork, 3},
    {"etimedout", L::kHostNetwork, 2},
    {"firewall", L::kHostNetwork, 3},
    {"ifname", L::kHostNetwork, 2},
    {"interface", L::kHostNetwork, 1},
    {"tcp", L::kHostNetwork, 1},
    {"mtu", L::kHostNetwork, 2},
    {"iptables", L::kHostNetwork, 3},
    {"network", L::kHostNetwork, 1},
    {"connection closed", L::kHostNetwork, 2},
    {"peer closed", L::kHostNetwork, 1},
    // rdma: verbs, InfiniBand/RoCE, libfabric, GPUDirect
    {"ibv_", L::kRdma, 3, false},
    {"mlx5", L::kRdma, 3, false},
    {"rdma", L::kRdma, 3},
    {"infiniband", L::kRdma, 3},
    {"net/ib", L::kRdma, 3},
    {"roce", L::kRdma, 3},
    {"gid", L::kRdma, 2},
    {"verbs", L::kRdma, 2},
    {"hca", L::kRdma, 2},
    {"efa", L::kRdma, 3},
    {"libfabric", L::kRdma, 3},
    {"fi_", L::kRdma, 2, false},
    {"ofi", L::kRdma, 2},
    {"rxe", L::kRdma, 2},
    {"ucx", L::kRdma, 1},
    {"ucp", L::kRdma, 1},
    {"uct", L::kRdma, 1},
    {"pkey", L::kRdma, 2},
    {"psm", L::kRdma, 2},
    {"peermem", L::kRdma, 3, false},
    {"gpudirect", L::kRdma, 3},
    {"gdr", L::kRdma, 2},
    {"mlnx", L::kRdma, 3, false},
    {"queue pair", L::kRdma, 3},
    {"completion queue", L::kRdma, 3},
    // gpu: the device, its driver and its links
    {"cuda error", L::kGpu, 2},
    {"cudaerror", L::kGpu, 2, false},
    {"cuda_error", L::kGpu, 2, false},
    {"xid", L::kGpu, 3},
    {"ecc", L::kGpu, 3},
    {"nvml", L::kGpu, 3},
    {"nvidia-smi", L::kGpu, 2},
    {"gpu", L::kGpu, 1},
    {"nvlink", L::kGpu, 3},
    {"peer access", L::kGpu, 3},
    {"p2p", L::kGpu, 2},
    {"iommu", L::kGpu, 3},
    {"pcie", L::kGpu, 3},
    {"driver", L::kGpu, 2},
    {"fabric manager", L::kGpu, 3},
    {"fabricmanager", L::kGpu, 3, false},
    {"uncorrectable", L::kGpu, 3},
    {"fallen off the bus", L::kGpu, 3},
    {"no cuda gpus", L::kGpu, 3},
    {"cuda-capable device", L::kGpu, 3},
    {"hip error", L::kGpu, 2},
    // library: the communication libraries, their builds and versions
    {"nccl", L::kLibrary, 1},
    {"rccl", L::kLibrary, 1},
    {"undefined symbol", L::kLibrary, 3},
    {"cannot open shared object", L::kLibrary, 3},
    {"symbol lookup error", L::kLibrary, 3},
    {"importerror", L::kLibrary, 2},
    {"modulenotfounderror", L::kLibrary, 3},
    {"libnccl", L::kLibrary, 3, false},
    {"plugin", L::kLibrary, 2},
    {"version", L::kLibrary, 1},
    {"glibc", L::kLibrary, 3},
    {"not compiled with", L::kLibrary, 3},
    {"was not compiled", L::kLibrary, 3},
    {"unsupported", L::kLibrary, 1},
    {"incompatible", L::kLibrary, 2},
    {"dlopen", L::kLibrary, 3},
    {"libmpi", L::kLibrary, 2, false},
    {"mca", L::kLibrary, 2},
    {"btl", L::kLibrary, 2},
    {"pml", L::kLibrary, 2},
    {"ucc", L::kLibrary, 2},
    {"gloo", L::kLibrary, 1},
    {"internal error", L::kLibrary, 1},
    {"mpi_init", L::kLibrary, 2},
    {"mpid", L::kLibrary, 2},
    {"mpir", L::kLibrary, 2},
    {"mpi error", L::kLibrary, 2},
    {"ncclinternalerror", L::kLibrary, 1},
    {"ncclsystemerror", L::kLibrary, 1},
    {"unhandled system error", L::kLibrary, 1},
    {"unhandled cuda error", L::kLibrary, 1},
    // application: the program, its data and the way it calls collectives
    {"valueerror", L::kApplication, 3},
    {"typeerror", L::kApplication, 3},
    {"keyerror", L::kApplication, 3},
    {"indexerror", L::kApplication, 3},
    {"attributeerror", L::kApplication, 3},
    {"nameerror", L::kApplication, 3},
    {"assertionerror", L::kApplication, 3},
    {"shape", L::kApplication, 3},
    {"size mismatch", L::kApplication, 3},
    {"dtype", L::kApplication, 3},
    {"out of memory", L::kApplication, 2},
    {"dataloader", L::kApplication, 3},
    {"data loader", L::kApplication, 3},
    {"device-side assert", L::kApplication, 3},
    {"invalid device ordinal", L::kApplication, 3},
    {"ncclinvalidusage", L::kApplication, 2},
    {"mismatched collective", L::kApplication, 3},
    {"watchdog", L::kApplication, 1},
};

// Wrappers say that something failed, not what; the detail line under one says what.
constexpr std::string_view kDetailMarkers[] = {"Last error:", "last error:", "caused by",
                                               "Caused by",   "Reason:",     "reason:"};

bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether the text at [at, end) lies inside a path ("torch/csrc/distributed/c10d/X.cpp"): a
// source file's name says where code lives, not what failed.
bool insidePath(std::string_view line, size_t at, size_t end) {
  size_t b = at, e = end;
  while (b > 0 && line[b - 1] != ' ' && line[b - 1] != '(' && line[b - 1] != '"') --b;
  while (e < line.size() && line[e] != ' ' && line[e] != ')' && line[e] != '"') ++e;
  return line.substr(b, e - b).find('/') != std::string_view::npos;
}

// Whether the token around [at, end) is a setting ("X_ERROR_HANDLING=1", "... set by
// environment to"), not a message.
bool isSetting(std::string_view line, size_t end) {
  while (end < line.size() && line[end] != ' ' && line[end] != '=') ++end;
  return end < line.size() && (line[end] == '=' || line.substr(end).starts_with(" set ") ||
                               line.substr(end).starts_with(" = "));
}

bool isBoundary(const std::string_view line, size_t i, bool underscore) {
  return i >= line.size() || !isWordChar(line[i]) || (underscore && line[i] == '_');
}

// Whether `word` stands as a word somewhere in `line`: not inside another word, an 's' may
// follow, and a camel-case start counts ("ncclSystemError"). Severity words also stand between
// underscores ("ORTE_ERROR_LOG"), unless the token is a setting.
bool standsAlone(std::string_view line, std::string_view word, bool vocabulary = false) {
  for (size_t at = 0; at + word.size() <= line.size(); ++at) {
    bool same = true;
    for (size_t i = 0; i < word.size() && same; ++i)
      same = std::tolower(static_cast<unsigned char>(line[at + i])) == word[i];
    if (!same) continue;
    const bool start = at == 0 || isBoundary(line, at - 1, !vocabulary) ||
                       (std::isupper(static_cast<unsigned char>(line[at])) &&
                        std::islower(static_cast<unsigned char>(line[at - 1])));
    size_t end = at + word.size();
    if (end < line.size() && (line[end] == 's' || line[end] == 'S')) ++end;
    if (!start || !isBoundary(line, end, !vocabulary)) continue;
    if (vocabulary ? !insidePath(line, at, end) : !isSetting(line, end)) return true;
  }
  return false;
}

// "KeyError: ...", "torch.distributed.DistBackendError: ...": the message a traceback ends with.
bool isExceptionLine(std::string_view body) {
  const size_t colon = body.find(": ");
  if (colon == std::string_view::npos || colon > 80) return false;
  const std::string_view name = body.substr(0, colon);
  if (name.find(' ') != std::string_view::npos) return false;
  return name.ends_with("Error") || name.ends_with("Exception");
}

// `File "PATH", line N, in F`: a frame of the program's own code, not of an installed package
// or of Python itself.
bool isUserFrame(std::string_view body) {
  const size_t at = body.find("File \"");
  if (at == std::string_view::npos) return false;
  const size_t end = body.find('"', at + 6);
  if (end == std::string_view::npos || body.find(", line ", end) != end + 1) return false;
  const std::string_view path = body.substr(at + 6, end - at - 6);
  constexpr std::string_view kInstalled[] = {"site-packages", "dist-packages", "/lib/python",
                                             "<frozen",       "/torch/",       "/usr/lib/"};
  return std::none_of(std::begin(kInstalled), std::end(kInstalled),
                      [&](std::string_view p) { return path.find(p) != std::string_view::npos; });
}

bool isNativeCrash(std::string_view body) {
  constexpr std::string_view kSignals[] = {
      "Segmentation fault", "segmentation fault", "core dumped", "SIGSEGV", "SIGABRT", "SIGBUS"};
  return std::any_of(std::begin(kSignals), std::end(kSignals),
                     [&](std::string_view m) { return body.find(m) != std::string_view::npos; });
}

bool isDetailLine(std::string_view body) {
  return std::any_of(std::begin(kDetailMarkers), std::end(kDetailMarkers),
                     [&](std::string_view m) { return body.find(m) != std::string_view::npos; });
}

// The vocabulary's own index: run only on the few lines that read as failures.
const KeywordIndex& vocabularyIndex() {
  static const KeywordIndex index = [] {
    KeywordIndex k;
    for (size_t i = 0; i < kWords.size(); ++i)
      if (kWords[i].layer != L::kNone) k.add(kWords[i].text, static_cast<int>(i));
    k.build();
    return k;
  }();
  return index;
}

}  // namespace

const std::vector<CueWord>& cueWords() { return kWords; }

const std::vector<int>& cueLineWords() {
  static const std::vector<int> words = [] {
    std::vector<int> w;
    for (size_t i = 0; i < kWords.size(); ++i)
      if (kWords[i].layer == L::kNone) w.push_back(static_cast<int>(i));
    return w;
  }();
  return words;
}

void CueTracker::feed(std::span<const int> hits, std::string_view body, const std::string& file,
                      long line_number) {
  int severity = 0;
  for (int h : hits) {
    const CueWord& w = kWords[static_cast<size_t>(h)];
    if (w.layer != L::kNone) continue;
    if (w.weight < 0) {
      if (isUserFrame(body)) ++user_frames_;
      continue;
    }
    if (w.weight == 0 && !progressed_ && standsAlone(body, w.text)) progressed_ = true;
    if (w.weight > severity && standsAlone(body, w.text)) severity = w.weight;
  }
  if (severity == 0) return;
  if (severity == 3) native_crash_ = native_crash_ || isNativeCrash(body);
  const reports::Evidence where{file, line_number, std::string(body.substr(0, kMaxCueEvidence))};
  if (failures_++ == 0) first_failure_ = where;
  // The first failure, the message a traceback ends with and the detail under a wrapper weigh
  // double: they are where a cause is written.
  int factor = 1;
  if (failures_ == 1 || isExceptionLine(body) || isDetailLine(body)) factor = 2;
  if (word_lines_.empty()) word_lines_.assign(kWords.size(), 0);
  vocabulary_hits_.clear();
  vocabularyIndex().find(body, vocabulary_hits_);
  hits = vocabulary_hits_;
  std::array<int, kLayers> line{};
  std::array<const char*, kLayers> word{};
  for (int h : hits) {
    const CueWord& w = kWords[static_cast<size_t>(h)];
    const auto l = static_cast<size_t>(w.layer);
    if (w.layer == L::kNone || w.weight <= line[l]) continue;
    if (word_lines_[static_cast<size_t>(h)] >= kMaxLinesPerWord) continue;
    if (w.whole ? !standsAlone(body, w.text, true) : false) continue;
    line[l] = w.weight;
    word[l] = w.text;
  }
  for (size_t l = 1; l < kLayers; ++l) {
    if (!line[l]) continue;
    for (int h : hits)
      if (kWords[static_cast<size_t>(h)].text == word[l]) ++word_lines_[static_cast<size_t>(h)];
    const int s = line[l] * severity * factor;
    score_[l] += s;
    if (s > best_line_[l]) {
      best_line_[l] = s;
      evidence_[l] = where;
    }
    if (words_[l].find(word[l]) == std::string::npos && words_[l].size() < 80)
      words_[l] += (words_[l].empty() ? "" : ", ") + std::string(word[l]);
  }
}

CueTracker::Guess CueTracker::guess() const {
  Guess g;
  if (failures_ == 0) return g;
  size_t best = 0, second = 0;
  for (size_t l = 1; l < kLayers; ++l) {
    if (score_[l] > score_[best]) {
      second = best;
      best = l;
    } else if (score_[l] > score_[second]) {
      second = l;
    }
  }
  if (best == 0) {  // failures in words no layer owns: where it failed decides
    g.evidence = first_failure_;
    if (user_frames_ > 0) {
      g.layer = L::kApplication;
      g.site = Site::kUserTraceback;
    } else if (native_crash_) {
      g.layer = L::kLibrary;
      g.site = Site::kNativeCrash;
    } else {
      // Bootstrap has words of its own (rendezvous, store, MASTER_ADDR); a start that fails
      // without them is most often hosts that cannot reach each other.
      g.layer = progressed_ ? L::kApplication : L::kHostNetwork;
      g.site = progressed_ ? Site::kPastStart : Site::kAtStart;
    }
    return g;
  }
  g.layer = static_cast<core::Layer>(best);
  g.score = score_[best];
  g.runner_up = second ? static_cast<core::Layer>(second) : L::kNone;
  g.runner_up_score = score_[second];
  g.evidence = evidence_[best];
  g.words = words_[best];
  return g;
}

}  // namespace ccscope::diagnostics
