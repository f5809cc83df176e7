#include "tests/transports/cuda_ipc/fake_cuda.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>

namespace ccscope::transports::cuda_ipc::fake {

namespace {

struct Event {
  std::atomic<uint64_t> recorded{0};
  std::atomic<uint64_t> done{0};
};

struct Stream {
  uint64_t enqueued = 0;  // under the GPU's lock
  uint64_t finished = 0;
};

enum class Kind : uint8_t { kCopy, kRecord, kWrite32, kWait32 };

struct Item {
  Stream* stream;
  Event* event = nullptr;  // a record
  uint64_t ticket = 0;
  void* dst = nullptr;  // a copy's target; a write's or wait's word
  const void* src = nullptr;
  size_t len = 0;
  Kind kind = Kind::kCopy;
  uint32_t value = 0;  // a write's value; a wait's bound (cyclic >=)
};

struct Mapping {
  size_t len;
  std::string name;
  bool owned;
};

struct Gpu {
  FakeGpuOptions opt;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Item> queue;
  std::map<char*, Mapping> maps;  // allocations and opened mappings, by base
  std::atomic<uint64_t> run{0};
  uint64_t next_name = 0;
  std::thread thread;
};

std::string g_prefix = "default";
Gpu* g_gpu = nullptr;

// A wait polls its word as a GPU's front end does: other processes' hosts and streams write it.
void runItem(const Item& it) {
  auto* word = static_cast<uint32_t*>(it.dst);
  switch (it.kind) {
    case Kind::kRecord:
      it.event->done.store(it.ticket);
      break;
    case Kind::kCopy:
      std::memcpy(it.dst, it.src, it.len);
      break;
    case Kind::kWrite32:
      std::atomic_thread_fence(std::memory_order_seq_cst);  // the default write's fence
      std::atomic_ref<uint32_t>(*word).store(it.value, std::memory_order_release);
      break;
    case Kind::kWait32:
      while (static_cast<int32_t>(std::atomic_ref<uint32_t>(*word).load(std::memory_order_acquire) -
                                  it.value) < 0)
        std::this_thread::sleep_for(std::chrono::microseconds(2));
      break;
  }
}

// Runs queued items in order, each after its delay; never returns (the rank _exit()s).
void gpuLoop(Gpu* g) {
  std::mt19937_64 rng(g->opt.seed ^ static_cast<uint64_t>(getpid()));
  for (;;) {
    Item it;
    {
      std::unique_lock<std::mutex> l(g->mu);
      g->cv.wait(l, [&] { return !g->queue.empty(); });
      it = g->queue.front();
    }
    if (g->opt.max_delay_us > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(
          static_cast<int64_t>(rng() % static_cast<uint64_t>(g->opt.max_delay_us + 1))));
    runItem(it);
    g->run.fetch_add(1);
    std::lock_guard<std::mutex> l(g->mu);
    g->queue.pop_front();
    ++it.stream->finished;
    g->cv.notify_all();
  }
}

void enqueue(Item it) {
  std::lock_guard<std::mutex> l(g_gpu->mu);
  ++it.stream->enqueued;
  g_gpu->queue.push_back(it);
  g_gpu->cv.notify_all();
}

char* mapObject(const std::string& name, bool create, size_t* len) {
  int fd = shm_open(name.c_str(), create ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0600);
  if (fd < 0) return nullptr;
  struct stat st {};
  if (create ? ftruncate(fd, static_cast<off_t>(*len)) != 0 : fstat(fd, &st) != 0) {
    ::close(fd);
    return nullptr;
  }
  if (!create) *len = static_cast<size_t>(st.st_size);
  void* p = mmap(nullptr, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}

std::string newName() {
  std::lock_guard<std::mutex> l(g_gpu->mu);
  return fmt::format("/ccscope-fakegpu-{}-{}-{}", g_prefix, getpid(), g_gpu->next_name++);
}

void putName(char* reserved, const std::string& name) {
  std::memset(reserved, 0, 64);
  name.copy(reserved, std::min<size_t>(name.size(), 63));  // NUL-terminated: the rest is zero
}

cudaError_t addressRange(const void* ptr, char** base, size_t* len) {
  std::lock_guard<std::mutex> l(g_gpu->mu);
  const char* p = static_cast<const char*>(ptr);
  auto it = g_gpu->maps.upper_bound(const_cast<char*>(p));
  if (it == g_gpu->maps.begin()) return cudaErrorInvalidValue;
  --it;
  if (p >= it->first + it->second.len) return cudaErrorInvalidValue;
  *base = it->first;
  *len = it->second.len;
  return cudaSuccess;
}

cudaError_t getMemHandle(cudaIpcMemHandle_t* h, void* base) {
  std::lock_guard<std::mutex> l(g_gpu->mu);
  auto it = g_gpu->maps.find(static_cast<char*>(base));
  if (it == g_gpu->maps.end() || !it->second.owned) return cudaErrorInvalidValue;
  putName(h->reserved, it->second.name);
  return cudaSuccess;
}

cudaError_t openMemHandle(void** ptr, cudaIpcMemHandle_t h) {
  std::string name(h.reserved, strnlen(h.reserved, 64));
  size_t len = 0;
  char* p = mapObject(name, false, &len);
  if (!p) return cudaErrorInvalidResourceHandle;
  std::lock_guard<std::mutex> l(g_gpu->mu);
  g_gpu->maps[p] = Mapping{len, name, false};
  *ptr = p;
  return cudaSuccess;
}

cudaError_t closeMemHandle(void* ptr) {
  std::lock_guard<std::mutex> l(g_gpu->mu);
  auto it = g_gpu->maps.find(static_cast<char*>(ptr));
  if (it == g_gpu->maps.end() || it->second.owned) return cudaErrorInvalidValue;
  munmap(it->first, it->second.len);
  g_gpu->maps.erase(it);
  return cudaSuccess;
}

cudaError_t streamCreate(cudaStream_t* s) {
  *s = reinterpret_cast<cudaStream_t>(new Stream);
  return cudaSuccess;
}

cudaError_t streamSynchronize(cudaStream_t s) {
  auto* st = reinterpret_cast<Stream*>(s);
  std::unique_lock<std::mutex> l(g_gpu->mu);
  const uint64_t target = st->enqueued;
  g_gpu->cv.wait(l, [&] { return st->finished >= target; });
  return cudaSuccess;
}

cudaError_t streamDestroy(cudaStream_t s) {
  streamSynchronize(s);
  delete reinterpret_cast<Stream*>(s);
  return cudaSuccess;
}

cudaError_t memcpyAsync(void* dst, const void* src, size_t len, cudaStream_t s) {
  enqueue(Item{reinterpret_cast<Stream*>(s), nullptr, 0, dst, src, len, Kind::kCopy});
  return cudaSuccess;
}

cudaError_t eventCreate(cudaEvent_t* e) {
  *e = reinterpret_cast<cudaEvent_t>(new Event);
  return cudaSuccess;
}

cudaError_t eventRecord(cudaEvent_t e, cudaStream_t s) {
  auto* ev = reinterpret_cast<Event*>(e);
  const uint64_t ticket = ev->recorded.fetch_add(1) + 1;
  enqueue(Item{reinterpret_cast<Stream*>(s), ev, ticket, nullptr, nullptr, 0, Kind::kRecord});
  return cudaSuccess;
}

cudaError_t eventQuery(cudaEvent_t e) {
  auto* ev = reinterpret_cast<Event*>(e);
  return ev->done.load() >= ev->recorded.load() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t eventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<Event*>(e);
  return cudaSuccess;
}

cudaError_t wordItem(cudaStream_t s, void* addr, uint32_t v, Kind kind) {
  Item it{reinterpret_cast<Stream*>(s)};
  it.dst = addr;
  it.kind = kind;
  it.value = v;
  enqueue(it);
  return cudaSuccess;
}

const char* errorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    default:
      return "cudaErrorUnknown";
  }
}

const char* errorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "fake CUDA error"; }

