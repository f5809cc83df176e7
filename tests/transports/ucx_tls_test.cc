// Which UCX_TLS values let UCX select a transport (the UCX transport's settings follow it).
#include "transports/ucx/ucx_tls.h"

#include <gtest/gtest.h>

namespace ccscope::transports::ucx {
namespace {

struct Case {
  const char* tls;
  const char* tl;
  bool selects;
};

void expectAll(std::initializer_list<Case> cases) {
  for (const Case& c : cases)
    EXPECT_EQ(tlsMaySelect(c.tls, c.tl), c.selects)
        << "UCX_TLS=" << (c.tls ? c.tls : "(unset)") << ", " << c.tl;
}

TEST(UcxTlsTest, UnsetOrAllSelectsEverything) {
  for (const char* tls : {static_cast<const char*>(nullptr), "", "all"})
    for (const char* tl : {"tcp", "posix", "sysv", "cma"}) expectAll({{tls, tl, true}});
}

TEST(UcxTlsTest, AListSelectsWhatItNamesAndItsAliases) {
  expectAll({{"tcp,self", "tcp", true},
             {"tcp,self", "cma", false},
             {"sm,self", "tcp", false},
             {"sm,self", "cma", true},
             {"shm", "sysv", true},
             {"mm,self", "posix", true},
             {"mm,self", "cma", false},
             {"posix,sysv,cma,self", "cma", true},
             {"rc,self", "tcp", false},
             {"tcp_sockcm,self", "tcp", false},  // names match whole, not as substrings
             {"\\tcp,self", "tcp", true}});
}

TEST(UcxTlsTest, ANegatedListSelectsEverythingElse) {
  expectAll({{"^tcp", "tcp", false},
             {"^tcp", "posix", true},
             {"^sm", "tcp", true},
             {"^sm", "cma", false},
             {"^ib,cma", "tcp", true},
             {"^ib,cma", "cma", false}});
}

}  // namespace
}  // namespace ccscope::transports::ucx
