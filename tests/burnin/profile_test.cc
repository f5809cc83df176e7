#include "burnin/profile.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace ccscope::burnin {
namespace {

TEST(ProfileTest, EveryKeyIsRead) {
  auto p = parseProfile(R"(
name = "nightly"
transport = "ucx"
ifname = "eth1"
timeout = "45s"
[preflight]
enabled = false
[pairs]
scope = "rails"
rounds = 16
seed = 7
size = "4M"
test_time = "1s"
lat_iters = 5000
degraded = 0.8
failed = 0.4
retest = false
[[sweep]]
collective = "allgather"
algo = "ring"
min_size = "1K"
max_size = "64M"
iters = 50
warmup = 10
min_busbw = "64M=20"
max_lat = "1K=50"
tolerance = "5%"
[[sweep]]
collective = "alltoall"
[soak]
duration = "2h"
interval = "30s"
links = "all"
size = 65536
test_time = "200ms"
lat_iters = 1000
collectives = ["allreduce", "alltoall"]
collective_algo = "ring"
collective_size = "8M"
degraded = 0.75
failed = 0.25
min_z = 8
[congestion]
repeats = 5
lat_iters = 3000
size = "2M"
test_time = "1s"
aggressor_size = "4M"
max_factor = 3.5
)",
                        "nightly.toml");
  ASSERT_TRUE(p.isOk()) << p.status().message();
  EXPECT_EQ(p->name, "nightly");
  EXPECT_EQ(p->transport, "ucx");
  EXPECT_EQ(p->ifname, "eth1");
  EXPECT_DOUBLE_EQ(p->timeout_s, 45);
  EXPECT_FALSE(p->preflight);
  EXPECT_EQ(p->pairs.scope, Scope::kRails);
  EXPECT_EQ(p->pairs.rounds, 16);
  EXPECT_EQ(p->pairs.seed, 7u);
  EXPECT_EQ(p->pairs.bytes, 4u << 20);
  EXPECT_DOUBLE_EQ(p->pairs.test_s, 1);
  EXPECT_EQ(p->pairs.lat_iters, 5000);
  EXPECT_DOUBLE_EQ(p->pairs.degraded, 0.8);
  EXPECT_FALSE(p->pairs.retest);
  ASSERT_EQ(p->sweeps.size(), 2u);
  EXPECT_EQ(p->sweeps[0].collective, "allgather");
  EXPECT_EQ(p->sweeps[0].min_bytes, 1024u);
  EXPECT_EQ(p->sweeps[0].max_bytes, 64u << 20);
  EXPECT_EQ(p->sweeps[0].min_busbw, "64M=20");
  EXPECT_EQ(p->sweeps[0].tolerance, "5%");
  EXPECT_EQ(p->sweeps[1].algo, "ring");  // the default
  EXPECT_TRUE(p->soak.enabled);
  EXPECT_DOUBLE_EQ(p->soak.duration_s, 7200);
  EXPECT_DOUBLE_EQ(p->soak.interval_s, 30);
  EXPECT_EQ(p->soak.bytes, 65536u);
  EXPECT_EQ(p->soak.collectives, (std::vector<std::string>{"allreduce", "alltoall"}));
  EXPECT_EQ(p->soak.collective_algo, "ring");
  EXPECT_DOUBLE_EQ(p->soak.min_z, 8);
  EXPECT_TRUE(p->congestion.enabled);
  EXPECT_EQ(p->congestion.repeats, 5);
  EXPECT_EQ(p->congestion.aggressor_bytes, 4u << 20);
  EXPECT_DOUBLE_EQ(p->congestion.max_factor, 3.5);
}

TEST(ProfileTest, DefaultsRunPreflightAndPairsOnly) {
  auto p = parseProfile("name = \"x\"\n", "x.toml");
  ASSERT_TRUE(p.isOk()) << p.status().message();
  EXPECT_TRUE(p->preflight);
  EXPECT_TRUE(p->pairs.enabled);
  EXPECT_TRUE(p->sweeps.empty());
  EXPECT_FALSE(p->soak.enabled);
  EXPECT_FALSE(p->congestion.enabled);
}

// Each bad profile fails with a message naming the key (or the line).
TEST(ProfileTest, MistakesNameTheirKey) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"tranport = \"tcp\"", "tranport: unknown key"},
      {"[pairs]\nscope = \"racks\"", "pairs.scope"},
      {"[pairs]\nlat_iters = 3", "pairs.lat_iters"},
      {"[pairs]\ndegraded = 0.2\nfailed = 0.3", "pairs.failed"},
      {"[pairs]\nsize = \"1Q\"", "pairs.size"},
      {"[soak]\nduration = \"forever\"", "soak.duration"},
      {"[soak]\nlinks = \"mesh\"", "soak.links"},
      {"[soak]\nlinks = \"none\"", "soak would sample nothing"},
      {"[soak]\ncollectives = \"allreduce\"", "soak.collectives"},
      {"[[sweep]]\nmin_size = \"1M\"\nmax_size = \"1K\"", "sweep[0].min_size"},
      {"[[sweep]]\niters = \"many\"", "sweep[0].iters"},
      {"[congestion]\nrepeats = 0", "congestion.repeats"},
      {"[congestion]\nvictims = 3", "congestion.victims: unknown key"},
      {"pairs = 3", "pairs: needs to be a table"},
      {"sweep = 1", "sweep: needs to be an array of tables"},
      {"[pairs]\nenabled = false", "no phase is enabled"},
      {"name = \"unterminated", "line 1"},
      {"[!]", "line 1"},  // a header no key starts: an error, not toml++'s assertion
      {"[[[1]]]", "line 1"},
  };
  for (const auto& [text, want] : bad) {
    auto p = parseProfile(text, "bad.toml");
    ASSERT_FALSE(p.isOk()) << text;
    EXPECT_NE(p.status().message().find(want), std::string::npos)
        << text << " -> " << p.status().message();
    EXPECT_NE(p.status().message().find("bad.toml"), std::string::npos) << p.status().message();
  }
}

TEST(ProfileTest, TheExampleProfilesLoad) {
  const std::filesystem::path dir = std::filesystem::path(CCSCOPE_SOURCE_DIR) / "deploy/profiles";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".toml") continue;
    auto p = loadProfile(e.path().string());
    EXPECT_TRUE(p.isOk()) << e.path() << ": " << p.status().message();
    ++n;
  }
  EXPECT_GE(n, 3);
  EXPECT_FALSE(loadProfile((dir / "no-such.toml").string()).isOk());
}

}  // namespace
}  // namespace ccscope::burnin
