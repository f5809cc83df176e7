#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "transports/tcp/tcp_errors.h"
#include "transports/tcp/tcp_state.h"

namespace ccscope::transports::tcp_detail {

using core::Code;
using core::Layer;
using core::Status;

Status TcpTransport::closedStatus(int peer, const char* call, int err) {
  // A peer that found a protocol error leaves an abort frame before it shuts down: prefer it.
  Stream& s0 = stream(peer, 0);
  TcpFrameHeader h;
  if (s0.got == 0 && ::recv(s0.fd.get(), &h, sizeof h, MSG_PEEK | MSG_DONTWAIT) == sizeof h &&
      tcpIsAbort(h))
    return tcpRemoteAbort(rank_, peer, h);
  return tcpConnectionError(rank_, peer, call, err);
}

void TcpTransport::failPeer(int peer, const Status& st, const TcpFrameHeader* notify) {
  if (dead_[peer]) return;
  dead_[peer] = 1;
  Stream& s0 = stream(peer, 0);
  // The notice must start at a frame boundary to be readable: best effort, never blocking.
  if (notify && s0.sent == 0)
    (void)::send(s0.fd.get(), notify, sizeof *notify, MSG_NOSIGNAL | MSG_DONTWAIT);
  for (int s = 0; s < nstreams_; ++s) {
    Stream& x = stream(peer, s);
    if (x.registered) epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, x.fd.get(), nullptr);
    x.registered = false;
    ::shutdown(x.fd.get(), SHUT_RDWR);
    x.sendq = x.recvq = SlotQueue{};
    x.sent = x.got = 0;
    x.matched = false;
  }
  table_->failPeer(peer, st);
}

uint32_t TcpTransport::matchingRecv(int peer, uint32_t tag) {
  Stream& s0 = stream(peer, 0);
  while (!s0.recvq.empty()) {
    uint32_t slot = s0.recvq.head;
    const RequestRecord& rec = table_->slot(slot);
    if (!rec.cancelled || rec.tag == tag) return slot;
    pop(s0.recvq, 0);  // a cancelled receive this is not the late message of: it steps aside
    table_->drop(slot);
  }
  return kNil;
}

char* TcpTransport::recvTarget(uint32_t slot, size_t off, size_t& want) {
  RequestRecord& rec = table_->slot(slot);
  if (rec.buf) return rec.buf + off;
  discard_.resize(size_t{1} << 16);
  want = std::min(want, discard_.size());
  return discard_.data();
}

bool TcpTransport::unlink(SlotQueue& q, int s, uint32_t slot) {
  uint32_t prev = kNil;
  for (uint32_t at = q.head; at != kNil; prev = at, at = link(s, at)) {
    if (at != slot) continue;
    if (prev == kNil)
      q.head = link(s, at);
    else
      link(s, prev) = link(s, at);
    if (q.tail == slot) q.tail = prev;
    return true;
  }
  return false;
}

void TcpTransport::cancelPending(uint32_t slot) {
  const RequestRecord& rec = table_->slot(slot);
  const int peer = rec.peer;
  if (rec.dir == Dir::kRecv || dead_[peer]) return;  // receives stay in order as sinks
  // A send none of whose bytes left is withdrawn from every stream; one that partly left
  // cannot be taken back from the peer's byte stream. A striped send may have finished a part
  // on one stream while its first still waits on another: that part left too.
  bool started =
      rec.bytes > 0 || rec.parts_left < static_cast<uint32_t>(tcpPartsFor(rec.len, nstreams_));
  for (int s = 0; s < nstreams_ && !started; ++s)
    started = stream(peer, s).sendq.head == slot && stream(peer, s).sent > 0;
  if (started) {
    abortPeer(peer, Status(Code::kAborted,
                           fmt::format("rank {} cancelled a send to rank {} that had partly left",
                                       rank_, peer)));
    return;
  }
  for (int s = 0; s < nstreams_; ++s) unlink(stream(peer, s).sendq, s, slot);
  table_->drop(slot);
}

void TcpTransport::abortPeer(int peer, const Status& why) {
  if (!connected() || peer < 0 || peer >= size_ || peer == rank_ || dead_[peer]) return;
  TcpFrameHeader note{0, TcpFrameKind::kAbortPeer, 0};
  failPeer(peer,
           Status(Code::kAborted, why.message()).withLayer(Layer::kApplication).withPeer(peer),
           &note);
}

void TcpTransport::rearm() {
  // Interest changes only here, before sleeping: the spinning fast path makes no epoll_ctl.
  for (size_t i = 0; i < streams_.size(); ++i) {
    Stream& st = streams_[i];
    if (!st.registered) continue;
    uint32_t want =
        (st.recvq.empty() ? 0u : uint32_t{EPOLLIN}) | (st.sendq.empty() ? 0u : uint32_t{EPOLLOUT});
    if (want == st.armed) continue;
    epoll_event ev{};
    ev.events = want;
    ev.data.u32 = static_cast<uint32_t>(i);
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, st.fd.get(), &ev) == 0) st.armed = want;
  }
}

void TcpTransport::blockFor(int64_t max_ns) {
  if (!connected()) return;
  rearm();
  int ms = static_cast<int>((max_ns + 999'999) / 1'000'000);
  int n = epoll_wait(epoll_.get(), events_, kMaxEvents, ms);
  for (int i = 0; i < n; ++i) {
    // Errors on a socket with no work would wake us forever: the peer is gone, record it now.
    uint32_t idx = events_[i].data.u32;
    Stream& st = streams_[idx];
    if (!(events_[i].events & (EPOLLERR | EPOLLHUP)) || !st.sendq.empty() || !st.recvq.empty())
      continue;
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(st.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    int peer = static_cast<int>(idx) / nstreams_;
    failPeer(peer, closedStatus(peer, "epoll_wait", err), nullptr);
  }
}

void TcpTransport::close() {
  if (connected()) {
    const Status closed(Code::kAborted, "tcp transport closed");
    for (int p = 0; p < size_; ++p)
      if (p != rank_) table_->failPeer(p, closed);
  }
  for (Stream& st : streams_)
    if (st.fd.valid()) ::shutdown(st.fd.get(), SHUT_RDWR);
  setConnected(false);
  streams_.clear();
  active_.clear();
  epoll_.reset();
}

}  // namespace ccscope::transports::tcp_detail
