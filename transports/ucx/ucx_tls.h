// Whether a UCX_TLS value lets UCX select a transport, for the settings the UCX transport makes
// only where that transport is in play (UCX warns about variables nothing read).
#pragma once

#include <string_view>

namespace ccscope::transports::ucx {

// `tls`: UCX_TLS as set (null or empty: unset, all); `tl`: one transport (tcp, posix, sysv,
// cma). A list selects what it names (all; sm and shm: the shared-memory ones; mm: posix and
// sysv); a leading ^ selects everything but what it names.
inline bool tlsMaySelect(const char* tls, std::string_view tl) {
  std::string_view v = tls ? tls : "";
  if (v.empty()) return true;
  const bool negated = v.front() == '^';
  if (negated) v.remove_prefix(1);
  const bool shared = tl == "posix" || tl == "sysv" || tl == "cma" || tl == "knem" || tl == "xpmem";
  const bool mm = tl == "posix" || tl == "sysv" || tl == "xpmem";
  bool named = false;
  while (!v.empty() && !named) {
    const size_t comma = v.find(',');
    std::string_view e = v.substr(0, comma);
    if (!e.empty() && e.front() == '\\') e.remove_prefix(1);  // \name: no alias expansion
    named = e == tl || e == "all" || ((e == "sm" || e == "shm") && shared) || (e == "mm" && mm);
    v = comma == std::string_view::npos ? std::string_view{} : v.substr(comma + 1);
  }
  return negated ? !named : named;
}

}  // namespace ccscope::transports::ucx
