#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "transports/common/hex.h"
#include "transports/common/host_identity.h"
#include "transports/ucx/ucx_impl.h"
#include "transports/ucx/ucx_tls.h"

namespace ccscope::transports {

namespace ucx {

using core::Code;
using core::Layer;
using core::Status;

namespace {

Status ucxStatus(const char* call, ucs_status_t s) {
  return Status(Code::kSystem, fmt::format("{}: {}", call, ucs_status_string(s)))
      .withLayer(Layer::kLibrary)
      .withNative(call, static_cast<long>(s));
}

void peerErrorTrampoline(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* e = static_cast<PeerRef*>(arg);
  e->t->onPeerError(e->peer, status);
}

}  // namespace

UcxTransport::~UcxTransport() { close(); }

// Peer error handling needs transports that support it; UCX 1.13's shared-memory ones do only
// when asked (UCX_POSIX_ERROR_HANDLING, UCX_SYSV_ERROR_HANDLING). A user's setting wins.
Status UcxTransport::openContext() {
  const char* tls = std::getenv("UCX_TLS");
  auto named = [&](const char* tl) { return tlsMaySelect(tls, tl); };
  if (opts_.ucx_peer_errors) {
    // Set only where the transport is in play: UCX warns about variables nothing read.
    if (named("posix")) setenv("UCX_POSIX_ERROR_HANDLING", "y", 0);
    if (named("sysv")) setenv("UCX_SYSV_ERROR_HANDLING", "y", 0);
    // In this mode a rendezvous lane's memory domain must offer invalidation, which cma's does
    // only when told to (it then only claims it): without it every large message crosses the
    // shared-memory FIFO twice, at half cma's speed. What a claim without invalidation leaves
    // is a peer being aborted reading a send buffer a moment more (docs/performance.md).
    if (named("cma")) setenv("UCX_CMA_MEMORY_INVALIDATE", "y", 0);
    // tcp's domain has no invalidation, so a rendezvous travels as active messages of at most
    // one receive segment, each received into a bounce buffer: 64 KiB ones cost a system call
    // and a wake-up per 64 KiB on both sides (docs/performance.md, "UCX vs our transports").
    // Every rank of a job sets the same: UCX does not exchange it, and a fragment larger than
    // the receiver's segment breaks that receiver.
    if (named("tcp")) setenv("UCX_TCP_RX_SEG_SIZE", "1m", 0);
    // A dead peer on shared memory is noticed only by keepalive (20 s by default in 1.13): once
    // a second keeps the notice well inside a collective's deadline.
    setenv("UCX_KEEPALIVE_INTERVAL", "1s", 0);
  }
  ucp_config_t* config = nullptr;
  if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK)
    return ucxStatus("ucp_config_read", s);
  // Learnt lazily, at the first rendezvous, an endpoint's remote id can be asked for while the
  // peer force-closes it (an abort), and UCX 1.13 answers from a new endpoint whose id fails an
  // assertion in the asker (ucp_ep.inl:215). Learnt at connect, it cannot. In this context
  // only: a later transport without error handling keeps UCX's default.
  if (const char* v = std::getenv("UCX_RESOLVE_REMOTE_EP_ID")) {
    const std::string on = v;
    ids_at_connect_ = on == "on" || on == "y" || on == "yes" || on == "1";
  } else if (opts_.ucx_peer_errors) {
    ids_at_connect_ = ucp_config_modify(config, "RESOLVE_REMOTE_EP_ID", "on") == UCS_OK;
    if (!ids_at_connect_)
      spdlog::warn(
          "ucx: this UCX does not take RESOLVE_REMOTE_EP_ID: an abort can fail an "
          "assertion in the peer (transports/README.md, \"ucx\")");
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  ucs_status_t s = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (s != UCS_OK) return ucxStatus("ucp_init", s);
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  if (s = ucp_worker_create(context_, &wp, &worker_); s != UCS_OK)
    return ucxStatus("ucp_worker_create", s);
  if (s = ucp_worker_get_efd(worker_, &efd_); s != UCS_OK)
    return ucxStatus("ucp_worker_get_efd", s);
  return Status::ok();
}

// Our abort board (docs: transports/README.md, "Abort boards"), named after the job and this
// process (two jobs may share a token); CCSCOPE_UCX_ABORT_BOARD=0 goes without, as
// ranks on different hosts do. Returns the name peers open, or "" without one.
std::string UcxTransport::createBoard(launch::Bootstrap& bs) {
  if (const char* v = std::getenv("CCSCOPE_UCX_ABORT_BOARD"); v && std::string(v) == "0") return "";
  const std::string name = uniqueShmName("ucxab", bs.jobToken(), opts_.scope, rank_);
  auto b = AbortBoard::create(name, size_);
  if (!b.isOk()) {  // no /dev/shm, or a full one: the notice still travels through UCX
    spdlog::debug("ucx: rank {} has no abort board: {}", rank_, b.status().toString());
    return "";
  }
  board_ = std::move(*b);
  return board_.name();
}

// What a rank publishes: its worker address (hex), its host's identity and its board's name,
// one per line.
Status UcxTransport::exchangeAddresses(launch::Bootstrap& bs, core::Deadline deadline) {
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  if (ucs_status_t s = ucp_worker_get_address(worker_, &addr, &len); s != UCS_OK)
    return ucxStatus("ucp_worker_get_address", s);
  const std::string host = hostIdentity();
  const std::string mine = toHex(addr, len) + "\n" + host + "\n" + createBoard(bs);
  ucp_worker_release_address(worker_, addr);
  CCSCOPE_RETURN_IF_ERROR(bs.put(fmt::format("{}ucx/{}", opts_.scope, rank_), mine));
  err_args_.resize(size_);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    CCSCOPE_ASSIGN_OR_RETURN(std::string v,
                             bs.get(fmt::format("{}ucx/{}", opts_.scope, p), deadline));
    const size_t a = v.find('\n'), b = a == std::string::npos ? a : v.find('\n', a + 1);
    std::vector<unsigned char> remote = fromHex(v.substr(0, a));
    if (remote.empty() || b == std::string::npos)
      return Status(Code::kRemoteError, fmt::format("rank {} published a malformed address", p))
          .withLayer(Layer::kBootstrap);
    if (board_.mapped() && v.compare(a + 1, b - a - 1, host) == 0) {
      AbortBoard theirs = AbortBoard::open(v.substr(b + 1));
      if (theirs.mapped()) boards_.emplace(p, std::move(theirs));
    }
    err_args_[p] = {this, p};
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(remote.data());
    ep.err_mode = opts_.ucx_peer_errors ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    if (opts_.ucx_peer_errors) {
      ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.err_handler.cb = peerErrorTrampoline;
      ep.err_handler.arg = &err_args_[p];
    }
    ucs_status_t s = ucp_ep_create(worker_, &ep, &peers_[p].ep);
    if (s == UCS_OK) s = ucp_ep_create(worker_, &ep, &peers_[p].ctrl_ep);
    if (s != UCS_OK)
      return ucxStatus("ucp_ep_create", s)
          .withPeer(p)
          .prepend(fmt::format(
              "connecting to rank {} (peer error handling needs transports that support it: "
              "UCX_TLS={})",
              p, std::getenv("UCX_TLS") ? std::getenv("UCX_TLS") : "all"));
  }
  return Status::ok();
}

// UCX wires an endpoint up at its first use, and that needs the peer to progress. A hello on
// both endpoints to and from every peer, while every rank progresses here, wires them all up
// now: at a later first use (an abort notice on the control endpoint) the peer may not be
// progressing, and the notice would wait for it. Data hellos come before any message and take
// no sequence number.
Status UcxTransport::wireUp(core::Deadline deadline) {
  static const uint64_t kHelloWord = 0;
  struct Hello {
    void* req;
    int peer;
    const char* dir;
  };
  std::vector<uint64_t> in(size_);
  std::vector<Hello> reqs;
  Status st;
  auto failed = [&](ucs_status_t s, int peer, const char* dir) {
    if (st.isOk())
      st = ucxStatus("wire-up hello", s)
               .withPeer(peer)
               .prepend(fmt::format("{} rank {}", dir, peer));
  };
  auto track = [&](ucs_status_ptr_t r, int peer, const char* dir) {
    if (UCS_PTR_IS_ERR(r)) failed(UCS_PTR_STATUS(r), peer, dir);
    if (UCS_PTR_IS_PTR(r)) reqs.push_back({r, peer, dir});
  };
  ucp_request_param_t prm{};
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    track(ucp_tag_recv_nbx(worker_, &in[p], sizeof in[p], static_cast<uint64_t>(p) << kRankShift,
                           kCtrlBit | kRankMask, &prm),
          p, "from");
    track(ucp_tag_send_nbx(peers_[p].ep, &kHelloWord, sizeof kHelloWord,
                           static_cast<uint64_t>(rank_) << kRankShift, &prm),
          p, "to");
    sendControl(p, Ctrl{CtrlKind::kHello, 0, 0, 0});
  }
  auto pending = [&] {
    bool any = false;
    for (const Hello& h : reqs) {
      ucs_status_t s = ucp_request_check_status(h.req);
      if (s == UCS_INPROGRESS) any = true;
      if (s != UCS_OK && s != UCS_INPROGRESS) failed(s, h.peer, h.dir);
    }
    return any || ctrl_inflight_ > 0 || hellos_ < size_ - 1;
  };
  while (st.isOk() && pending() && !deadline.expired()) ucp_worker_progress(worker_);
  if (st.isOk() && pending()) {
    std::string waiting;
    for (const Hello& h : reqs)
      if (ucp_request_check_status(h.req) == UCS_INPROGRESS)
        waiting += fmt::format("{}{} rank {}", waiting.empty() ? "" : ", ", h.dir, h.peer);
    st = Status(Code::kDeadlineExceeded,
                fmt::format("ucx: endpoints not wired up before the deadline ({} of {} control "
                            "hellos; data hellos still under way: {})",
                            hellos_, size_ - 1, waiting.empty() ? "none" : waiting))
             .withLayer(Layer::kBootstrap);
  }
  for (const Hello& h : reqs) {
    if (ucp_request_check_status(h.req) == UCS_INPROGRESS) ucp_request_cancel(worker_, h.req);
    ucp_request_free(h.req);
  }
  return st;
}

