#include "launch/store_server.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <map>
#include <mutex>

#include "launch/wire.h"

namespace ccscope::launch {

using core::Code;
using core::Status;

namespace {

struct Conn {
  Fd fd;
  std::string in;
  bool authed = false;
  int rank = -1;
  uint32_t role = 0;  // 0 = key/value, 1 = control
  bool said_bye = false;
};

struct Waiter {
  int fd;
  int64_t id;
};

struct RankRecord {
  RankHealth h;
  int64_t last_heartbeat_ns = 0;
  int64_t changed_ns = 0;
};

bool tokenEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

struct StoreServer::State {
  std::string token;
  int world_size = 0;
  std::vector<std::unique_ptr<Conn>> conns;
  std::map<std::string, std::string> kv;
  std::map<std::string, std::vector<Waiter>> waiters;
  mutable std::mutex mu;  // guards ranks (read by health() from other threads)
  std::vector<RankRecord> ranks;

  void reply(Conn& c, Writer& w) {
    Status s = sendFrame(c.fd.get(), w.frame(), core::Deadline::afterSeconds(2));
    if (!s.isOk()) spdlog::debug("store: reply to rank {} failed: {}", c.rank, s.toString());
  }
  void setKey(const std::string& key, std::string value);
  void handle(Conn& c, const Frame& f);
  void handleHello(Conn& c, Reader& r);
  void handleGet(Conn& c, Reader& r);
  void handleAdd(Conn& c, Reader& r);
  void handleHeartbeat(Conn& c, Reader& r, bool abort);
  void handleHealth(Conn& c, Reader& r);
  void handleBye(Conn& c);
  void onClose(Conn& c);
  std::vector<RankHealth> snapshot() const;
};

void StoreServer::State::setKey(const std::string& key, std::string value) {
  kv[key] = std::move(value);
  auto it = waiters.find(key);
  if (it == waiters.end()) return;
  for (const Waiter& w : it->second)
    for (auto& c : conns)
      if (c->fd.get() == w.fd) {
        Writer out(MsgType::kValue);
        out.i64(w.id).str(kv[key]);
        reply(*c, out);
      }
  waiters.erase(it);
}

void StoreServer::State::handleHello(Conn& c, Reader& r) {
  std::string tok, host, host_key, host_addr;
  uint32_t rank = 0, size = 0, pid = 0, role = 0;
  bool parsed = r.str(&tok) && r.u32(&rank) && r.u32(&size) && r.u32(&pid) && r.str(&host) &&
                r.u32(&role) && r.str(&host_key) && r.str(&host_addr);
  std::string why;
  if (!parsed)
    why = "malformed hello";
  else if (!tokenEquals(tok, token))
    why = "wrong job token";
  else if (static_cast<int>(size) != world_size)
    why = fmt::format("world size {} does not match the job's {}", size, world_size);
  else if (static_cast<int>(rank) >= world_size)
    why = fmt::format("rank {} out of range", rank);
  if (!why.empty()) {
    spdlog::warn("rendezvous: refused a connection: {}", why);
    Writer w(MsgType::kReject);
    w.str(why);
    reply(c, w);
    c.fd.reset();
    return;
  }
  c.authed = true;
  c.rank = static_cast<int>(rank);
  c.role = role;
  if (role == 1) {
    std::lock_guard<std::mutex> lock(mu);
    RankRecord& rec = ranks[rank];
    rec.h.state = RankState::kAlive;
    rec.h.host = host;
    rec.h.host_key = host_key;
    rec.h.host_addr = host_addr;
    rec.h.addr = peerAddressOf(c.fd.get());
    rec.last_heartbeat_ns = rec.changed_ns = core::nowNs();
  }
  Writer ok(MsgType::kHelloOk);
  reply(c, ok);
}

void StoreServer::State::handle(Conn& c, const Frame& f) {
  Reader r(f.payload);
  if (!c.authed) {
    if (f.type == MsgType::kHello)
      handleHello(c, r);
    else
      c.fd.reset();
    return;
  }
  switch (f.type) {
    case MsgType::kSet: {
      int64_t id = 0;
      std::string key, value;
      if (r.i64(&id) && r.str(&key) && r.str(&value)) setKey(key, std::move(value));
      break;
    }
    case MsgType::kGet:
      handleGet(c, r);
      break;
    case MsgType::kAdd:
      handleAdd(c, r);
      break;
    case MsgType::kHeartbeat:
    case MsgType::kAbort:
      handleHeartbeat(c, r, f.type == MsgType::kAbort);
      break;
    case MsgType::kHealth:
      handleHealth(c, r);
      break;
    case MsgType::kBye:
      handleBye(c);
      break;
    default:
      break;
  }
}

// A value known now is answered at once; otherwise the caller waits until someone sets it.
void StoreServer::State::handleGet(Conn& c, Reader& r) {
  int64_t id = 0;
  std::string key;
  if (!(r.i64(&id) && r.str(&key))) return;
  if (auto it = kv.find(key); it != kv.end()) {
    Writer w(MsgType::kValue);
    w.i64(id).str(it->second);
    reply(c, w);
  } else {
    waiters[key].push_back({c.fd.get(), id});
  }
}

namespace {

// The new count, or why there is none: the key holds something else, or the sum overflows.
core::Result<int64_t> addedCount(const std::string* value, int64_t delta) {
  int64_t v = 0;
  if (value) {
    auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), v);
    if (ec != std::errc() || end != value->data() + value->size() || value->empty())
      return Status(Code::kInvalidArgument, fmt::format("'{}' is not a count", *value));
  }
  int64_t sum = 0;
  if (__builtin_add_overflow(v, delta, &sum))
    return Status(Code::kInvalidArgument, fmt::format("{} + {} overflows", v, delta));
  return sum;
}

}  // namespace

