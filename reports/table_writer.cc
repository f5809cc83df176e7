#include "reports/table_writer.h"

#include <fmt/format.h>

namespace ccscope::reports {

void TableWriter::onRun(const RunMetadata& m) {
  interleaved_ = m.interleaved;
  fmt::print(out_, "# ccscope {}: {} over {} ({} ranks, launcher {})\n", m.version, m.collective,
             m.transport, m.ranks, m.launcher);
  for (size_t r = 0; r < m.hosts.size(); ++r)
    fmt::print(out_, "#  Rank {:2} on {}\n", r, m.hosts[r]);
  fmt::print(
      out_,
      "#  Times in us; bandwidth in GB/s (1 GB/s = 10^9 B/s); p50/p99: per-iteration latency\n");
  // Large-message figures differ up to 2.6x between page sizes (docs/performance.md, "Huge
  // pages").
  if (!m.host_pages.empty())
    fmt::print(out_, "#  {}\n",
               m.host_pages == "huge"
                   ? "Host buffers of 2 MiB and more on huge pages (--hugepages on)"
                   : "Host buffers on base pages (--hugepages off)");
  fmt::print(out_, "#\n");
  // --interleave: rows of several algorithms alternate, and a last column names each row's.
  std::string algo = interleaved_ ? "  algorithm" : "";
  fmt::print(out_, "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:^32}  {:^32}  {:^15}  {:^15}\n", "",
             "", "", "", "", "out-of-place", "in-place", "out-of-place", "in-place");
  fmt::print(out_,
             "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>5}  {:>7}  {:>6}  "
             "{:>6}  {:>5}  {:>7} {:>7}  {:>7} {:>7}{}\n",
             "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
             "algbw", "busbw", "#wrong", "p50", "p99", "p50", "p99", algo);
  fmt::print(out_,
             "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>5}  {:>7}  {:>6}  "
             "{:>6}  {:>5}  {:>7} {:>7}  {:>7} {:>7}\n",
             "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
             "(GB/s)", "", "(us)", "(us)", "(us)", "(us)");
  std::fflush(out_);
}

void TableWriter::onSection(const std::string& title) {
  if (pending_) printRow(&*pending_, nullptr);  // a row waiting for its in-place half ends here
  pending_.reset();
  fmt::print(out_, "# {}\n", title);
  std::fflush(out_);
}

static std::string wrongText(int64_t w) { return w < 0 ? "N/A" : std::to_string(w); }

static std::string timeText(double us) {
  return us >= 10000 ? fmt::format("{:7.0f}", us) : fmt::format("{:7.2f}", us);
}

void TableWriter::printRow(const Measurement* oop, const Measurement* ip) {
  const Measurement& id = oop ? *oop : *ip;
  std::string line = fmt::format("{:12}  {:12}  {:>8}  {:>6}  {:6}", id.bytes, id.count, id.dtype,
                                 id.redop, id.root);
  auto half = [](const Measurement* m) {
    if (!m) return fmt::format("  {:>7}  {:>6}  {:>6}  {:>5}", "-", "-", "-", "-");
    return fmt::format("  {}  {:6.2f}  {:6.2f}  {:>5}", timeText(m->time_us), m->algbw_gbps,
                       m->busbw_gbps, wrongText(m->wrong));
  };
  auto lat = [](const Measurement* m) {
    if (!m) return fmt::format("  {:>7} {:>7}", "-", "-");
    return fmt::format("  {} {}", timeText(m->lat.p50), timeText(m->lat.p99));
  };
  line += half(oop) + half(ip) + lat(oop);
  // Without --interleave a row missing its in-place half ends after the out-of-place latency,
  // as it always has.
  if (ip || interleaved_) line += lat(ip);
  if (interleaved_) line += "  " + askedAlgorithm(id);
  fmt::print(out_, "{}\n", line);
  std::fflush(out_);
}

void TableWriter::onMeasurement(const Measurement& m) {
  if (!m.note.empty() && (!m.in_place || !pending_))
    fmt::print(out_, "# {} B: {}\n", m.bytes, m.note);
  if (!m.in_place) {
    if (pending_) printRow(&*pending_, nullptr);
    pending_ = m;
    return;
  }
  if (pending_ && pending_->bytes == m.bytes) {
    printRow(&*pending_, &m);
  } else {
    if (pending_) printRow(&*pending_, nullptr);
    printRow(nullptr, &m);  // --placement in
  }
  pending_.reset();
}

void TableWriter::onEnd(const RunSummary& s) {
  if (pending_) printRow(&*pending_, nullptr);
  pending_.reset();
  fmt::print(out_, "# Out of bounds values : {} {}\n", s.wrong_total,
             s.wrong_total ? "FAILED" : "OK");
  fmt::print(out_, "# Avg bus bandwidth    : {:g} \n#\n", s.avg_busbw_gbps);
  std::fflush(out_);
}

}  // namespace ccscope::reports
