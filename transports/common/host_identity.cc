#include "transports/common/host_identity.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
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

std::string uniqueShmName(const std::string& kind, const std::string& token,
                          const std::string& scope, int rank) {
  static std::atomic<uint64_t> made{0};
  return fmt::format("/ccscope-{}-{}-{}.{}-{}{}", kind, shmSafe(token.substr(0, 16)), getpid(),
                     made.fetch_add(1), shmSafe(scope), rank);
}

}  // namespace ccscope::transports
