// This host's name and boot id: two ranks with the same identity share /dev/shm and memory.
#pragma once

#include <string>

namespace ccscope::transports {

std::string hostIdentity();

}  // namespace ccscope::transports
