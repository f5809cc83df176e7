// The RDMA sysfs reader on the recorded trees of tests/data/sysfs (made to the formats of the
// kernel's drivers/infiniband/core/sysfs.c) and on a tree with files missing: what a host shows
// is read as such, and what it does not show stays unknown.
#include "transports/probe/rdma_sysfs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace ccscope::transports {
namespace {

namespace fs = std::filesystem;

std::string treeRoot(const std::string& name) {
  return (fs::path(__FILE__).parent_path() / "../../data/sysfs" / name).lexically_normal();
}

const RdmaDevice& device(const RdmaSnapshot& s, const std::string& name) {
  for (const auto& d : s.devices)
    if (d.name == name) return d;
  ADD_FAILURE() << "no device " << name;
  static const RdmaDevice kNone;
  return kNone;
}

TEST(RdmaSysfsTest, ReadsAnActiveNdrInfiniBandPort) {
  RdmaSnapshot s = readRdmaSysfs(treeRoot("healthy"));
  ASSERT_TRUE(s.class_dir);
  ASSERT_EQ(s.devices.size(), 2u);
  const RdmaDevice& d = device(s, "mlx5_0");
  EXPECT_EQ(d.node_type, "CA");
  EXPECT_EQ(d.hca_type, "MT4129");
  EXPECT_EQ(d.fw_ver, "28.39.1002");
  EXPECT_EQ(d.board_id, "MT_0000000838");
  ASSERT_EQ(d.ports.size(), 1u);
  const RdmaPort& p = d.ports[0];
  EXPECT_EQ(p.number, 1);
  EXPECT_EQ(p.state, kPortActive);
  EXPECT_EQ(p.state_name, "ACTIVE");
  EXPECT_EQ(p.phys_state, kPhysLinkUp);
  EXPECT_EQ(p.phys_state_name, "LinkUp");
  EXPECT_EQ(p.link_layer, "InfiniBand");
  EXPECT_EQ(p.rate.width, 4);
  EXPECT_EQ(p.rate.speed, "NDR");
  EXPECT_EQ(p.lid, 0x1au);
  EXPECT_EQ(p.sm_lid, 0x1u);
  ASSERT_EQ(p.gids.size(), 1u) << "the all-zero entry at index 1 is an empty slot";
  EXPECT_EQ(p.gids[0].type, "IB/RoCE v1");
  EXPECT_EQ(p.counters.at("port_xmit_wait"), 18734u);
  EXPECT_EQ(p.counters.at("symbol_error"), 0u);
  EXPECT_EQ(p.counters.count("link_error_recovery"), 0u) << "an absent file is not a zero";
  EXPECT_TRUE(p.unknown.empty());
}

TEST(RdmaSysfsTest, ReadsTheRoceGidTableWithTypesAndNetdev) {
  RdmaSnapshot s = readRdmaSysfs(treeRoot("healthy"));
  const RdmaPort& p = device(s, "mlx5_1").ports.at(0);
  EXPECT_EQ(p.link_layer, "Ethernet");
  ASSERT_EQ(p.gids.size(), 4u);
  EXPECT_EQ(p.gids[1].index, 1);
  EXPECT_EQ(p.gids[1].type, "RoCE v2");
  EXPECT_EQ(p.gids[2].type, "IB/RoCE v1");
  EXPECT_EQ(p.gids[3].gid, "0000:0000:0000:0000:0000:ffff:0a00:0a0b");
  EXPECT_EQ(p.gids[3].ndev, "ens1f0np0");
  EXPECT_EQ(p.netdev_mtu, 9000);
  EXPECT_EQ(p.hw_counters.at("roce_adp_retrans"), 12u);
}

TEST(RdmaSysfsTest, DegradedTreeShowsOneLaneCountersAndADownPort) {
  RdmaSnapshot s = readRdmaSysfs(treeRoot("degraded"));
  const RdmaDevice& d = device(s, "mlx5_0");
  ASSERT_EQ(d.ports.size(), 2u);
  EXPECT_EQ(d.ports[0].rate.width, 1);
  EXPECT_EQ(d.ports[0].rate.speed, "EDR");
  EXPECT_EQ(d.ports[0].counters.at("link_downed"), 3u);
  EXPECT_EQ(d.ports[0].counters.at("symbol_error"), 117u);
  EXPECT_EQ(d.ports[1].rate.width, 4);
  const RdmaPort& down = device(s, "mlx5_1").ports.at(0);
  EXPECT_EQ(down.state, 1);
  EXPECT_EQ(down.state_name, "DOWN");
  EXPECT_EQ(down.phys_state_name, "Polling");
}

TEST(RdmaSysfsTest, CounterWithoutPmaStaysUnknownNotZero) {
  RdmaSnapshot s = readRdmaSysfs(treeRoot("degraded"));
  const RdmaPort& p = device(s, "mlx5_1").ports.at(0);
  EXPECT_EQ(p.counters.count("symbol_error"), 0u);
  EXPECT_EQ(p.counters.at("link_downed"), 0u);
  ASSERT_FALSE(p.unknown.empty());
  EXPECT_EQ(p.unknown[0], "counters/symbol_error (N/A (no PMA))");
}

TEST(RdmaSysfsTest, NoClassDirectoryMeansNoDevice) {
  RdmaSnapshot s = readRdmaSysfs("/nonexistent-ccscope-sysfs");
  EXPECT_FALSE(s.class_dir);
  EXPECT_TRUE(s.devices.empty());
}

TEST(RdmaSysfsTest, MissingPortFilesStayUnknown) {
  fs::path root = fs::temp_directory_path() / ("ccscope-rdma-" + std::to_string(getpid()));
  fs::create_directories(root / "class/infiniband/mlx5_9/ports/1");
  std::ofstream(root / "class/infiniband/mlx5_9/ports/1/link_layer") << "InfiniBand\n";
  RdmaSnapshot s = readRdmaSysfs(root.string());
  fs::remove_all(root);
  ASSERT_EQ(s.devices.size(), 1u);
  const RdmaPort& p = s.devices[0].ports.at(0);
  EXPECT_FALSE(p.state.has_value());
  EXPECT_FALSE(p.phys_state.has_value());
  EXPECT_FALSE(p.rate.width.has_value());
  EXPECT_EQ(p.link_layer, "InfiniBand");
  ASSERT_EQ(p.unknown.size(), 4u);  // state, phys_state, rate, counters/
  EXPECT_EQ(p.unknown[0], "state (absent or unreadable)");
}

struct RateCase {
  std::string text;
  std::optional<int> width;
  std::string speed;
  std::optional<double> total;
};

class RdmaRateTest : public ::testing::TestWithParam<RateCase> {};

TEST_P(RdmaRateTest, ParsesTheKernelsRateString) {
  const RateCase& c = GetParam();
  RdmaRate r = parseRate(c.text);
  EXPECT_EQ(r.width, c.width);
  EXPECT_EQ(r.speed, c.speed);
  EXPECT_EQ(r.total_gbps, c.total);
  EXPECT_EQ(r.lane_gbps.has_value(), !c.speed.empty());
}

INSTANTIATE_TEST_SUITE_P(
    KernelFormats, RdmaRateTest,
    ::testing::Values(RateCase{"100 Gb/sec (4X EDR)", 4, "EDR", 100.0},
                      RateCase{"400 Gb/sec (4X NDR)", 4, "NDR", 400.0},
                      RateCase{"25 Gb/sec (1X EDR)", 1, "EDR", 25.0},
                      RateCase{"200 Gb/sec (2X NDR)", 2, "NDR", 200.0},
                      RateCase{"56 Gb/sec (4X FDR)", 4, "FDR", 56.0},
                      RateCase{"2.5 Gb/sec (1X)", 1, "SDR", 2.5},  // before the " SDR" name
                      RateCase{"10 Gb/sec (4X SDR)", 4, "SDR", 10.0},
                      RateCase{"", std::nullopt, "", std::nullopt},
                      RateCase{"fast (wide)", std::nullopt, "", std::nullopt}));

}  // namespace
}  // namespace ccscope::transports
