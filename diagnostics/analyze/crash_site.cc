#include "diagnostics/analyze/crash_site.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace ccscope::diagnostics {
namespace {

constexpr long kWindowLines = 64;  // a handler prints its backtrace right after the signal line
constexpr size_t kMaxFrames = 24;
constexpr size_t kHandlerDepth = 6;  // the signal trampoline sits among the first frames
constexpr int kMaxRuntimeSkips = 4;  // raise/abort/memcpy frames above the code that called them
constexpr int kMaxCrashesPerFile = 4;
constexpr size_t kMaxObjectBytes = 80;

struct Component {
  std::string_view prefix;  // of the object's base name
  std::string_view name;
  core::Layer layer;
};
constexpr std::array kComponents = {
    Component{"libnccl", "NCCL", core::Layer::kLibrary},
    Component{"librccl", "RCCL", core::Layer::kLibrary},
    Component{"libucs", "UCX", core::Layer::kLibrary},
    Component{"libuct", "UCX", core::Layer::kLibrary},
    Component{"libucp", "UCX", core::Layer::kLibrary},
    Component{"libucm", "UCX", core::Layer::kLibrary},
    Component{"libucc", "UCC", core::Layer::kLibrary},
    Component{"libmpi", "MPI", core::Layer::kLibrary},
    Component{"libopen-pal", "Open MPI", core::Layer::kLibrary},
    Component{"libopen-rte", "Open MPI", core::Layer::kLibrary},
    Component{"mca_", "Open MPI", core::Layer::kLibrary},
    Component{"libpmix", "PMIx", core::Layer::kLibrary},
    Component{"libhcoll", "HCOLL", core::Layer::kLibrary},
    Component{"libgloo", "Gloo", core::Layer::kLibrary},
    Component{"libfabric", "libfabric", core::Layer::kLibrary},
    Component{"libnvshmem", "NVSHMEM", core::Layer::kLibrary},
    Component{"libcuda.", "the CUDA driver", core::Layer::kGpu},
    Component{"libcudart", "the CUDA runtime", core::Layer::kGpu},
    Component{"libnvidia-", "the NVIDIA driver", core::Layer::kGpu},
    Component{"libibverbs", "libibverbs", core::Layer::kRdma},
    Component{"libmlx5", "the mlx5 verbs provider", core::Layer::kRdma},
    Component{"libmlx4", "the mlx4 verbs provider", core::Layer::kRdma},
    Component{"librdmacm", "librdmacm", core::Layer::kRdma},
    Component{"libefa", "the EFA verbs provider", core::Layer::kRdma},
    Component{"libbnxt_re", "the bnxt_re verbs provider", core::Layer::kRdma},
    Component{"libirdma", "the irdma verbs provider", core::Layer::kRdma},
    // Frames that name only the function (UCX's debug backtraces, gdb without symbols' objects).
    Component{"ucs_", "UCX", core::Layer::kLibrary},
    Component{"uct_", "UCX", core::Layer::kLibrary},
    Component{"ucp_", "UCX", core::Layer::kLibrary},
    Component{"ompi_", "Open MPI", core::Layer::kLibrary},
    Component{"opal_", "Open MPI", core::Layer::kLibrary},
    Component{"nccl", "NCCL", core::Layer::kLibrary},
    Component{"ibv_", "libibverbs", core::Layer::kRdma},
};

// The C and C++ runtimes (by object, or by function where a frame names only that): the
// signal trampoline, raise/abort, memcpy called from elsewhere.
bool isRuntime(std::string_view object) {
  for (std::string_view p :
       {"libc.so",       "libc-",      "libpthread",  "ld-linux",
        "libgcc_s",      "libstdc++",  "libSegFault", "libunwind",
        "libbacktrace",  "linux-vdso", "[vdso]",      "__kernel_rt_sigreturn",
        "__restore_rt",  "killpg",     "__sigaction", ".annobin_sigaction",
        "__funlockfile", "raise",      "gsignal",     "abort",
        "__GI_",         "__memcpy",   "__memmove",   "__nss_database_lookup"}) {
    if (object.starts_with(p)) return true;
  }
  return false;
}

// Frames of the signal handler itself (UCX's and Open MPI's print the backtrace from inside).
bool isHandler(std::string_view text) {
  for (std::string_view s : {"ucs_handle_error", "ucs_error_signal_handler", "ucs_debug_",
                             "ucs_fatal_error", "ucs_log_fatal_error", "__ucs_abort",
                             "opal_backtrace", "show_stackframe", "backtrace_symbols"}) {
    if (text.find(s) != std::string_view::npos) return true;
  }
  return false;
}

const Component* componentOf(std::string_view object) {
  for (const auto& c : kComponents) {
    if (object.starts_with(c.prefix)) return &c;
  }
  return nullptr;
}

std::string_view trimLeft(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

// Strips a frame index ("4  ", "#4 ", "[ 4] ", "frame #4: "); false when there is none.
bool stripFrameIndex(std::string_view& s) {
  s = trimLeft(s);
  if (s.starts_with("frame #")) s.remove_prefix(7);
  const bool bracket = s.starts_with("[");
  if (bracket || s.starts_with("#")) s.remove_prefix(1);
  s = trimLeft(s);
  size_t digits = 0;
  while (digits < s.size() && digits < 4 && std::isdigit(static_cast<unsigned char>(s[digits])))
    ++digits;
  if (digits == 0) return false;
  s.remove_prefix(digits);
  if (bracket) {
    if (!s.starts_with("]")) return false;
    s.remove_prefix(1);
  } else if (s.starts_with(":")) {
    s.remove_prefix(1);
  }
  if (s.empty() || (s.front() != ' ' && s.front() != '\t')) return false;
  s = trimLeft(s);
  return true;
}

}  // namespace

std::string frameObject(std::string_view line) {
  if (line.find("0x") == std::string_view::npos) return {};
  std::string_view rest = trimLeft(line);
  // Open MPI puts "[host:pid] " before its frame index.
  if (size_t close = rest.find(']'); rest.starts_with("[") && close != std::string_view::npos &&
                                     rest.substr(0, close).find(':') != std::string_view::npos) {
    rest.remove_prefix(close + 1);
  }
  line = rest;
  // glibc backtrace_symbols() lines carry no index: "/path/libx.so(sym+0x1f)[0x7f...]".
  if (!stripFrameIndex(rest)) rest = trimLeft(line);
  std::string_view object;
  if (size_t from = rest.find(" from "); from != std::string_view::npos) {
    object = rest.substr(from + 6);  // gdb: "0x7f... in sym () from /lib/libx.so"
  } else if (size_t in = rest.find(" in /"); in != std::string_view::npos) {
    object = rest.substr(in + 4);  // c10: "<unknown function> + 0x1f (0x7f... in /lib/libx.so)"
  } else if (rest.starts_with("0x")) {
    // UCX debug builds ("0x00000000001cb8b uct_rc_verbs_handle_failure()  src/uct/...") and gdb
    // with symbols ("0x7f.. in ncclProxyProgress (state=0x1) at proxy.cc:12"): the function
    // stands for the object.
    object = trimLeft(rest.substr(std::min(rest.size(), rest.find_first_of(" \t"))));
    if (object.starts_with("in ")) object = trimLeft(object.substr(3));
    const size_t end = object.find_first_of(" \t(");
    if (end == 0 || end == std::string_view::npos ||
        object.substr(end).find('(') == std::string_view::npos) {
      return {};
    }
    return std::string(object.substr(0, std::min(end, kMaxObjectBytes)));
  } else {
    object = rest;
  }
  object = object.substr(0, object.find_first_of(" \t()[]"));
  if (object.find('/') == std::string_view::npos && object.find(".so") == std::string_view::npos) {
    return {};
  }
  if (size_t slash = object.rfind('/'); slash != std::string_view::npos) {
    object.remove_prefix(slash + 1);
  }
  return std::string(object.substr(0, kMaxObjectBytes));
}

const FindingSpec& crashInLibrarySpec() {
  static const FindingSpec spec{
      "library.crash-in-library",
      core::Layer::kLibrary,
      reports::FindingKind::kRoot,
      40,
      "a process died of a fatal signal inside a communication library",
      "Check that the library and what calls it were built for each other (Open MPI against this "
      "UCX, PyTorch against this NCCL); pin or rebuild the pair, and read the core dump with the "
      "library's debug symbols."};
  return spec;
}

const FindingSpec& crashInGpuDriverSpec() {
  static const FindingSpec spec{
      "gpu.crash-in-driver",
      core::Layer::kGpu,
      reports::FindingKind::kRoot,
      40,
      "a process died of a fatal signal inside the CUDA driver or runtime",
      "Check the driver against the CUDA runtime the job loads (nvidia-smi, the container's CUDA "
      "compat libraries), dmesg for Xid errors at that time, and reinstall a mismatched driver."};
  return spec;
}

const FindingSpec& crashInRdmaProviderSpec() {
  static const FindingSpec spec{
      "rdma.crash-in-verbs-provider",
      core::Layer::kRdma,
      reports::FindingKind::kRoot,
      40,
      "a process died of a fatal signal inside libibverbs or its device provider",
      "Check that rdma-core (or MOFED) on the host matches the one in the container and the "
      "kernel driver (ibv_devinfo), and that /dev/infiniband is passed through."};
  return spec;
}

void CrashSite::start(std::string_view body, long line, const Event& origin) {
  if (active_ || concluded_ >= kMaxCrashesPerFile) return;
  // A bus error is where a mapping (often /dev/shm) ran out, not a fault of the code there.
  for (std::string_view bus : {"signal 7 ", "Bus error", "SIGBUS"}) {
    if (body.find(bus) != std::string_view::npos) return;
  }
  active_ = true;
  started_ = line;
  ucx_handler_ = body.find("Caught signal") != std::string_view::npos;
  gdb_ = body.find("Program received signal") != std::string_view::npos;
  origin_ = origin;
  origin_.evidence.clear();
  signal_line_ = {"", line, std::string(body.substr(0, 512))};
  frames_.clear();
}

void CrashSite::feed(std::string_view body, long line, std::vector<Event>& out) {
  if (!active_ || line == started_) return;
  if (std::string object = frameObject(body); !object.empty()) {
    frames_.push_back({std::move(object), {"", line, std::string(body.substr(0, 512))}});
  }
  if (line - started_ >= kWindowLines || frames_.size() >= kMaxFrames) conclude(out);
}

void CrashSite::finish(std::vector<Event>& out) {
  if (active_) conclude(out);
}

void CrashSite::conclude(std::vector<Event>& out) {
  active_ = false;
  ++concluded_;
  // gdb's frame #0 is the one interrupted; a handler's backtrace has the trampoline first.
  size_t fault = gdb_ ? 0 : frames_.size();
  for (size_t i = 0; !gdb_ && i < frames_.size() && i < kHandlerDepth; ++i) {
    if (isRuntime(frames_[i].object)) {
      fault = i + 1;  // the trampoline: the interrupted frame follows
      break;
    }
  }
  // UCX's handler frames may lack names and the trampoline: skip libucs's own run.
  if (fault == frames_.size() && ucx_handler_) {
    fault = 0;
    while (fault < frames_.size() && frames_[fault].object.starts_with("libucs")) ++fault;
  }
  while (fault < frames_.size() && isHandler(frames_[fault].where.text)) ++fault;
  for (int skips = 0;
       fault < frames_.size() && isRuntime(frames_[fault].object) && skips < kMaxRuntimeSkips;
       ++skips) {
    ++fault;
  }
  if (fault >= frames_.size()) return;
  const Frame& f = frames_[fault];
  const Component* c = componentOf(f.object);
  // A transport's failure handler aborts on an error the network reported, not on its own bug.
  if (c == nullptr || f.where.text.find("handle_failure") != std::string::npos ||
      f.where.text.find("completion_with_err") != std::string::npos) {
    return;
  }
  Event e = origin_;
  e.spec = c->layer == core::Layer::kGpu    ? &crashInGpuDriverSpec()
           : c->layer == core::Layer::kRdma ? &crashInRdmaProviderSpec()
                                            : &crashInLibrarySpec();
  e.verdict = fmt::format("a process died of a fatal signal inside {} ({})", f.object, c->name);
  e.evidence = {signal_line_, f.where};
  out.push_back(std::move(e));
}

}  // namespace ccscope::diagnostics
