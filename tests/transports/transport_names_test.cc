// What `ccscope info` lists as built in is what makeTransport can make: a transport left out of
// the build (no nvcc, no libucx-dev...) is named among the known ones only, and making it says
// it is not compiled in.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "transports/transport.h"

namespace ccscope::transports {
namespace {

bool listed(const std::string& list, const std::string& name) {
  std::istringstream in(list);
  for (std::string item; std::getline(in >> std::ws, item, ',');)
    if (item == name) return true;
  return false;
}

TEST(TransportNamesTest, BuiltInAreThoseTheFactoryMakes) {
  const std::string known = transportNames(), built = transportNames(true);
  EXPECT_TRUE(listed(built, "shm") && listed(built, "tcp")) << built;
  std::istringstream in(known);
  for (std::string name; std::getline(in >> std::ws, name, ',');) {
    auto made = makeTransport(name, TransportOptions{});
    SCOPED_TRACE(name);
    if (listed(built, name)) {
      EXPECT_TRUE(made.isOk()) << made.status().message();
    } else {
      ASSERT_FALSE(made.isOk());
      EXPECT_NE(made.status().message().find("not compiled in"), std::string::npos);
    }
  }
  std::istringstream built_in(built);
  for (std::string name; std::getline(built_in >> std::ws, name, ',');)
    EXPECT_TRUE(listed(known, name)) << name;
}

}  // namespace
}  // namespace ccscope::transports
