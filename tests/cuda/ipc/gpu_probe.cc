#include "tests/cuda/ipc/gpu_probe.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "collectives/device/cuda_device.h"

namespace ccscope::tests {

std::string gpuUnusableReason() {
  int fds[2];
  if (pipe(fds) != 0) return "pipe() failed";
  const pid_t pid = fork();
  if (pid == 0) {
    ::close(fds[0]);
    core::Status s = collectives::device::cudaUsable();
    const std::string msg = s.isOk() ? "" : s.message();
    ssize_t w = write(fds[1], msg.data(), msg.size());
    _exit(w < 0 ? 1 : 0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "the CUDA probe child crashed";
  return out;
}

}  // namespace ccscope::tests
