// What ranks of one host share: /dev/shm and memory.
#pragma once

#include <string>

namespace ccscope::transports {

// This host's name and boot id: two ranks with the same identity share /dev/shm and memory.
std::string hostIdentity();
// `s` as part of a /dev/shm name: letters and digits kept, anything else '_'.
std::string shmSafe(std::string s);

}  // namespace ccscope::transports
