// Which UCX_TLS values let UCX select a transport (the UCX transport's settings follow it).
#include "transports/ucx/ucx_tls.h"

#include <gtest/gtest.h>

namespace ccscope::transports::ucx {
namespace {

TEST(UcxTlsTest, UnsetOrAllSelectsEverything) {
  for (const char* tls : {static_cast<const char*>(nullptr), "", "all"})
    for (const char* tl : {"tcp", "posix", "sysv", "cma"}) EXPECT_TRUE(tlsMaySelect(tls, tl)) << tl;
}

TEST(UcxTlsTest, AListSelectsWhatItNamesAndItsAliases) {
  EXPECT_TRUE(tlsMaySelect("tcp,self", "tcp"));
  EXPECT_FALSE(tlsMaySelect("tcp,self", "cma"));
  EXPECT_FALSE(tlsMaySelect("sm,self", "tcp"));
  EXPECT_TRUE(tlsMaySelect("sm,self", "cma"));
  EXPECT_TRUE(tlsMaySelect("shm", "sysv"));
  EXPECT_TRUE(tlsMaySelect("mm,self", "posix"));
  EXPECT_FALSE(tlsMaySelect("mm,self", "cma"));
  EXPECT_TRUE(tlsMaySelect("posix,sysv,cma,self", "cma"));
  EXPECT_FALSE(tlsMaySelect("rc,self", "tcp"));
  // Names match whole, not as substrings.
  EXPECT_FALSE(tlsMaySelect("tcp_sockcm,self", "tcp"));
  EXPECT_TRUE(tlsMaySelect("\\tcp,self", "tcp"));
}

TEST(UcxTlsTest, ANegatedListSelectsEverythingElse) {
  EXPECT_FALSE(tlsMaySelect("^tcp", "tcp"));
  EXPECT_TRUE(tlsMaySelect("^tcp", "posix"));
  EXPECT_TRUE(tlsMaySelect("^sm", "tcp"));
  EXPECT_FALSE(tlsMaySelect("^sm", "cma"));
  EXPECT_TRUE(tlsMaySelect("^ib,cma", "tcp"));
  EXPECT_FALSE(tlsMaySelect("^ib,cma", "cma"));
}

}  // namespace
}  // namespace ccscope::transports::ucx