// A failed add leaves the key as it was and answers the reason instead of a number, which the
// client turns into a status: the store thread never throws.
void StoreServer::State::handleAdd(Conn& c, Reader& r) {
  int64_t id = 0, delta = 0;
  std::string key;
  if (!(r.i64(&id) && r.str(&key) && r.i64(&delta))) return;
  auto it = kv.find(key);
  auto v = addedCount(it == kv.end() ? nullptr : &it->second, delta);
  std::string answer = v ? std::to_string(*v) : v.status().message();
  if (v) setKey(key, answer);
  Writer w(MsgType::kValue);
  w.i64(id).str(answer);
  reply(c, w);
}

// A heartbeat carries the rank's progress note; an abort, why the rank gave up.
void StoreServer::State::handleHeartbeat(Conn& c, Reader& r, bool abort) {
  std::string note;
  r.str(&note);
  std::lock_guard<std::mutex> lock(mu);
  RankRecord& rec = ranks[c.rank];
  rec.last_heartbeat_ns = core::nowNs();
  if (abort) {
    rec.h.state = RankState::kAborted;
    rec.changed_ns = rec.last_heartbeat_ns;
    rec.h.note = note;
  } else if (!note.empty()) {
    rec.h.progress = note;
  }
}

void StoreServer::State::handleHealth(Conn& c, Reader& r) {
  int64_t id = 0;
  r.i64(&id);
  auto table = snapshot();
  Writer w(MsgType::kHealthReply);
  w.i64(id).u32(static_cast<uint32_t>(table.size()));
  for (const auto& h : table)
    w.u32(h.rank)
        .u32(static_cast<uint32_t>(h.state))
        .i64(h.ms_since_heartbeat)
        .i64(h.ms_since_change)
        .str(h.host)
        .str(h.note)
        .str(h.progress)
        .str(h.addr)
        .str(h.host_key)
        .str(h.host_addr)
        .u32(static_cast<uint32_t>(h.end_signal));
  reply(c, w);
}

void StoreServer::State::handleBye(Conn& c) {
  c.said_bye = true;
  if (c.role != 1) return;
  std::lock_guard<std::mutex> lock(mu);
  RankRecord& rec = ranks[c.rank];
  if (rec.h.state != RankState::kAborted) rec.h.state = RankState::kDone;
  rec.changed_ns = core::nowNs();
}

