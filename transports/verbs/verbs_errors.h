// How the verbs transport words its failures: one place for completion statuses, failing verbs
// calls, async events and the disagreements both sides of a pair report in the same sentence.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

#include "core/status.h"

namespace ccscope::transports::verbs {

struct WcStatusInfo {
  const char* name;    // "IBV_WC_RETRY_EXC_ERR"
  const char* advice;  // what it means and what to check
};
// Every ibv_wc_status value has an entry; an unknown value gets a generic one.
WcStatusInfo wcStatusInfo(int status);
// A failed completion of work towards `peer` on `dev` ("mlx5_0:1"), native code the status.
core::Status wcError(int status, uint32_t vendor_err, int peer, const std::string& dev);
// A verbs call that returned an errno value (or nullptr with errno set).
core::Status callError(const char* call, int err, const std::string& dev, int peer = -1);
// An asynchronous event from the device, naming the event and what it ends.
core::Status asyncError(ibv_event_type type, const std::string& dev, int peer);
const char* asyncEventName(ibv_event_type type);
// `receiver` posted tag `expected`, the message from `sender` carried `got`.
core::Status tagMismatch(int receiver, int sender, uint32_t expected, uint32_t got);
core::Status tooLong(int receiver, int sender, uint64_t sent, uint64_t room);
core::Status noDevice();

}  // namespace ccscope::transports::verbs
