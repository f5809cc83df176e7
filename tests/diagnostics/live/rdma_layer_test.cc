// The RDMA layer's findings from port readings (the recorded trees of tests/data/sysfs and
// made-up snapshots) and rank 0's verdict in `ccscope diagnose` from every rank's report.
#include "diagnostics/live/rdma_layer.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace ccscope::diagnostics {
namespace {

using nlohmann::json;
using transports::RdmaDevice;
using transports::RdmaPort;
using transports::RdmaSnapshot;

namespace fs = std::filesystem;

RdmaSnapshot tree(const std::string& name) {
  return transports::readRdmaSysfs(
      (fs::path(__FILE__).parent_path() / "../../data/sysfs" / name).lexically_normal());
}

RdmaPort upPort(int number, const std::string& rate, const std::string& link_layer) {
  RdmaPort p;
  p.number = number;
  p.state = transports::kPortActive;
  p.state_name = "ACTIVE";
  p.phys_state = transports::kPhysLinkUp;
  p.phys_state_name = "LinkUp";
  p.link_layer = link_layer;
  p.rate_text = rate;
  p.rate = transports::parseRate(rate);
  return p;
}

RdmaSnapshot oneDevice(std::vector<RdmaPort> ports, const std::string& hca = "MT4129") {
  RdmaSnapshot s;
  s.class_dir = true;
  s.devices.push_back({"mlx5_0", "CA", "28.39.1002", "", hca, "", std::move(ports), {}});
  return s;
}

const RdmaFinding* findingAbout(const RdmaJudgement& j, const std::string& where,
                                const std::string& text) {
  for (const auto& f : j.findings)
    if (f.where == where && f.text.find(text) != std::string::npos) return &f;
  return nullptr;
}
// A finding points into its judgement: a temporary's would dangle (ThreadSanitizer found one).
const RdmaFinding* findingAbout(RdmaJudgement&& j, const std::string& where,
                                const std::string& text) = delete;

TEST(RdmaLayerTest, DegradedTreeFaultsOnOneLaneAndTheDownPort) {
  RdmaJudgement j = judgeRdma(tree("degraded"));
  const RdmaFinding* width = findingAbout(j, "mlx5_0:1", "degraded link: 1X of 4X (mlx5_0:2");
  ASSERT_NE(width, nullptr);
  EXPECT_EQ(width->severity, RdmaSeverity::kFault);
  const RdmaFinding* down = findingAbout(j, "mlx5_1:1", "port DOWN (physical state Polling)");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->severity, RdmaSeverity::kFault);
  EXPECT_NE(down->text.find("ibstat mlx5_1 1"), std::string::npos);
  const RdmaFinding* counters = findingAbout(j, "mlx5_0:1", "link_downed 3, symbol_error 117");
  ASSERT_NE(counters, nullptr);
  EXPECT_EQ(counters->severity, RdmaSeverity::kWarning);
  EXPECT_EQ(j.findings.size(), 3u);
  EXPECT_EQ(j.findings.back().severity, RdmaSeverity::kWarning) << "faults come first";
}

TEST(RdmaLayerTest, HealthyTreeActivePortsHaveNoFinding) {
  RdmaJudgement j = judgeRdma(tree("healthy"));
  EXPECT_TRUE(j.findings.empty()) << j.findings[0].text;
  // One HCA of each type: nothing to compare a width with, which is said, not assumed healthy.
  ASSERT_EQ(j.unknown.size(), 2u);
  EXPECT_EQ(j.unknown[0],
            "mlx5_0:1: max width (no other active InfiniBand port of MT4129 to compare)");
}

TEST(RdmaLayerTest, RoceV2GidIsFoundAtItsIndex) {
  RdmaSnapshot s = tree("healthy");
  const RdmaPort& roce = s.devices.at(1).ports.at(0);
  EXPECT_EQ(roceV2GidIndices(roce), (std::vector<int>{1, 3}));
  EXPECT_TRUE(roceV2GidIndices(s.devices.at(0).ports.at(0)).empty());
  json j = rdmaReportJson(s);
  EXPECT_EQ(j["devices"][1]["ports"][0]["roce_v2_gid_indices"], json({1, 3}));
}

TEST(RdmaLayerTest, RocePortWithoutV2GidWarns) {
  RdmaPort p = upPort(1, "100 Gb/sec (4X EDR)", "Ethernet");
  p.gids = {{0, "fe80:0000:0000:0000:1270:fdff:fee5:38b2", "IB/RoCE v1", "eth2"},
            {2, "0000:0000:0000:0000:0000:ffff:0a00:0a0b", "IB/RoCE v1", "eth2"}};
  RdmaJudgement j = judgeRdma(oneDevice({p}));
  const RdmaFinding* f = findingAbout(j, "mlx5_0:1", "no RoCE v2 GID (GID index 0, 2");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, RdmaSeverity::kWarning);
  p.gids[1].type = "";  // a type the kernel would not tell: unknown, not a finding
  j = judgeRdma(oneDevice({p}));
  EXPECT_TRUE(j.findings.empty());
  ASSERT_EQ(j.unknown.size(), 2u);
  EXPECT_EQ(j.unknown[1], "mlx5_0:1: GID types (gid_attrs/types unreadable)");
}