Status UcxTransport::connect(launch::Bootstrap& bs, core::Deadline deadline) {
  initTable(bs.rank(), bs.size(), opts_.request_slots);
  setSpinPolicy(opts_.local_ranks);
  if (size_ > kMaxRanks)
    return Status(Code::kInvalidArgument, fmt::format("ucx: at most {} ranks", kMaxRanks));
  peers_ = std::vector<Peer>(size_);
  refs_.resize(table_->capacity());
  for (uint32_t i = 0; i < refs_.size(); ++i) refs_[i] = {this, i};
  ucx_req_.assign(table_->capacity(), nullptr);
  ucx_status_.assign(table_->capacity(), UCS_OK);
  expect_seq_.assign(table_->capacity(), 0);
  CCSCOPE_RETURN_IF_ERROR(openContext());
  CCSCOPE_RETURN_IF_ERROR(exchangeAddresses(bs, deadline));
  postControlRecv();
  CCSCOPE_RETURN_IF_ERROR(wireUp(deadline));
  CCSCOPE_RETURN_IF_ERROR(bs.barrier(opts_.scope + "ucx-connected", deadline));
  board_.unlinkName();  // every peer opened it before the barrier
  collectChosen();
  setConnected(true);
  return Status::ok();
}

// The lanes of every endpoint as ucp_ep_print_info shows them ("tcp/lo", "posix/memory"):
// UCX 1.13 has no query for them.
void UcxTransport::collectChosen() {
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || !peers_[p].ep) continue;
    char* text = nullptr;
    size_t len = 0;
    FILE* f = open_memstream(&text, &len);
    if (!f) return;
    ucp_ep_print_info(peers_[p].ep, f);
    std::fclose(f);
    std::string lanes;
    // "lane[0]:  2:tcp/lo.0 md[1] ...": the resource after the index.
    for (const char* q = text; (q = std::strstr(q, "lane[")) != nullptr; ++q) {
      const char* eol = std::strchr(q, '\n');
      const std::string line(q, eol ? eol : q + std::strlen(q));
      const size_t start = line.find_first_not_of(' ', line.find("]:") + 2);
      if (start == std::string::npos) continue;
      std::string tl = line.substr(start, line.find(' ', start) - start);
      if (size_t colon = tl.find(':'); colon != std::string::npos) tl = tl.substr(colon + 1);
      if (lanes.find(tl) == std::string::npos) lanes += (lanes.empty() ? "" : " ") + tl;
    }
    std::free(text);
    chosen_ += fmt::format("{}rank {}: {}", chosen_.empty() ? "" : "; ", p, lanes);
  }
  spdlog::debug("ucx: rank {} lanes: {}", rank_, chosen_);
}

