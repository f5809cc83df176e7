#include "core/status.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ccscope::core {

void checkFailed(const char* file, int line, const char* expr, std::string_view msg) {
  std::fprintf(stderr, "ccscope: internal check failed at %s:%d: %s: %.*s\n", file, line, expr,
               static_cast<int>(msg.size()), msg.data());
  std::abort();
}

const char* codeName(Code c) {
  switch (c) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "invalid-argument";
    case Code::kUnsupported:
      return "unsupported";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kDeadlineExceeded:
      return "deadline-exceeded";
    case Code::kPeerClosed:
      return "peer-closed";
    case Code::kRemoteError:
      return "remote-error";
    case Code::kAborted:
      return "aborted";
    case Code::kSystem:
      return "system";
    case Code::kInternal:
      return "internal";
    case Code::kWrongResults:
      return "wrong-results";
  }
  return "?";
}

const char* layerName(Layer l) {
  switch (l) {
    case Layer::kNone:
      return "none";
    case Layer::kBootstrap:
      return "bootstrap";
    case Layer::kHostNetwork:
      return "host-network";
    case Layer::kRdma:
      return "rdma";
    case Layer::kGpu:
      return "gpu";
    case Layer::kLibrary:
      return "library";
    case Layer::kApplication:
      return "application";
  }
  return "?";
}

const std::string& Status::empty() {
  static const std::string kEmpty;
  return kEmpty;
}

std::string Status::toString() const {
  if (isOk()) return "ok";
  std::string out = codeName(code_);
  if (layer() != Layer::kNone) out += fmt::format(" [{}]", layerName(layer()));
  if (peer() >= 0) out += fmt::format(" peer rank {}", peer());
  if (!call().empty()) out += fmt::format(" {}={}", call(), nativeCode());
  out += ": " + message();
  return out;
}

Status errnoStatus(const char* call, int err, Layer layer, int peer) {
  Code code = Code::kSystem;
  if (err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ESRCH)
    code = Code::kPeerClosed;
  if (err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH || err == EADDRINUSE)
    code = Code::kUnavailable;
  if (err == ETIMEDOUT) code = Code::kDeadlineExceeded;
  Status s(code, fmt::format("{} failed: {}", call, std::strerror(err)));
  s.withLayer(layer).withPeer(peer).withNative(call, err);
  return s;
}

}  // namespace ccscope::core
