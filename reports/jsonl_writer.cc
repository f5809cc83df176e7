#include "reports/jsonl_writer.h"

#include <fmt/format.h>

#include <cerrno>

namespace ccscope::reports {

using nlohmann::json;

json toJson(const Measurement& m) {
  json j{{"type", "result"},
         {"schema", kSchemaVersion},
         {"collective", m.collective},
         {"algorithm", m.algorithm},
         {"transport", m.transport},
         {"ranks", m.ranks},
         {"bytes", m.bytes},
         {"count", m.count},
         {"dtype", m.dtype},
         {"redop", m.redop},
         {"root", m.root},
         {"in_place", m.in_place},
         {"iters", m.iters},
         {"time_us", m.time_us},
         {"algbw_gbps", m.algbw_gbps},
         {"busbw_gbps", m.busbw_gbps},
         {"busbw_factor", m.busbw_factor},
         {"wrong", m.wrong},
         {"lat_us",
          {{"min", m.lat.min},
           {"p50", m.lat.p50},
           {"p90", m.lat.p90},
           {"p99", m.lat.p99},
           {"max", m.lat.max},
           {"mean", m.lat.mean},
           {"stdev", m.lat.stdev}}}};
  if (!m.requested_algorithm.empty() && m.requested_algorithm != m.algorithm)
    j["requested_algorithm"] = m.requested_algorithm;
  if (!m.note.empty()) j["note"] = m.note;
  if (m.buffers != "host") {
    j["buffers"] = m.buffers;
    j["path"] = m.path;
  }
  if (m.device_time_us >= 0) j["device_time_us"] = m.device_time_us;
  if (m.segment_bytes > 0) j["segment_bytes"] = m.segment_bytes;
  if (!m.lat.hist.empty()) {
    json h = json::array();
    for (const HistBucket& b : m.lat.hist) h.push_back({b.lower_us, b.count});
    j["lat_us"]["hist"] = std::move(h);
  }
  return j;
}

json toJson(const RunMetadata& m) {
  return json{{"type", "run"},
              {"schema", kSchemaVersion},
              {"version", m.version},
              {"argv", m.argv},
              {"collective", m.collective},
              {"algorithms", m.algorithms},
              {"interleaved", m.interleaved},
              {"host_pages", m.host_pages},
              {"transport", m.transport},
              {"ranks", m.ranks},
              {"hosts", m.hosts},
              {"launcher", m.launcher},
              {"libraries", m.libraries},
              {"env", m.env},
              {"start_time", m.start_time},
              {"units", {{"time", "us"}, {"bandwidth", "GB/s (1e9 B/s)"}, {"bytes", "B"}}}};
}

core::Result<std::unique_ptr<JsonLinesWriter>> JsonLinesWriter::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f)
    return core::errnoStatus("fopen", errno)
        .prepend(fmt::format("cannot write --json file '{}'", path));
  return std::unique_ptr<JsonLinesWriter>(new JsonLinesWriter(f));
}

JsonLinesWriter::~JsonLinesWriter() {
  if (f_) std::fclose(f_);
}

void JsonLinesWriter::write(const json& record) {
  // Invalid UTF-8 from the environment must not abort the run: replace it.
  std::string line = record.dump(-1, ' ', false, json::error_handler_t::replace);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

}  // namespace ccscope::reports
