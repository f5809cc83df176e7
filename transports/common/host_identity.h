// What ranks of one host share: /dev/shm and memory.
#pragma once

#include <string>

namespace ccscope::transports {

// This host's name and boot id: two ranks with the same identity share /dev/shm and memory.
std::string hostIdentity();
// `s` as part of a /dev/shm name: letters and digits kept, anything else '_'.
std::string shmSafe(std::string s);
// A /dev/shm name for one rank's object: "/ccscope-<kind>-<token>-<pid>.<n>-<scope><rank>".
// The job token alone does not keep jobs apart (two jobs may share it, or its first
// characters); the pid and a per-process count do. Peers learn the name through the store.
std::string uniqueShmName(const std::string& kind, const std::string& token,
                          const std::string& scope, int rank);

}  // namespace ccscope::transports
