#include "tests/transports/thread_bootstrap.h"

namespace ccscope::transports::test_support {

core::Status ThreadBootstrap::put(const std::string& key, std::string_view value) {
  std::lock_guard<std::mutex> l(s_.mu);
  s_.kv[key] = std::string(value);
  s_.cv.notify_all();
  return core::Status::ok();
}

core::Result<std::string> ThreadBootstrap::get(const std::string& key, core::Deadline deadline) {
  if (before_) before_("get", key);
  std::unique_lock<std::mutex> l(s_.mu);
  while (!s_.kv.count(key)) {
    if (deadline.expired()) return core::Status(core::Code::kDeadlineExceeded, "no key " + key);
    s_.cv.wait_for(l, std::chrono::milliseconds(5));
  }
  return s_.kv[key];
}

core::Status ThreadBootstrap::barrier(const std::string& name, core::Deadline deadline) {
  if (before_) before_("barrier", name);
  std::unique_lock<std::mutex> l(s_.mu);
  ++s_.arrived[name];
  s_.cv.notify_all();
  while (s_.arrived[name] < size_) {
    if (deadline.expired()) return core::Status(core::Code::kDeadlineExceeded, "barrier " + name);
    s_.cv.wait_for(l, std::chrono::milliseconds(5));
  }
  return core::Status::ok();
}

}  // namespace ccscope::transports::test_support
