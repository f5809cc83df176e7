// Runs the analyzer over every labelled case of the development corpus of real logs, kept next to
// the repository in ../shared/data/real-logs ($CCSCOPE_REAL_LOGS_DIR overrides): the top-level
// layer must match the label and every evidence line must exist in the input at the line cited.
// Without the corpus the test skips on a developer's machine and fails under CI=true, so that CI
// never passes without having run it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "diagnostics/analyze/analyzer.h"

namespace ccscope::diagnostics {
namespace {

namespace fs = std::filesystem;

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

fs::path corpusDir() {
  const char* env = std::getenv("CCSCOPE_REAL_LOGS_DIR");
  return env && *env ? fs::path(env) : fs::path(CCSCOPE_REAL_LOGS_DIR);
}

TEST(RealLogsTest, LayerAndEvidenceMatchTheLabels) {
  const fs::path dir = corpusDir();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (underCi()) FAIL() << "CI=true but the real-logs corpus is missing at " << dir;
    GTEST_SKIP() << "no real-logs corpus at " << dir;
  }
  std::vector<fs::path> labels;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".json") labels.push_back(e.path());
  }
  std::sort(labels.begin(), labels.end());
  if (labels.empty()) {
    if (underCi()) FAIL() << "CI=true but the real-logs corpus at " << dir << " has no cases";
    GTEST_SKIP() << "corpus is empty";
  }
  int right = 0;
  for (const auto& label_path : labels) {
    fs::path log = label_path;
    log.replace_extension(".log");
    SCOPED_TRACE(log.filename().string());
    std::ifstream in(label_path);
    const auto label = nlohmann::json::parse(in, nullptr, false);
    ASSERT_FALSE(label.is_discarded());
    auto result = analyzeInputs({log.string()}, {});
    ASSERT_TRUE(result.isOk()) << result.status().toString();
    const auto& d = result->diagnosis;
    EXPECT_EQ(std::string(core::layerName(d.layer)), label["layer"].get<std::string>())
        << d.verdict;
    right += std::string(core::layerName(d.layer)) == label["layer"].get<std::string>();
    EXPECT_FALSE(d.evidence.empty());
    const auto lines = readLines(log);
    for (const auto& ev : d.evidence) {
      ASSERT_GE(ev.line, 1);
      ASSERT_LE(static_cast<size_t>(ev.line), lines.size());
      EXPECT_NE(lines[ev.line - 1].find(ev.text), std::string::npos) << ev.line << ": " << ev.text;
    }
  }
  std::printf("real-logs: %d/%zu cases with the labelled layer\n", right, labels.size());
}

}  // namespace
}  // namespace ccscope::diagnostics
