// Host labels: one hostname on several machines or network stacks is several hosts.
#include "launch/host_identity.h"

#include <gtest/gtest.h>

namespace ccscope::launch {
namespace {

TEST(HostIdentityTest, DistinctHostnamesAreLabelledByName) {
  const auto labels =
      hostLabels({{"a", "k1", "10.0.0.1"}, {"b", "k2", "10.0.0.2"}, {"a", "k1", "10.0.0.1"}});
  EXPECT_EQ(labels, (std::vector<std::string>{"a", "b", "a"}));
}

TEST(HostIdentityTest, OneHostnameOnTwoNetworkStacksIsTwoHosts) {
  const auto labels = hostLabels({{"node", "boot/net:1", "10.0.0.1"},
                                  {"node", "boot/net:2", "10.0.0.2"},
                                  {"node", "boot/net:1", "10.0.0.9"}});
  // Ranks of one stack share the first address seen for it.
  EXPECT_EQ(labels,
            (std::vector<std::string>{"node (10.0.0.1)", "node (10.0.0.2)", "node (10.0.0.1)"}));
}

TEST(HostIdentityTest, WithoutAddressesHostsAreNumbered) {
  const auto labels = hostLabels({{"node", "k1", ""}, {"node", "k2", ""}});
  EXPECT_EQ(labels, (std::vector<std::string>{"node #0", "node #1"}));
}

TEST(HostIdentityTest, OneAddressOnTwoMachinesStillGivesTwoLabels) {
  const auto labels = hostLabels({{"node", "boot1/net:1", "172.17.0.2"},
                                  {"node", "boot2/net:1", "172.17.0.2"},
                                  {"node", "boot1/net:1", "172.17.0.2"}});
  EXPECT_NE(labels[0], labels[1]);
  EXPECT_EQ(labels[0], labels[2]);
}

TEST(HostIdentityTest, EncodingRoundTripsAndAPlainNameParses) {
  const HostIdentity id{"node", "boot/net:7", "10.1.2.3", 6};
  const HostIdentity back = decodeHostIdentity(encodeHostIdentity(id));
  EXPECT_EQ(back.name, id.name);
  EXPECT_EQ(back.key, id.key);
  EXPECT_EQ(back.addr, id.addr);
  EXPECT_EQ(back.cpus, 6);
  const HostIdentity three = decodeHostIdentity("node\tboot/net:7\t10.1.2.3");
  EXPECT_EQ(three.addr, "10.1.2.3");
  EXPECT_EQ(three.cpus, 0);
  const HostIdentity plain = decodeHostIdentity("oldhost");
  EXPECT_EQ(plain.name, "oldhost");
  EXPECT_TRUE(plain.key.empty());
}

TEST(HostIdentityTest, RanksOnAMachineCountNamespacesOfOneBootNotOtherMachines) {
  // Two network namespaces of machine boot1 share its cores; boot2 is another machine.
  EXPECT_EQ(mostRanksOnOneMachine({{"h0", "boot1/net:1", ""},
                                   {"h1", "boot1/net:2", ""},
                                   {"h2", "boot2/net:1", ""},
                                   {"h0", "boot1/net:1", ""}}),
            3);
  EXPECT_EQ(mostRanksOnOneMachine({{"a", "boot1/net:1", ""},
                                   {"b", "boot2/net:1", ""},
                                   {"c", "boot2/net:2", ""},
                                   {"d", "boot3/net:1", ""}}),
            2);
  // Without a boot id, the hostname tells machines apart.
  EXPECT_EQ(mostRanksOnOneMachine({{"old", "", ""}, {"x", "/net:9", ""}, {"y", "/net:9", ""}}), 1);
  EXPECT_EQ(mostRanksOnOneMachine({}), 0);
}

TEST(HostIdentityTest, TheMostCrowdedMachineIsTheOneWhoseRanksMostOutnumberItsCpus) {
  // boot1: 3 ranks on 2 CPUs (the fewest its ranks report); boot2: 2 ranks on 1 CPU, worse.
  EXPECT_EQ(mostCrowdedMachine({{"h0", "boot1/net:1", "", 4},
                                {"h1", "boot1/net:2", "", 2},
                                {"h0", "boot1/net:1", "", 4},
                                {"h2", "boot2/net:1", "", 1},
                                {"h2", "boot2/net:1", "", 1}})
                .ranks,
            2);
  const Crowding c = mostCrowdedMachine({{"a", "boot1/net:1", "", 2},
                                         {"b", "boot1/net:2", "", 2},
                                         {"c", "boot1/net:3", "", 2},
                                         {"d", "boot2/net:1", "", 8}});
  EXPECT_EQ(c.ranks, 3);
  EXPECT_EQ(c.cpus, 2);
  // As many ranks as CPUs, or no CPU count: nobody is crowded.
  EXPECT_EQ(mostCrowdedMachine({{"a", "boot1/net:1", "", 2}, {"b", "boot1/net:2", "", 2}}).ranks,
            0);
  EXPECT_EQ(mostCrowdedMachine({{"a", "boot1/net:1", ""}, {"b", "boot1/net:2", ""}}).ranks, 0);
}

TEST(HostIdentityTest, ThisProcessHasANameAndAKey) {
  const HostIdentity& self = localHostIdentity();
  EXPECT_FALSE(self.name.empty());
  EXPECT_NE(self.key.find("net:"), std::string::npos) << self.key;
}

}  // namespace
}  // namespace ccscope::launch
