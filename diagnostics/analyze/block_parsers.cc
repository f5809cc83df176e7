#include "diagnostics/analyze/block_parsers.h"

#include <fmt/format.h>

#include <cstdlib>
#include <initializer_list>

namespace ccscope::diagnostics {
namespace {

constexpr double kP2pSlowRatio = 0.5;  // P2P below half the staged-copy bandwidth
constexpr size_t kMaxDevices = 64;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

reports::Evidence at(long line, std::string_view text) {
  return {"", line, std::string(text.substr(0, 512))};
}

// "  1  12.99 673.20  22.20" -> row index 1 and its values; false when the line is not a row.
bool parseRow(std::string_view s, std::vector<double>& values) {
  values.clear();
  std::string buf(trim(s));
  const char* p = buf.c_str();
  char* end = nullptr;
  const long index = std::strtol(p, &end, 10);
  if (end == p || index < 0 || (*end != ' ' && *end != '\t')) return false;
  p = end;
  while (*p != '\0' && values.size() <= kMaxDevices) {
    const double v = std::strtod(p, &end);
    if (end == p) return false;
    values.push_back(v);
    p = end;
    while (*p == ' ' || *p == '\t') ++p;
  }
  return !values.empty();
}

}  // namespace

const FindingSpec& ibPortDownSpec() {
  static const FindingSpec spec{
      "rdma.port-not-active",
      core::Layer::kRdma,
      reports::FindingKind::kRoot,
      60,
      "an RDMA port is not active",
      "Check the cable and switch port of that HCA (ibstat, ibportstate, switch logs); if the "
      "port is unused, exclude it (NCCL_IB_HCA) so no traffic is routed to it."};
  return spec;
}

const FindingSpec& p2pSlowSpec() {
  static const FindingSpec spec{
      "gpu.p2p-path-broken",
      core::Layer::kGpu,
      reports::FindingKind::kRoot,
      75,
      "GPU peer-to-peer copies are much slower than staged copies: the P2P path is broken",
      "Check IOMMU and PCIe ACS settings (disable ACS on the switches, iommu=pt), or disable P2P "
      "(NCCL_P2P_DISABLE=1) and confirm the hang goes away; run nvidia-smi topo -m."};
  return spec;
}

void IbPortParser::judge(std::vector<Event>& out) {
  auto any = [](const std::string& s, std::initializer_list<const char*> words) {
    for (const char* w : words) {
      if (s.find(w) != std::string::npos) return true;
    }
    return false;
  };
  const bool bad_state = any(state_, {"Down", "DOWN", "Init", "INIT", "Armed", "ARMED"});
  const bool bad_phys = any(phys_, {"Disabled", "Polling", "Sleep", "LinkErrorRecovery"});
  if (!ca_.empty() && (bad_state || bad_phys)) {
    Event e;
    e.spec = &ibPortDownSpec();
    e.verdict = fmt::format("RDMA device {} port {} is {}{}", ca_.empty() ? "?" : ca_, port_,
                            state_.empty() ? "not active" : state_,
                            phys_.empty() ? "" : " (physical state " + phys_ + ")");
    if (!ca_line_.text.empty()) e.evidence.push_back(ca_line_);
    if (!state_line_.text.empty()) e.evidence.push_back(state_line_);
    if (!phys_line_.text.empty()) e.evidence.push_back(phys_line_);
    out.push_back(std::move(e));
  }
  state_.clear();
  phys_.clear();
  state_line_ = phys_line_ = {};
}

void IbPortParser::feed(std::string_view body, long line, std::vector<Event>& out) {
  const std::string_view s = trim(body);
  if (startsWith(s, "CA '") || startsWith(s, "hca_id:")) {
    const size_t q = s.find('\'', 4);
    ca_ = startsWith(s, "CA '") ? std::string(s.substr(4, q == std::string_view::npos ? 0 : q - 4))
                                : std::string(trim(s.substr(7)));
    ca_line_ = at(line, body);
    state_.clear();
    phys_.clear();
  } else if ((startsWith(s, "Port ") && s.back() == ':') || startsWith(s, "port:")) {
    port_ = std::string(trim(s.substr(5, s.size() - 5 - (s.back() == ':' ? 1 : 0))));
  } else if (startsWith(s, "State:") || startsWith(s, "state:")) {
    state_ = std::string(trim(s.substr(6)).substr(0, 32));
    state_line_ = at(line, body);
    if (startsWith(s, "state:")) judge(out);  // ibv_devinfo has no physical state line
  } else if (startsWith(s, "Physical state:") || startsWith(s, "phys state:") ||
             startsWith(s, "phys_state:")) {
    phys_ = std::string(trim(s.substr(s.find(':') + 1)).substr(0, 32));
    phys_line_ = at(line, body);
    if (!state_.empty()) judge(out);
  }
}

void P2pMatrixParser::feed(std::string_view body, long line, std::vector<Event>& out) {
  const std::string_view s = trim(body);
  if (s.find("Access Peer") != std::string_view::npos) {
    if (access_line_.text.empty()) access_line_ = at(line, body);
    return;
  }
  const bool bandwidth = s.find("Bandwidth") != std::string_view::npos;
  if (bandwidth && s.find("P2P=Disabled") != std::string_view::npos) {
    reading_ = Table::kDisabled;
    disabled_.clear();
  } else if (bandwidth && s.find("P2P=Enabled") != std::string_view::npos) {
    reading_ = Table::kEnabled;
    enabled_.clear();
    enabled_rows_.clear();
    enabled_header_ = at(line, body);
  } else if (reading_ != Table::kNone) {
    std::vector<double> row;
    if (startsWith(s, "D\\D")) return;
    if (!parseRow(s, row)) {
      reading_ = Table::kNone;
      compare(out);
      return;
    }
    auto& m = reading_ == Table::kDisabled ? disabled_ : enabled_;
    if (m.size() < kMaxDevices) m.push_back(row);
    if (reading_ == Table::kEnabled) enabled_rows_.push_back(at(line, body));
    return;
  } else {
    return;
  }
  bidirectional_ = s.find("Bidirectional") != std::string_view::npos;
  compared_ = false;
}

void P2pMatrixParser::finish(std::vector<Event>& out) {
  reading_ = Table::kNone;
  compare(out);
}

void P2pMatrixParser::compare(std::vector<Event>& out) {
  if (compared_ || disabled_.empty() || enabled_.size() != disabled_.size()) return;
  compared_ = true;
  double worst = 1.0;
  size_t wi = 0, wj = 0;
  for (size_t i = 0; i < enabled_.size(); ++i) {
    for (size_t j = 0; j < enabled_[i].size() && j < disabled_[i].size(); ++j) {
      if (i == j || disabled_[i][j] <= 0) continue;
      const double ratio = enabled_[i][j] / disabled_[i][j];
      if (ratio < worst) {
        worst = ratio;
        wi = i;
        wj = j;
      }
    }
  }
  if (worst >= kP2pSlowRatio) return;
  Event e;
  e.spec = &p2pSlowSpec();
  e.verdict = fmt::format(
      "{}P2P copies GPU {} -> GPU {} run at {:.2f} GB/s with P2P enabled vs {:.2f} GB/s staged "
      "through the host: the peer-to-peer path is broken (IOMMU/ACS or PCIe switch)",
      bidirectional_ ? "bidirectional " : "", wi, wj, enabled_[wi][wj], disabled_[wi][wj]);
  if (!access_line_.text.empty()) e.evidence.push_back(access_line_);
  e.evidence.push_back(enabled_header_);
  if (wi < enabled_rows_.size()) e.evidence.push_back(enabled_rows_[wi]);
  out.push_back(std::move(e));
}

}  // namespace ccscope::diagnostics
