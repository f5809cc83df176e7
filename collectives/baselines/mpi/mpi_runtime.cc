#include "collectives/baselines/mpi/mpi_runtime.h"

#include <fmt/format.h>
#include <mpi.h>

namespace ccscope::collectives::mpi {

using core::Code;
using core::Layer;
using core::Status;

static Status mpiStatus(const char* call, int rc) {
  if (rc == MPI_SUCCESS) return Status::ok();
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return Status(Code::kRemoteError, fmt::format("{} failed: {}", call, msg))
      .withLayer(Layer::kLibrary)
      .withNative(call, rc);
}

Status initialize() {
  int provided = 0;
  return mpiStatus("MPI_Init_thread",
                   MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
}

bool initialized() {
  int flag = 0, fin = 0;
  MPI_Initialized(&flag);
  MPI_Finalized(&fin);
  return flag && !fin;
}

void finalize() {
  if (initialized()) MPI_Finalize();
}

Status broadcastString(std::string& value) {
  int len = static_cast<int>(value.size());
  CCSCOPE_RETURN_IF_ERROR(mpiStatus("MPI_Bcast", MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD)));
  value.resize(len);
  return mpiStatus("MPI_Bcast", MPI_Bcast(value.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD));
}

std::string libraryVersion() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(v, &len);
  std::string s(v, len);
  if (auto nl = s.find_first_of("\n,"); nl != std::string::npos) s.resize(nl);
  return s;
}

}  // namespace ccscope::collectives::mpi
