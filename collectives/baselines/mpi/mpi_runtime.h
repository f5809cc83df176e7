// MPI process-level set-up: init/finalize, broadcasting the rendezvous address from rank 0 when
// running under mpirun, and the library version for `ccscope info` and run metadata.
#pragma once

#include <string>

#include "core/status.h"

namespace ccscope::collectives::mpi {

core::Status initialize();
bool initialized();
void finalize();
// Rank 0's value reaches every rank.
core::Status broadcastString(std::string& value);
std::string libraryVersion();

}  // namespace ccscope::collectives::mpi
