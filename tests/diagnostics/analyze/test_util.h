// Helpers for the analyzer tests: run the analyzer over in-memory "files".
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "diagnostics/analyze/analyzer.h"
#include "diagnostics/analyze/rule_loader.h"

namespace ccscope::diagnostics::testing {

using Files = std::vector<std::pair<std::string, std::vector<std::string>>>;

inline reports::Diagnosis analyzeMemory(const Files& files) {
  auto rules = loadDefaultRules();
  EXPECT_TRUE(rules.isOk()) << rules.status().toString();
  Analyzer analyzer(std::move(*rules));
  for (const auto& [name, lines] : files) {
    analyzer.beginFile(name);
    long n = 0;
    for (const auto& l : lines) analyzer.feedLine(l, ++n);
    analyzer.endFile();
  }
  return analyzer.finish();
}

inline bool hasFinding(const reports::Diagnosis& d, const std::string& id) {
  for (const auto& f : d.findings) {
    if (f.id == id) return true;
  }
  return false;
}

inline bool hasHost(const reports::Diagnosis& d, const std::string& host) {
  for (const auto& h : d.culprit.hosts) {
    if (h == host) return true;
  }
  return false;
}

}  // namespace ccscope::diagnostics::testing
