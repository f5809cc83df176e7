#include "launch/store_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <charconv>

#include "launch/host_identity.h"
#include "launch/wire.h"

namespace ccscope::launch {

using core::Code;
using core::Deadline;
using core::Layer;
using core::Status;

Status StoreClient::hello(Fd& fd, uint32_t role, Deadline deadline) {
  Writer w(MsgType::kHello);
  w.str(token_)
      .u32(rank_)
      .u32(size_)
      .u32(static_cast<uint32_t>(getpid()))
      .str(localHostIdentity().name)
      .u32(role)
      .str(localHostIdentity().key)
      .str(localAddressOf(fd.get()));
  CCSCOPE_RETURN_IF_ERROR(sendFrame(fd.get(), w.frame(), deadline));
  auto f = recvFrame(fd.get(), deadline);
  if (!f) return f.takeStatus().prepend("rendezvous hello");
  if (f->type == MsgType::kReject) {
    std::string why;
    Reader(f->payload).str(&why);
    return Status(Code::kInvalidArgument,
                  fmt::format("the rendezvous store at {} refused rank {}: {}", store_.toString(),
                              rank_, why))
        .withLayer(Layer::kBootstrap);
  }
  if (f->type != MsgType::kHelloOk)
    return Status(Code::kRemoteError, "unexpected answer to hello").withLayer(Layer::kBootstrap);
  return Status::ok();
}

core::Result<std::unique_ptr<StoreClient>> StoreClient::join(const HostPort& store,
                                                             std::string token, int rank, int size,
                                                             Deadline deadline) {
  std::unique_ptr<StoreClient> c(new StoreClient());
  c->rank_ = rank;
  c->size_ = size;
  c->token_ = std::move(token);
  c->store_ = store;
  for (uint32_t role : {0u, 1u}) {
    auto fd = connectTcp(store, deadline, /*retry_refused=*/true);
    if (!fd)
      return fd.takeStatus()
          .withLayer(Layer::kBootstrap)
          .prepend(fmt::format("rank {} cannot reach the rendezvous store", rank));
    Fd& slot = role == 0 ? c->kv_ : c->ctl_;
    slot = std::move(fd.value());
    Status hs = c->hello(slot, role, deadline);
    if (!hs.isOk()) {
      // Something answers on the port but not as our store (a squatter), or the store refused us.
      return hs.code() == Code::kInvalidArgument
                 ? hs
                 : hs.withLayer(Layer::kBootstrap)
                       .withPeer(0)
                       .prepend(fmt::format("{} accepted the connection but did not answer as a "
                                            "ccscope rendezvous store "
                                            "(another process holds the port?)",
                                            store.toString()));
    }
  }
  c->heartbeat_ = std::thread([p = c.get()] { p->heartbeatLoop(); });
  CCSCOPE_RETURN_IF_ERROR(c->barrier("join", deadline));
  return c;
}

StoreClient::~StoreClient() {
  finish();
  stop_ = true;
  cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
}

void StoreClient::heartbeatLoop() {
  std::unique_lock<std::mutex> lock(ctl_mu_);
  while (!stop_) {
    Writer w(MsgType::kHeartbeat);
    w.str(note_provider_ ? note_provider_() : std::string());
    if (ctl_.valid() && !sendFrame(ctl_.get(), w.frame(), Deadline::afterSeconds(1)).isOk()) break;
    cv_.wait_for(lock, std::chrono::milliseconds(kHeartbeatEveryMs));
  }
}

void StoreClient::setNoteProvider(std::function<std::string()> provider) {
  std::lock_guard<std::mutex> lock(ctl_mu_);
  note_provider_ = std::move(provider);
}

core::Result<std::string> StoreClient::request(const std::string& frame, int64_t id,
                                               Deadline deadline) {
  CCSCOPE_RETURN_IF_ERROR(sendFrame(kv_.get(), frame, deadline));
  while (true) {
    auto f = recvFrame(kv_.get(), deadline);
    if (!f) return f.takeStatus();
    Reader r(f->payload);
    int64_t got = 0;
    std::string value;
    if (f->type == MsgType::kValue && r.i64(&got) && got == id && r.str(&value)) return value;
    // A late answer to an earlier request that already timed out: skip it.
  }
}

Status StoreClient::put(const std::string& key, std::string_view value) {
  std::lock_guard<std::mutex> lock(kv_mu_);
  Writer w(MsgType::kSet);
  w.i64(next_id_.fetch_add(1, std::memory_order_relaxed)).str(key).str(value);
  return sendFrame(kv_.get(), w.frame(), Deadline::afterSeconds(10));
}

core::Result<std::string> StoreClient::get(const std::string& key, Deadline deadline) {
  std::lock_guard<std::mutex> lock(kv_mu_);
  int64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  Writer w(MsgType::kGet);
  w.i64(id).str(key);
  auto v = request(w.frame(), id, deadline);
  if (!v) return v.takeStatus().prepend(fmt::format("waiting for '{}' from the rendezvous", key));
  return v;
}

core::Result<int64_t> StoreClient::add(const std::string& key, int64_t delta, Deadline deadline) {
  std::lock_guard<std::mutex> lock(kv_mu_);
  int64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  Writer w(MsgType::kAdd);
  w.i64(id).str(key).i64(delta);
  CCSCOPE_ASSIGN_OR_RETURN(std::string v, request(w.frame(), id, deadline));
  int64_t count = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), count);
  // The store answers a failed add (a value that is no count, an overflow) with its reason.
  if (ec != std::errc() || end != v.data() + v.size() || v.empty())
    return Status(Code::kRemoteError, fmt::format("adding to '{}' at the rendezvous store {}: {}",
                                                  key, store_.toString(), v))
        .withLayer(Layer::kBootstrap)
        .withPeer(0);
  return count;
}

