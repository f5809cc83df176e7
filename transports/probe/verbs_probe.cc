#include <fmt/format.h>
#include <infiniband/verbs.h>

#include "transports/component_report.h"

namespace ccscope::transports {

ComponentReport probeVerbs() {
  ComponentReport r{"verbs", true, "libibverbs", {}, ""};
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n == 0) {
    r.note = "no RDMA device found (ibv_get_device_list returned none)";
  } else {
    for (int i = 0; i < n; ++i)
      r.devices.push_back(fmt::format("{} (guid {:#x})", ibv_get_device_name(list[i]),
                                      be64toh(ibv_get_device_guid(list[i]))));
  }
  if (list) ibv_free_device_list(list);
  return r;
}

}  // namespace ccscope::transports