const CudaIpcOps kFake = {
    .error_name = errorName,
    .error_string = errorString,
    .get_device_count =
        [](int* n) {
          *n = 1;
          return cudaSuccess;
        },
    .get_device =
        [](int* d) {
          *d = 0;
          return cudaSuccess;
        },
    .address_range = addressRange,
    .ipc_get_mem_handle = getMemHandle,
    .ipc_open_mem_handle = openMemHandle,
    .ipc_close_mem_handle = closeMemHandle,
    .stream_create = streamCreate,
    .stream_destroy = streamDestroy,
    .stream_synchronize = streamSynchronize,
    .memcpy_async = memcpyAsync,
    .event_create = eventCreate,
    .event_record = eventRecord,
    .event_query = eventQuery,
    .event_destroy = eventDestroy,
    // Host memory is the fake device's own: its device address is its host address.
    .host_register =
        [](void* p, size_t, void** dev) {
          *dev = p;
          return cudaSuccess;
        },
    .host_unregister = [](void*) { return cudaSuccess; },
    .stream_ops_available =
        [] { return g_gpu->opt.stream_ops ? cudaSuccess : cudaErrorNotSupported; },
    .stream_write_value32 = [](cudaStream_t s, void* addr,
                               uint32_t v) { return wordItem(s, addr, v, Kind::kWrite32); },
    .stream_wait_value32 = [](cudaStream_t s, void* addr,
                              uint32_t v) { return wordItem(s, addr, v, Kind::kWait32); },
};

}  // namespace

void setFakeGpuPrefix(const std::string& prefix) { g_prefix = prefix; }

void removeFakeGpuObjects(const std::string& prefix) {
  const std::string start = fmt::format("ccscope-fakegpu-{}-", prefix);
  DIR* d = opendir("/dev/shm");
  if (!d) return;
  while (dirent* e = readdir(d))
    if (std::strncmp(e->d_name, start.c_str(), start.size()) == 0)
      shm_unlink(("/" + std::string(e->d_name)).c_str());
  closedir(d);
}

const CudaIpcOps& startFakeGpu(const FakeGpuOptions& options) {
  if (!g_gpu) {
    g_gpu = new Gpu;  // lives until the rank _exit()s
    g_gpu->opt = options;
    g_gpu->thread = std::thread(gpuLoop, g_gpu);
    g_gpu->thread.detach();
  }
  return kFake;
}

char* fakeDeviceAlloc(size_t len) {
  const std::string name = newName();
  char* p = mapObject(name, true, &len);
  if (!p) return nullptr;
  std::lock_guard<std::mutex> l(g_gpu->mu);
  g_gpu->maps[p] = Mapping{len, name, true};
  return p;
}

void fakeDeviceFree(char* p) {
  std::lock_guard<std::mutex> l(g_gpu->mu);
  auto it = g_gpu->maps.find(p);
  if (it == g_gpu->maps.end() || !it->second.owned) return;
  shm_unlink(it->second.name.c_str());
  munmap(it->first, it->second.len);
  g_gpu->maps.erase(it);
}

uint64_t fakeGpuItemsRun() { return g_gpu ? g_gpu->run.load() : 0; }

}  // namespace ccscope::transports::cuda_ipc::fake
