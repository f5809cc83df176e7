// Parsers for multi-line tool output that no single-line rule can judge: `ibstat`/`ibstatus`/
// `ibv_devinfo` port blocks (a port that is Down or Disabled), and the CUDA sample
// p2pBandwidthLatencyTest matrices (P2P copies far slower than staged copies means the
// peer-to-peer path is broken). One instance per input file; they keep a few lines of state.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/analyze/event.h"

namespace ccscope::diagnostics {

class IbPortParser {
 public:
  // Feed lines that contain a trigger keyword; emits when a port block shows a bad state.
  void feed(std::string_view body, long line, std::vector<Event>& out);

 private:
  void judge(std::vector<Event>& out);
  std::string ca_;
  reports::Evidence ca_line_;
  std::string port_ = "1";
  std::string state_, phys_;
  reports::Evidence state_line_, phys_line_;
};

class P2pMatrixParser {
 public:
  bool active() const { return reading_ != Table::kNone; }
  // Feed trigger lines, and every line while active().
  void feed(std::string_view body, long line, std::vector<Event>& out);
  void finish(std::vector<Event>& out);

 private:
  enum class Table { kNone, kDisabled, kEnabled };
  void compare(std::vector<Event>& out);
  Table reading_ = Table::kNone;
  bool bidirectional_ = false;
  std::vector<std::vector<double>> disabled_, enabled_;
  std::vector<reports::Evidence> enabled_rows_;
  reports::Evidence enabled_header_, access_line_;
  bool compared_ = false;
};

const FindingSpec& ibPortDownSpec();
const FindingSpec& p2pSlowSpec();

}  // namespace ccscope::diagnostics