Status StoreClient::barrier(const std::string& name, Deadline deadline) {
  std::string key = "barrier/" + name;
  CCSCOPE_ASSIGN_OR_RETURN(int64_t arrived, add(key, 1, deadline));
  if (arrived == size_) CCSCOPE_RETURN_IF_ERROR(put(key + "/done", "1"));
  auto done = get(key + "/done", deadline);
  if (done) return Status::ok();
  Status s = done.takeStatus();
  if (s.code() != Code::kDeadlineExceeded) return s;
  auto table = health(Deadline::afterSeconds(2));
  std::string missing;
  if (table)
    for (const auto& h : *table)
      if (h.state == RankState::kNotJoined || h.state == RankState::kGone ||
          h.state == RankState::kFrozen)
        missing +=
            fmt::format("{}{} ({})", missing.empty() ? "" : ", ", h.rank, rankStateName(h.state));
  return Status(Code::kDeadlineExceeded,
                fmt::format("ranks that did not reach '{}' at the rendezvous {} in time: {}", name,
                            store_.toString(), missing.empty() ? "unknown" : missing))
      .withLayer(Layer::kBootstrap);
}

core::Result<std::vector<RankHealth>> StoreClient::health(Deadline deadline) {
  std::lock_guard<std::mutex> lock(ctl_mu_);
  int64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  Writer w(MsgType::kHealth);
  w.i64(id);
  CCSCOPE_RETURN_IF_ERROR(sendFrame(ctl_.get(), w.frame(), deadline));
  while (true) {
    auto f = recvFrame(ctl_.get(), deadline);
    if (!f) return f.takeStatus();
    Reader r(f->payload);
    int64_t got = 0;
    uint32_t n = 0;
    if (f->type != MsgType::kHealthReply || !r.i64(&got) || got != id || !r.u32(&n)) continue;
    std::vector<RankHealth> table(n);
    for (auto& h : table) {
      uint32_t rank = 0, state = 0;
      r.u32(&rank);
      r.u32(&state);
      r.i64(&h.ms_since_heartbeat);
      r.i64(&h.ms_since_change);
      r.str(&h.host);
      r.str(&h.note);
      r.str(&h.progress);
      r.str(&h.addr);
      r.str(&h.host_key);
      r.str(&h.host_addr);
      uint32_t end_signal = 0;
      r.u32(&end_signal);
      h.end_signal = static_cast<int>(end_signal);
      h.rank = static_cast<int>(rank);
      h.state = static_cast<RankState>(state);
    }
    labelHosts(table);
    return table;
  }
}

void StoreClient::reportAbort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(ctl_mu_);
  Writer w(MsgType::kAbort);
  w.str(reason);
  if (ctl_.valid()) sendFrame(ctl_.get(), w.frame(), Deadline::afterSeconds(1)).ignore();
}

void StoreClient::finish() {
  if (finished_) return;
  finished_ = true;
  std::lock_guard<std::mutex> lock(ctl_mu_);
  Writer w(MsgType::kBye);
  if (ctl_.valid()) sendFrame(ctl_.get(), w.frame(), Deadline::afterSeconds(1)).ignore();
}

}  // namespace ccscope::launch
