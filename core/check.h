// CCSCOPE_CHECK: the one macro for program invariants. A failed check is a bug in ccscope,
// not a user error: it aborts with file:line and a message.
#pragma once

#include <string_view>

namespace ccscope::core {
[[noreturn]] void checkFailed(const char* file, int line, const char* expr, std::string_view msg);
}

#define CCSCOPE_CHECK(cond, msg)                                                 \
  do {                                                                           \
    if (!(cond)) ::ccscope::core::checkFailed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)
