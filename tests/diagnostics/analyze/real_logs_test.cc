// Runs the analyzer over the development corpus of real logs: the cases in tests/data/real-logs
// (collected from public issue threads, each labelled with the layer and culprit the thread
// established) and those kept next to the repository in ../shared/data/real-logs
// ($CCSCOPE_REAL_LOGS_DIR overrides). It prints the accuracy per layer and the misses, and fails
// when either share falls below its floor (a regression check at the accuracy reached; not
// the goal of 95% in docs/diagnosis.md); every evidence line must exist in the input at the line
// cited. Without ../shared only the repository's cases run on a developer's machine; under
// CI=true the test fails, so that CI never passes without having run them all.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "diagnostics/analyze/analyzer.h"

namespace ccscope::diagnostics {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kMinLayerAccuracy = 0.95;
constexpr double kMinCulpritAccuracy = 0.90;
constexpr double kMinHeldOutLayerAccuracy = 0.75;
constexpr double kMinHeldOutCulpritAccuracy = 0.40;

std::vector<std::string> readLines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

bool underCi() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

fs::path sharedDir() {
  const char* env = std::getenv("CCSCOPE_REAL_LOGS_DIR");
  return env && *env ? fs::path(env) : fs::path(CCSCOPE_REAL_LOGS_DIR);
}

std::vector<fs::path> labelsIn(const fs::path& dir) {
  std::vector<fs::path> labels;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return labels;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".json") labels.push_back(e.path());
  }
  std::sort(labels.begin(), labels.end());
  return labels;
}

// Whether the diagnosis names every culprit the label names (a host may be named by its
// hostname or its address, inside a label or a link).
bool namesCulprit(const reports::Diagnosis& d, const json& want) {
  for (const auto& r : want.value("ranks", json::array())) {
    if (std::find(d.culprit.ranks.begin(), d.culprit.ranks.end(), r.get<int>()) ==
        d.culprit.ranks.end())
      return false;
  }
  auto mentioned = [&](const std::string& name) {
    for (const auto& h : d.culprit.hosts)
      if (h.find(name) != std::string::npos) return true;
    for (const auto& l : d.culprit.links)
      if (l.find(name) != std::string::npos) return true;
    return false;
  };
  for (const auto& h : want.value("hosts", json::array()))
    if (!mentioned(h.get<std::string>())) return false;
  return true;
}

bool hasCulprit(const json& label) {
  if (!label.contains("culprit") || !label["culprit"].is_object()) return false;
  const json& c = label["culprit"];
  return !c.value("ranks", json::array()).empty() || !c.value("hosts", json::array()).empty();
}

struct Tally {
  int right = 0, total = 0;
};

// Runs every labelled case, prints the tally under `title` and checks it against the floors.
void runCases(const std::vector<fs::path>& labels, const char* title, double min_layers,
              double min_culprits) {
  ASSERT_FALSE(labels.empty());
  std::map<std::string, Tally> by_layer;
  Tally layers, culprits;
  std::string misses;
  for (const auto& label_path : labels) {
    fs::path log = label_path;
    log.replace_extension(".log");
    SCOPED_TRACE(log.string());
    std::ifstream in(label_path);
    const auto label = json::parse(in, nullptr, false);
    ASSERT_FALSE(label.is_discarded());
    auto result = analyzeInputs({log.string()}, {});
    ASSERT_TRUE(result.isOk()) << result.status().toString();
    const auto& d = result->diagnosis;
    const std::string want = label["layer"].get<std::string>(), got = core::layerName(d.layer);
    Tally& t = by_layer[want];
    ++t.total;
    ++layers.total;
    if (got == want) {
      ++t.right;
      ++layers.right;
    } else {
      misses += fmt::format("  {}: {} labelled, {}: {}\n", log.filename().string(), want, got,
                            d.verdict.substr(0, 160));
    }
    if (hasCulprit(label)) {
      ++culprits.total;
      if (namesCulprit(d, label["culprit"])) {
        ++culprits.right;
      } else {
        misses += fmt::format("  {}: culprit {} not named\n", log.filename().string(),
                              label["culprit"].dump());
      }
    }
    if (d.layer != core::Layer::kNone) {
      EXPECT_FALSE(d.evidence.empty());
    }
    const auto lines = readLines(log);
    for (const auto& ev : d.evidence) {
      ASSERT_GE(ev.line, 1);
      ASSERT_LE(static_cast<size_t>(ev.line), lines.size());
      // Evidence longer than the report keeps is cut and ends in "...".
      std::string text = ev.text;
      if (text.size() > 3 && text.compare(text.size() - 3, 3, "...") == 0)
        text.resize(text.size() - 3);
      EXPECT_NE(lines[ev.line - 1].find(text), std::string::npos) << ev.line << ": " << ev.text;
    }
  }
  std::printf("%s: %d/%d cases with the labelled layer, %d/%d labelled culprits named\n", title,
              layers.right, layers.total, culprits.right, culprits.total);
  for (const auto& [layer, t] : by_layer)
    std::printf("  %-13s %3d/%-3d %5.1f%%\n", layer.c_str(), t.right, t.total,
                100.0 * t.right / t.total);
  if (!misses.empty()) std::printf("misses:\n%s", misses.c_str());
  EXPECT_GE(layers.right, min_layers * layers.total);
  EXPECT_GE(culprits.right, min_culprits * culprits.total);
}

TEST(RealLogsTest, LayerCulpritAndEvidenceMatchTheLabels) {
  const fs::path shared = sharedDir();
  std::error_code ec;
  if (!fs::is_directory(shared, ec) && underCi())
    FAIL() << "CI=true but the real-logs corpus is missing at " << shared;
  std::vector<fs::path> labels = labelsIn(shared);
  if (labels.empty() && underCi()) FAIL() << "CI=true but " << shared << " has no cases";
  const std::vector<fs::path> dev = labelsIn(CCSCOPE_DEV_LOGS_DIR);
  labels.insert(labels.end(), dev.begin(), dev.end());
  runCases(labels, "real-logs", kMinLayerAccuracy, kMinCulpritAccuracy);
}

// Cases collected after the rules were written, kept apart from the development corpus: their
// first score was the analyzer's on logs it had never seen (docs/diagnosis.md).
TEST(RealLogsTest, HeldOutCasesKeepTheirScore) {
  // Of their few labelled culprits, several are named only in the thread's prose (a rank that
  // ran code alone): a floor below the current score (6 of 10).
  runCases(labelsIn(CCSCOPE_HELD_OUT_LOGS_DIR), "held-out", kMinHeldOutLayerAccuracy,
           kMinHeldOutCulpritAccuracy);
}

}  // namespace
}  // namespace ccscope::diagnostics
