// What the tests of `ccscope hang`'s parts share: the data directory, files read whole, an
// analyzer with the built-in rules, a snapshot holding one of the recorded RAS reports.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "diagnostics/analyze/analyzer.h"
#include "diagnostics/analyze/hang_snapshot.h"

namespace ccscope::diagnostics::test_hang {

inline const std::string kData = CCSCOPE_TEST_DATA "/ras/";

inline std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::unique_ptr<Analyzer> newAnalyzer() {
  auto a = Analyzer::create({});
  EXPECT_TRUE(a.isOk());
  return std::move(*a);
}

inline HangSnapshot snapshotWithRasText(const std::string& file) {
  HangSnapshot s;
  s.node = "node-a";
  s.ras_text = readAll(kData + file);
  return s;
}

}  // namespace ccscope::diagnostics::test_hang
