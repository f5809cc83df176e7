#include <ucp/api/ucp.h>

#include <cstdlib>
#include <string>

#include "transports/component_report.h"

namespace ccscope::transports {

ComponentReport probeUcx() {
  ComponentReport r{"ucx", true, ucp_get_version_string(), {}, ""};
  const char* tls = std::getenv("UCX_TLS");
  r.note = std::string("--transport ucx; UCX_TLS=") + (tls ? tls : "all (unset)") +
           " (ucx_info -d lists this host's transports)";
  return r;
}

}  // namespace ccscope::transports
