// Status and Result<T>: the error currency across every library boundary in ccscope.
// A status names what failed (code), where in the stack (layer), which native call and code,
// which peer rank, and carries a message a user can act on.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "core/check.h"

namespace ccscope::core {

enum class Code {
  kOk,
  kInvalidArgument,
  kUnsupported,
  kUnavailable,
  kDeadlineExceeded,
  kPeerClosed,
  kRemoteError,
  kAborted,
  kSystem,
  kInternal,
  kWrongResults,
};

// Diagnosis layers, bottom to top (docs/architecture.md, "Diagnosis layers").
enum class Layer { kNone, kBootstrap, kHostNetwork, kRdma, kGpu, kLibrary, kApplication };

const char* codeName(Code c);
const char* layerName(Layer l);

// An OK status is a code and a null pointer: cheap to build, move and drop on every post of
// the data path. What only a failure needs lives behind the pointer.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), d_(std::make_unique<Detail>()) {
    d_->message = std::move(message);
  }
  Status(const Status& o) : code_(o.code_), d_(o.d_ ? std::make_unique<Detail>(*o.d_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) {
      code_ = o.code_;
      d_ = o.d_ ? std::make_unique<Detail>(*o.d_) : nullptr;
    }
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status ok() { return {}; }
  bool isOk() const { return code_ == Code::kOk; }
  explicit operator bool() const { return isOk(); }

  Code code() const { return code_; }
  Layer layer() const { return d_ ? d_->layer : Layer::kNone; }
  int peer() const { return d_ ? d_->peer : -1; }
  long nativeCode() const { return d_ ? d_->native_code : 0; }
  const std::string& call() const { return d_ ? d_->call : empty(); }
  const std::string& message() const { return d_ ? d_->message : empty(); }

  Status& withLayer(Layer l) {
    detail().layer = l;
    return *this;
  }
  Status& withPeer(int p) {
    detail().peer = p;
    return *this;
  }
  Status& withNative(std::string call, long code) {
    Detail& d = detail();
    d.call = std::move(call);
    d.native_code = code;
    return *this;
  }
  // Prefixes context ("while connecting to rank 3: ...").
  Status& prepend(const std::string& context) {
    Detail& d = detail();
    d.message = context + ": " + d.message;
    return *this;
  }

  // One line a user can read: "deadline-exceeded [host-network] peer 3 recv(): ...".
  std::string toString() const;
  void ignore() const {}

 private:
  struct Detail {
    Layer layer = Layer::kNone;
    int peer = -1;
    long native_code = 0;
    std::string call;
    std::string message;
  };
  static const std::string& empty();
  Detail& detail() {
    if (!d_) d_ = std::make_unique<Detail>();
    return *d_;
  }

  Code code_ = Code::kOk;
  std::unique_ptr<Detail> d_;
};

// errno-based failures: the one conversion helper for POSIX calls.
Status errnoStatus(const char* call, int err, Layer layer = Layer::kNone, int peer = -1);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status s) : v_(std::move(s)) {      // NOLINT
    CCSCOPE_CHECK(!std::get<Status>(v_).isOk(), "Result built from an OK status");
  }
  bool isOk() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return isOk(); }
  const Status& status() const {
    static const Status kOk;
    return isOk() ? kOk : std::get<Status>(v_);
  }
  Status takeStatus() { return isOk() ? Status{} : std::get<Status>(std::move(v_)); }
  T& value() {
    CCSCOPE_CHECK(isOk(), status().toString());
    return std::get<T>(v_);
  }
  const T& value() const {
    CCSCOPE_CHECK(isOk(), status().toString());
    return std::get<T>(v_);
  }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ccscope::core

#define CCSCOPE_RETURN_IF_ERROR(expr)    \
  do {                                   \
    ::ccscope::core::Status s_ = (expr); \
    if (!s_.isOk()) return s_;           \
  } while (0)

#define CCSCOPE_CONCAT_INNER(a, b) a##b
#define CCSCOPE_CONCAT(a, b) CCSCOPE_CONCAT_INNER(a, b)
#define CCSCOPE_ASSIGN_OR_RETURN(lhs, expr) \
  CCSCOPE_ASSIGN_OR_RETURN_IMPL(CCSCOPE_CONCAT(r_, __COUNTER__), lhs, expr)
// lhs may be a declaration ("auto x") and tmp is a name, so neither can be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define CCSCOPE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.isOk()) return tmp.takeStatus();           \
  lhs = std::move(tmp.value())
// NOLINTEND(bugprone-macro-parentheses)
