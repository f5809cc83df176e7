// `--algo native --transport mpi`: the MPI library's own collectives (MPI_Allreduce) behind the
// CollectiveBackend interface, so Open MPI's numbers come out of the same harness as ours.
#pragma once

#include <memory>

#include "collectives/collective_backend.h"

namespace ccscope::collectives::mpi {

core::Result<std::unique_ptr<CollectiveBackend>> makeMpiBackend();

}  // namespace ccscope::collectives::mpi
