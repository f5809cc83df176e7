#include "reports/csv_writer.h"

#include <gtest/gtest.h>

#include <sstream>

#include "reports/jsonl_writer.h"
#include "tests/reports/report_test_util.h"

namespace ccscope::reports {
namespace {

// Minimal RFC 4180 reader: enough to prove the writer's quoting.
std::vector<std::vector<std::string>> parseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field), field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field), field.clear();
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

// Where the JSON record keeps the value of a CSV column.
nlohmann::json jsonValue(const nlohmann::json& rec, const std::string& column) {
  static const std::map<std::string, std::string> kNames = {{"bytes_B", "bytes"},
                                                            {"count_elements", "count"},
                                                            {"algbw_GBps", "algbw_gbps"},
                                                            {"busbw_GBps", "busbw_gbps"},
                                                            {"wrong_elements", "wrong"}};
  // Lookups go through find(): operator[] on a const json with a missing key is undefined
  // behaviour, and CSV-only columns (run, verdict, baseline_*) have no JSON field.
  auto field = [](const nlohmann::json& obj, const std::string& key) {
    auto it = obj.find(key);
    return it == obj.end() ? nlohmann::json() : *it;
  };
  if (column.rfind("lat_", 0) == 0)
    return field(field(rec, "lat_us"), column.substr(4, column.size() - 7));
  auto it = kNames.find(column);
  return field(rec, it == kNames.end() ? column : it->second);
}

TEST(CsvWriterTest, EveryNumericFieldRoundTripsToTheJsonRecord) {
  RunRecords run = testing::sweep("a");
  run.rows[1].time_us = 1.0 / 3;  // a value with no short decimal form
  run.rows[2].lat.stdev = 1e-7;
  run.rows[3].wrong = -1;
  ReportModel model = buildReportModel({run}, {}, false, Criteria{});
  std::ostringstream out;
  writeCsv(model, out);
  auto rows = parseCsv(out.str());
  ASSERT_EQ(rows.size(), run.rows.size() + 1);
  const auto& header = rows[0];
  EXPECT_EQ(header, csvHeader());
  size_t numeric = 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    ASSERT_EQ(rows[r].size(), header.size());
    const nlohmann::json rec = toJson(run.rows[r - 1]);
    for (size_t c = 0; c < header.size(); ++c) {
      const nlohmann::json want = jsonValue(rec, header[c]);
      if (!want.is_number()) continue;
      ++numeric;
      const double got = std::stod(rows[r][c]);
      EXPECT_EQ(got, want.get<double>()) << header[c] << " row " << r << ": " << rows[r][c];
    }
  }
  EXPECT_GE(numeric, (rows.size() - 1) * 17);  // every numeric column was checked
}

TEST(CsvWriterTest, UnitsInColumnNamesAndStringsQuoted) {
  RunRecords run = testing::sweep("a");
  run.rows[0].algorithm = "ring,\"fast\"";
  ReportModel model = buildReportModel({run}, {}, false, Criteria{});
  std::ostringstream out;
  writeCsv(model, out);
  const std::string text = out.str();
  for (const char* col : {"bytes_B", "time_us", "busbw_GBps", "lat_p99_us", "baseline_busbw_GBps"})
    EXPECT_NE(text.substr(0, text.find('\n')).find(col), std::string::npos) << col;
  auto rows = parseCsv(text);
  EXPECT_EQ(rows[1][2], "ring,\"fast\"");
  EXPECT_EQ(rows[1].size(), rows[0].size());
}

}  // namespace
}  // namespace ccscope::reports