TEST(RdmaLayerTest, UnknownReadingsYieldNoFindingEitherWay) {
  RdmaPort p;  // nothing could be read
  p.number = 1;
  p.unknown = {"state (absent or unreadable)", "phys_state (absent or unreadable)"};
  RdmaJudgement j = judgeRdma(oneDevice({p}));
  EXPECT_TRUE(j.findings.empty());
  EXPECT_EQ(j.unknown.size(), 2u);
  ProbeResult r = judgeRdmaLayer({rdmaReportJson(oneDevice({p}))}, {"h0"});
  EXPECT_EQ(r.outcome, ProbeOutcome::kPass);
  EXPECT_NE(r.detail.find("0 of 1 port(s) ACTIVE"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("unknown: phys_state, state"), std::string::npos) << r.detail;
}

TEST(RdmaLayerTest, SlowerThanASiblingPortWarnsAndEthernetWidthOnlyWarns) {
  RdmaJudgement j = judgeRdma(oneDevice({upPort(1, "200 Gb/sec (4X HDR)", "InfiniBand"),
                                         upPort(2, "100 Gb/sec (4X EDR)", "InfiniBand")}));
  const RdmaFinding* speed = findingAbout(j, "mlx5_0:2", "speed EDR of HDR (mlx5_0:1)");
  ASSERT_NE(speed, nullptr);
  EXPECT_EQ(speed->severity, RdmaSeverity::kWarning);
  j = judgeRdma(oneDevice(
      {upPort(1, "100 Gb/sec (4X EDR)", "Ethernet"), upPort(2, "25 Gb/sec (1X EDR)", "Ethernet")}));
  const RdmaFinding* width = findingAbout(j, "mlx5_0:2", "1X of 4X");
  ASSERT_NE(width, nullptr);
  EXPECT_EQ(width->severity, RdmaSeverity::kWarning) << "breakout cables run fewer lanes";
}

TEST(RdmaLayerTest, LinkUpButNotActiveOnInfiniBandPointsAtTheSubnetManager) {
  RdmaPort p = upPort(1, "400 Gb/sec (4X NDR)", "InfiniBand");
  p.state = 2;
  p.state_name = "INIT";
  RdmaJudgement j = judgeRdma(oneDevice({p}));
  ASSERT_EQ(j.findings.size(), 1u);
  EXPECT_EQ(j.findings[0].severity, RdmaSeverity::kFault);
  EXPECT_NE(j.findings[0].text.find("subnet manager"), std::string::npos);
}

TEST(RdmaLayerTest, SmallLockedMemoryLimitWarnsUnlessUnlimitedOrExempt) {
  RdmaSnapshot s = oneDevice({upPort(1, "400 Gb/sec (4X NDR)", "InfiniBand")});
  s.memlock_bytes = 64 << 10;
  s.cap_ipc_lock = false;
  const RdmaJudgement small = judgeRdma(s);
  const RdmaFinding* f = findingAbout(small, "host", "locked-memory limit 64 KiB");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->text.find("ulimit -l"), std::string::npos);
  s.cap_ipc_lock = true;
  EXPECT_TRUE(judgeRdma(s).findings.empty());
  s.cap_ipc_lock = false;
  s.memlock_bytes = -1;  // unlimited
  EXPECT_TRUE(judgeRdma(s).findings.empty());
  RdmaSnapshot none;
  none.memlock_bytes = 64 << 10;
  EXPECT_TRUE(judgeRdma(none).findings.empty()) << "no device, nothing to register";
}

TEST(RdmaLayerTest, NoDeviceAnywhereSkips) {
  RdmaSnapshot none;
  ProbeResult r = judgeRdmaLayer({rdmaReportJson(none), json()}, {"h0", "h1"});
  EXPECT_EQ(r.outcome, ProbeOutcome::kSkip);
  EXPECT_EQ(r.layer, core::Layer::kRdma);
  EXPECT_EQ(r.detail, "skipped: no RDMA device");
  EXPECT_EQ(rdmaReportText(none).at(0), "rdma: no RDMA device (no /class/infiniband)");
}

TEST(RdmaLayerTest, FaultFailsNamingRankHostDeviceAndPortOncePerHost) {
  json degraded = rdmaReportJson(tree("degraded"));
  ProbeResult r = judgeRdmaLayer({json(), degraded, degraded}, {"h0", "h1", "h1"});
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(r.detail.rfind("rank 1 (h1): mlx5_0:1: degraded link: 1X of 4X", 0), 0u) << r.detail;
  EXPECT_NE(r.detail.find("(+1 more)"), std::string::npos);
  EXPECT_EQ(r.evidence.size(), 3u) << "two ranks of one host read the same ports";
  EXPECT_EQ(r.culprit.hosts.at(0), "h1");
  EXPECT_NE(r.evidence.back().find("symbol_error 117"), std::string::npos);
}

TEST(RdmaLayerTest, WarningOnlyWarnsAndHealthyPasses) {
  RdmaPort p = upPort(1, "400 Gb/sec (4X NDR)", "InfiniBand");
  p.counters["link_downed"] = 1;
  ProbeResult w = judgeRdmaLayer({rdmaReportJson(oneDevice({p}))}, {"h0"});
  EXPECT_EQ(w.outcome, ProbeOutcome::kWarn);
  EXPECT_NE(w.detail.find("rank 0 (h0): mlx5_0:1: error counters"), std::string::npos);
  ProbeResult ok = judgeRdmaLayer({rdmaReportJson(tree("healthy"))}, {"h0"});
  EXPECT_EQ(ok.outcome, ProbeOutcome::kPass);
  EXPECT_EQ(ok.detail.rfind("2 device(s), 2 of 2 port(s) ACTIVE and LinkUp", 0), 0u) << ok.detail;
}

}  // namespace
}  // namespace ccscope::diagnostics