void StoreServer::State::onClose(Conn& c) {
  if (!c.authed || c.role != 1 || c.said_bye) return;
  std::lock_guard<std::mutex> lock(mu);
  RankRecord& rec = ranks[c.rank];
  if (rec.h.state == RankState::kAlive || rec.h.state == RankState::kFrozen) {
    rec.h.state = RankState::kGone;
    rec.changed_ns = core::nowNs();
  }
}

std::vector<RankHealth> StoreServer::State::snapshot() const {
  std::lock_guard<std::mutex> lock(mu);
  int64_t now = core::nowNs();
  std::vector<RankHealth> out;
  for (const RankRecord& rec : ranks) {
    RankHealth h = rec.h;
    h.ms_since_heartbeat = rec.last_heartbeat_ns ? (now - rec.last_heartbeat_ns) / 1000000 : 0;
    h.ms_since_change = rec.changed_ns ? (now - rec.changed_ns) / 1000000 : 0;
    if (h.state == RankState::kAlive && h.ms_since_heartbeat > kFrozenAfterMs)
      h.state = RankState::kFrozen;
    out.push_back(h);
  }
  return out;
}

core::Result<std::unique_ptr<StoreServer>> StoreServer::start(const std::string& bind_host,
                                                              int port, std::string token,
                                                              int world_size) {
  CCSCOPE_ASSIGN_OR_RETURN(Fd fd, listenTcp(bind_host, port));
  CCSCOPE_RETURN_IF_ERROR(setNonBlocking(fd.get()));
  std::unique_ptr<StoreServer> s(new StoreServer());
  s->port_ = boundPort(fd.get());
  s->listen_fd_ = std::move(fd);
  s->wake_fd_ = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  s->state_ = std::make_unique<State>();
  s->state_->token = std::move(token);
  s->state_->world_size = world_size;
  s->state_->ranks.resize(world_size);
  for (int r = 0; r < world_size; ++r) s->state_->ranks[r].h.rank = r;
  s->thread_ = std::thread([p = s.get()] { p->loop(); });
  return s;
}

StoreServer::~StoreServer() {
  stop_ = true;
  uint64_t one = 1;
  if (wake_fd_.valid()) (void)!::write(wake_fd_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

std::vector<RankHealth> StoreServer::health() const { return state_->snapshot(); }

void StoreServer::noteEndSignal(int rank, int signal) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (rank >= 0 && rank < static_cast<int>(state_->ranks.size()))
    state_->ranks[rank].h.end_signal = signal;
}

void StoreServer::loop() {
  State& st = *state_;
  std::vector<pollfd> pfds;
  while (!stop_) {
    pfds.clear();
    pfds.push_back({listen_fd_.get(), POLLIN, 0});
    pfds.push_back({wake_fd_.get(), POLLIN, 0});
    for (auto& c : st.conns) pfds.push_back({c->fd.get(), POLLIN, 0});
    if (::poll(pfds.data(), pfds.size(), 500) < 0 && errno != EINTR) break;
    if (pfds[0].revents & POLLIN) {
      while (true) {
        int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        setNoDelay(fd);
        auto c = std::make_unique<Conn>();
        c->fd = Fd(fd);
        st.conns.push_back(std::move(c));
      }
    }
    for (size_t i = 2; i < pfds.size(); ++i) {
      if (!pfds[i].revents) continue;
      Conn& c = *st.conns[i - 2];
      char buf[65536];
      ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        st.onClose(c);
        c.fd.reset();
        continue;
      }
      c.in.append(buf, static_cast<size_t>(n));
      while (c.fd.valid() && c.in.size() >= sizeof(FrameHeader)) {
        FrameHeader h;
        std::memcpy(&h, c.in.data(), sizeof h);
        if (h.magic != kStoreMagic || h.version != kStoreVersion || h.length > kMaxFrame) {
          spdlog::warn("rendezvous: dropped a connection that does not speak the ccscope protocol");
          c.fd.reset();
          break;
        }
        if (c.in.size() < sizeof h + h.length) break;
        Frame f{static_cast<MsgType>(h.type), c.in.substr(sizeof h, h.length)};
        c.in.erase(0, sizeof h + h.length);
        st.handle(c, f);
      }
    }
    std::erase_if(st.conns, [](const auto& c) { return !c->fd.valid(); });
  }
}

}  // namespace ccscope::launch
