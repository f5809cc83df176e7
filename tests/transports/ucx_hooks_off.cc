// The conformance suite forks its ranks from this multithreaded process instead of executing
// them: libucm's memory hooks, installed as the library loads, take a process-wide lock on
// every mmap, and a rank forked while another thread held it deadlocks in ucp_init. UCX reads
// the hook settings as it loads, so the binary executes itself again with them off, before
// main. ccscope's own ranks are executed afresh and keep the hooks.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

[[gnu::constructor]] void reexecWithoutUcxMemoryHooks() {
  if (std::getenv("UCX_MEM_MMAP_HOOK_MODE")) return;
  setenv("UCX_MEM_MMAP_HOOK_MODE", "none", 1);
  setenv("UCX_MEM_MALLOC_HOOKS", "no", 1);
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t start = 0; start < all.size();) {
    const size_t end = all.find('\0', start);
    args.push_back(all.substr(start, end - start));
    start = end == std::string::npos ? all.size() : end + 1;
  }
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());  // returns only on failure: run as we are
}

}  // namespace
