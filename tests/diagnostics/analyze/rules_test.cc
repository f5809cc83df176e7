// Every rule carries lines it must match and near-misses it must not; this test holds each
// rule of the default set (and of any operator file) to its own examples.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "diagnostics/analyze/analyzer.h"
#include "diagnostics/analyze/line_prefix.h"
#include "diagnostics/analyze/reasoner.h"
#include "diagnostics/analyze/rule_loader.h"
#include "diagnostics/analyze/rule_matcher.h"

namespace ccscope::diagnostics {
namespace {

class RulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rules = loadDefaultRules();
    ASSERT_TRUE(rules.isOk()) << rules.status().toString();
    matcher_ = std::make_unique<RuleMatcher>(std::move(*rules), std::vector<std::string>{});
  }
  std::unique_ptr<RuleMatcher> matcher_;
};

TEST_F(RulesTest, DefaultSetIsNotEmptyAndCoversEveryLayer) {
  std::set<core::Layer> layers;
  for (const auto& r : matcher_->rules()) layers.insert(r.spec.layer);
  EXPECT_GE(matcher_->rules().size(), 50u);
  for (auto l : {core::Layer::kBootstrap, core::Layer::kHostNetwork, core::Layer::kRdma,
                 core::Layer::kGpu, core::Layer::kLibrary, core::Layer::kApplication}) {
    EXPECT_TRUE(layers.count(l)) << core::layerName(l);
  }
}

TEST_F(RulesTest, EveryRuleMatchesItsExamplesAndNotItsNearMisses) {
  const auto& rules = matcher_->rules();
  for (size_t i = 0; i < rules.size(); ++i) {
    const Rule& r = rules[i];
    SCOPED_TRACE(r.spec.id);
    ASSERT_FALSE(r.examples.empty()) << "rule has no example";
    ASSERT_FALSE(r.near_misses.empty()) << "rule has no near_miss";
    for (const auto& ex : r.examples) {
      EXPECT_TRUE(matcher_->ruleMatches(i, parseLinePrefix(ex).body)) << "example: " << ex;
    }
    for (const auto& nm : r.near_misses) {
      EXPECT_FALSE(matcher_->ruleMatches(i, parseLinePrefix(nm).body)) << "near miss: " << nm;
    }
  }
}

// Overlapping rules: a root cause's own example, alone in a log, must be diagnosed in that
// rule's layer; a rule elsewhere that matches the same line with more weight in another layer
// would contradict it.
TEST_F(RulesTest, ARootCausesOwnExampleIsDiagnosedInItsLayer) {
  auto rules = loadDefaultRules();
  ASSERT_TRUE(rules.isOk());
  for (const auto& r : matcher_->rules()) {
    if (r.spec.kind != reports::FindingKind::kRoot || r.spec.weight < kMinRootScore ||
        r.layer_group != 0 || !r.opens.empty())
      continue;
    for (const auto& ex : r.examples) {
      Analyzer analyzer(*rules);
      analyzer.beginFile("example.log");
      analyzer.feedLine(ex, 1);
      analyzer.endFile();
      const auto d = analyzer.finish();
      EXPECT_EQ(core::layerName(d.layer), core::layerName(r.spec.layer))
          << r.spec.id << ": " << ex << "\n  diagnosed as: " << d.verdict;
    }
  }
}

TEST_F(RulesTest, EveryPhaseARuleOpensSomeRuleCloses) {
  std::set<std::string> opened, closed;
  for (const auto& r : matcher_->rules()) {
    if (!r.opens.empty()) opened.insert(r.opens);
    closed.insert(r.closes.begin(), r.closes.end());
  }
  EXPECT_FALSE(opened.empty());
  for (const auto& p : opened) EXPECT_TRUE(closed.count(p)) << p << " is never closed";
  for (const auto& p : closed) EXPECT_TRUE(opened.count(p)) << p << " is never opened";
}

TEST_F(RulesTest, ScanFindsTheSameRulesAsOneByOneMatching) {
  const auto& rules = matcher_->rules();
  for (size_t i = 0; i < rules.size(); ++i) {
    for (const auto& ex : rules[i].examples) {
      std::vector<RuleMatch> matches;
      std::vector<int> triggers;
      matcher_->scan(parseLinePrefix(ex).body, matches, triggers);
      bool found = false;
      for (const auto& m : matches) found = found || m.rule == &rules[i];
      EXPECT_TRUE(found) << rules[i].spec.id << ": " << ex;
    }
  }
}

TEST(RuleLoaderTest, OperatorRulesAddAndOverride) {
  const auto dir = std::filesystem::temp_directory_path() / "ccscope_rules_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "site.toml") << R"([[rule]]
id = "site.fabric-manager"
layer = "gpu"
kind = "root"
weight = 70
keywords = ["fabricmanager"]
regex = 'fabricmanager[^\n]*failed'
verdict = "fabric manager failed"
next_step = "restart nvidia-fabricmanager"
example = "nvidia-fabricmanager: fabricmanager start failed"
near_miss = "fabricmanager started"

[[rule]]
id = "library.nccl-version"
layer = "library"
kind = "context"
weight = 1
keywords = ["NCCL version"]
regex = 'NCCL version (\S+)'
verdict = "NCCL {1}"
)";
  auto rules = loadRules({dir.string()});
  ASSERT_TRUE(rules.isOk()) << rules.status().toString();
  auto defaults = loadDefaultRules();
  ASSERT_TRUE(defaults.isOk());
  EXPECT_EQ(rules->size(), defaults->size() + 1);
  bool overridden = false;
  for (const auto& r : *rules) {
    if (r.spec.id == "library.nccl-version") overridden = r.spec.weight == 1;
  }
  EXPECT_TRUE(overridden);
  std::filesystem::remove_all(dir);
}

TEST(RuleLoaderTest, BadRulesAreReportedWithTheirSource) {
  auto no_keywords = parseRules("[[rule]]\nid='x'\nlayer='gpu'\nregex='a'\n", "bad.toml");
  ASSERT_FALSE(no_keywords.isOk());
  EXPECT_NE(no_keywords.status().message().find("bad.toml"), std::string::npos);
  auto bad_regex = parseRules("[[rule]]\nid='x'\nlayer='gpu'\nkeywords=['a']\nregex='(a'\n", "b");
  EXPECT_FALSE(bad_regex.isOk());
  auto bad_layer = parseRules("[[rule]]\nid='x'\nlayer='disk'\nkeywords=['a']\nregex='a'\n", "b");
  EXPECT_FALSE(bad_layer.isOk());
  auto bad_toml = parseRules("[[rule]\nid=", "b");
  EXPECT_FALSE(bad_toml.isOk());
  for (const char* header : {"[!]", "[[[1]]]", "[\n"})  // toml++ 3.3 asserted on these
    EXPECT_FALSE(parseRules(header, "b").isOk()) << header;
  EXPECT_FALSE(loadRules({"/nonexistent/ccscope/rules"}).isOk());
}

}  // namespace
}  // namespace ccscope::diagnostics
