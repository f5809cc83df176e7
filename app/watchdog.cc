#include "app/watchdog.h"

#include <signal.h>

namespace ccscope::app {

using core::Status;

namespace {
// Set by the SIGUSR1 handler (async-signal-safe), consumed by the watchdog thread.
std::atomic<bool> g_dump_requested{false};
void onUsr1(int) { g_dump_requested.store(true, std::memory_order_relaxed); }
}  // namespace

Watchdog::Watchdog(double timeout_s, std::function<void(double)> on_hang,
                   std::function<void()> on_dump)
    : timeout_ns_(core::secondsToNs(timeout_s)),
      on_hang_(std::move(on_hang)),
      on_dump_(std::move(on_dump)) {
  if (on_dump_) {
    struct sigaction sa {};
    sa.sa_handler = onUsr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, nullptr);
  }
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (on_dump_ && g_dump_requested.exchange(false)) on_dump_();
    int64_t started = started_ns_.load(std::memory_order_relaxed);
    if (started && core::nowNs() - started > timeout_ns_) on_hang_((core::nowNs() - started) / 1e9);
  }
}

namespace {

// Every virtual of CollectiveBackend is forwarded, so the wrapper changes nothing but the
// watchdog's view (tests/app/watchdog_test.cc checks each one against the header).
class WatchedBackend final : public collectives::CollectiveBackend {
 public:
  WatchedBackend(std::unique_ptr<CollectiveBackend> in, Watchdog& d)
      : in_(std::move(in)), dog_(d) {}
  std::string algorithm() const override { return in_->algorithm(); }
  std::string chosenAlgorithm() const override { return in_->chosenAlgorithm(); }
  std::string choiceNote() const override { return in_->choiceNote(); }
  std::string setupNote() const override { return in_->setupNote(); }
  std::string transport() const override { return in_->transport(); }
  int rank() const override { return in_->rank(); }
  int size() const override { return in_->size(); }
  Status allocate(size_t b, core::HostPages p) override { return in_->allocate(b, p); }
  // The inner backend shares only with its own kind: hand it the other wrapper's inner one.
  bool shareBuffers(CollectiveBackend& o, size_t b) override {
    auto* w = dynamic_cast<WatchedBackend*>(&o);
    return in_->shareBuffers(w ? *w->in_ : o, b);
  }
  std::string allocationNote() const override { return in_->allocationNote(); }
  char* sendBuffer() override { return in_->sendBuffer(); }
  char* recvBuffer() override { return in_->recvBuffer(); }
  collectives::DeviceRuntime* device() override { return in_->device(); }
  std::string dataPath() const override { return in_->dataPath(); }
  uint64_t segmentBytes() const override { return in_->segmentBytes(); }
  Status prepare(const collectives::OpConfig& c) override { return in_->prepare(c); }
  Status run(bool in_place, core::Deadline d) override {
    return guard([&] { return in_->run(in_place, d); });
  }
  bool capturable() const override { return in_->capturable(); }
  Status enqueue(bool in_place, core::Deadline d) override {
    return guard([&] { return in_->enqueue(in_place, d); });
  }
  Status drain(core::Deadline d, const std::function<core::Result<bool>()>& passed) override {
    return guard([&] { return in_->drain(d, passed); });
  }
  Status barrier(core::Deadline d) override {
    return guard([&] { return in_->barrier(d); });
  }
  Status maxDoubles(std::span<double> v, core::Deadline d) override {
    return guard([&] { return in_->maxDoubles(v, d); });
  }
  Status sumInts(std::span<int64_t> v, core::Deadline d) override {
    return guard([&] { return in_->sumInts(v, d); });
  }
  void corruptNextResult() override { in_->corruptNextResult(); }
  void setFlightRecorder(core::FlightRecorder* r) override {
    recorder_ = r;
    in_->setFlightRecorder(r);
  }

 private:
  template <typename F>
  Status guard(F&& f) {
    dog_.begin();
    Status s = f();
    dog_.end();
    return s;
  }
  std::unique_ptr<CollectiveBackend> in_;
  Watchdog& dog_;
};

}  // namespace

std::unique_ptr<collectives::CollectiveBackend> watched(
    std::unique_ptr<collectives::CollectiveBackend> inner, Watchdog& dog) {
  return std::make_unique<WatchedBackend>(std::move(inner), dog);
}

}  // namespace ccscope::app
