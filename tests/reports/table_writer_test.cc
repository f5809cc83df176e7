#include "reports/table_writer.h"

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ccscope::reports {
namespace {

std::string render(const std::vector<Measurement>& ms, RunSummary sum) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  TableWriter w(f);
  RunMetadata meta;
  meta.collective = "allreduce";
  meta.ranks = 2;
  w.onRun(meta);
  for (const auto& m : ms) w.onMeasurement(m);
  w.onEnd(sum);
  std::fclose(f);
  std::string out(buf, len);
  free(buf);
  return out;
}

Measurement row(uint64_t bytes, bool in_place, double time) {
  Measurement m;
  m.bytes = bytes;
  m.count = bytes / 4;
  m.dtype = "float";
  m.redop = "sum";
  m.in_place = in_place;
  m.time_us = time;
  m.algbw_gbps = bytes / (time * 1e3);
  m.busbw_gbps = m.algbw_gbps;
  m.wrong = 0;
  return m;
}

TEST(TableWriterTest, RowsMatchNcclTestsColumnOrder) {
  std::string out = render({row(1024, false, 10), row(1024, true, 20)}, {1.5, 0, 2});
  std::istringstream in(out);
  std::string line, data;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') data = line;
  std::istringstream cols(data);
  std::vector<std::string> c;
  for (std::string x; cols >> x;) c.push_back(x);
  ASSERT_GE(c.size(), 13u);
  EXPECT_EQ(c[0], "1024");   // size
  EXPECT_EQ(c[1], "256");    // count
  EXPECT_EQ(c[2], "float");  // type
  EXPECT_EQ(c[3], "sum");    // redop
  EXPECT_EQ(c[4], "-1");     // root
  EXPECT_EQ(c[5], "10.00");  // out-of-place time
  EXPECT_EQ(c[8], "0");      // out-of-place #wrong
  EXPECT_EQ(c[9], "20.00");  // in-place time
  EXPECT_NE(out.find("# Avg bus bandwidth    : 1.5"), std::string::npos);
  EXPECT_NE(out.find("# Out of bounds values : 0 OK"), std::string::npos);
  EXPECT_NE(out.find("algbw"), std::string::npos);
}

TEST(TableWriterTest, UncheckedAndFailedRowsAreMarked) {
  Measurement a = row(8, false, 1), b = row(8, true, 1);
  a.wrong = -1;
  b.wrong = 3;
  std::string out = render({a, b}, {0, 3, 2});
  EXPECT_NE(out.find("N/A"), std::string::npos);
  EXPECT_NE(out.find("3 FAILED"), std::string::npos);
}

}  // namespace
}  // namespace ccscope::reports