std::string UcxTransport::setupNote() const {
  const char* tls = std::getenv("UCX_TLS");
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);  // the library loaded, not the header's
  const char* devs = std::getenv("UCX_NET_DEVICES");
  return fmt::format("ucx {}.{}.{}: UCX_TLS={}{}; {} error handling{}; rank {} reaches {}", major,
                     minor, release, tls ? tls : "all (unset)",
                     devs ? fmt::format(", UCX_NET_DEVICES={}", devs) : "",
                     opts_.ucx_peer_errors ? "peer" : "no",
                     ids_at_connect_ ? " (remote endpoint ids at connect)" : "", rank_,
                     chosen_.empty() ? "?" : chosen_);
}

core::Result<MemoryKeys> UcxTransport::doRegister(char* base, size_t len, MemoryKind /*kind*/,
                                                  int /*device*/) {
  MemoryKeys k;
  if (len == 0 || !context_) return k;  // not connected: UCX registers on the fly
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = base;
  mp.length = len;
  ucp_mem_h memh = nullptr;
  if (ucs_status_t s = ucp_mem_map(context_, &mp, &memh); s != UCS_OK)
    return ucxStatus("ucp_mem_map", s);
  k.handle = memh;
  mapped_.push_back(memh);
  return k;
}

void UcxTransport::doDeregister(const MemoryRegion& mr) {
  auto memh = static_cast<ucp_mem_h>(mr.keys().handle);
  auto it = std::find(mapped_.begin(), mapped_.end(), memh);
  if (it == mapped_.end() || !context_) return;  // unmapped by close() already
  mapped_.erase(it);
  ucp_mem_unmap(context_, memh);
}

