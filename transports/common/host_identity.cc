#include "transports/common/host_identity.h"

#include <unistd.h>

#include <cctype>
#include <fstream>

namespace ccscope::transports {

std::string hostIdentity() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(boot, id);
  return std::string(host) + "/" + id;
}

std::string shmSafe(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

}  // namespace ccscope::transports