// Progress until UCX has given back every request of ours (a closed endpoint fails them), so
// nothing references a buffer when the context goes.
void UcxTransport::drainRequests(double seconds) {
  const core::Deadline until = core::Deadline::afterSeconds(seconds);
  auto busy = [&] {
    return ctrl_req_ != nullptr || ctrl_inflight_ > 0 ||
           std::any_of(ucx_req_.begin(), ucx_req_.end(), [](void* r) { return r != nullptr; });
  };
  while (busy() && !until.expired()) ucp_worker_progress(worker_);
}

// Arm the worker's event fd and sleep on it; UCS_ERR_BUSY means events are pending: progress.
void UcxTransport::blockFor(int64_t max_ns) {
  if (!worker_ || efd_ < 0) return;
  if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) return;
  pollfd pfd{efd_, POLLIN, 0};
  poll(&pfd, 1, static_cast<int>(std::max<int64_t>(1, max_ns / 1000000)));
}

void UcxTransport::close() {
  if (closed_ || !worker_) return;
  for (int p = 0; p < size_; ++p)
    if (p != rank_) failPeer(p, Status(Code::kAborted, "ucx transport closed"));
  if (ctrl_req_) ucp_request_cancel(worker_, ctrl_req_);
  for (int i = 0; ctrl_req_ && i < 1000; ++i) ucp_worker_progress(worker_);
  // What was sent gets a moment to leave (an abort notice, a last message: a rank often exits
  // right after), then every endpoint closes at once: a flush would wait on sends nobody
  // receives any more.
  ucp_request_param_t fp{};
  ucs_status_ptr_t flush = ucp_worker_flush_nbx(worker_, &fp);
  const core::Deadline flushed = core::Deadline::afterSeconds(0.2);
  while (UCS_PTR_IS_PTR(flush) && ucp_request_check_status(flush) == UCS_INPROGRESS &&
         !flushed.expired())
    ucp_worker_progress(worker_);
  const core::Deadline closing = core::Deadline::afterSeconds(5);
  for (int p = 0; p < size_ && opts_.ucx_peer_errors; ++p) {
    for (ucp_ep_h* ep : {&peers_[p].ep, &peers_[p].ctrl_ep}) {
      if (!*ep) continue;
      void* r = forceClose(*ep);
      while (r && ucp_request_check_status(r) == UCS_INPROGRESS && !closing.expired())
        ucp_worker_progress(worker_);
      if (r) ucp_request_free(r);
    }
  }
  if (UCS_PTR_IS_PTR(flush)) {
    // With peer error handling every endpoint is closed by now: what the flush still waits for
    // (sends to a peer aborted with rendezvous requests out) will never leave.
    while (!opts_.ucx_peer_errors && ucp_request_check_status(flush) == UCS_INPROGRESS &&
           !closing.expired())
      ucp_worker_progress(worker_);
    ucp_request_free(flush);
  }
  for (Peer& peer : peers_) {
    for (void*& c : peer.closing) {
      while (c && ucp_request_check_status(c) == UCS_INPROGRESS && !closing.expired())
        ucp_worker_progress(worker_);
      if (c) ucp_request_free(c);
      c = nullptr;
    }
  }
  drainRequests(2);
  for (ucp_mem_h m : mapped_) ucp_mem_unmap(context_, m);
  mapped_.clear();
  board_ = AbortBoard();
  boards_.clear();
  closed_ = true;
  setConnected(false);
  ucp_worker_destroy(worker_);
  worker_ = nullptr;
  ucp_cleanup(context_);
  context_ = nullptr;
}

}  // namespace ucx

std::unique_ptr<Transport> makeUcxTransport(const TransportOptions& opts) {
  return std::make_unique<ucx::UcxTransport>(opts);
}

}  // namespace ccscope::transports
