#include "transports/tcp/tcp_transport.h"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "transports/tcp/tcp_errors.h"
#include "transports/tcp/tcp_mesh.h"
#include "transports/tcp/tcp_state.h"
#include "transports/tcp/tcp_wire.h"

namespace ccscope::transports {

using core::Code;
using core::Layer;
using core::Status;

namespace tcp_detail {

Status TcpTransport::connect(launch::Bootstrap& bootstrap, core::Deadline deadline) {
  initTable(bootstrap.rank(), bootstrap.size());
  setSpinPolicy(opts_.local_ranks);
  nstreams_ = opts_.streams;
  CCSCOPE_ASSIGN_OR_RETURN(std::vector<launch::Fd> fds, buildTcpMesh(bootstrap, opts_, deadline));
  epoll_ = launch::Fd(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) return core::errnoStatus("epoll_create1", errno, Layer::kHostNetwork);
  uint32_t cap = table_->capacity();
  streams_ = std::vector<Stream>(fds.size());
  next_.assign(static_cast<size_t>(nstreams_) * cap, kNil);
  msg_len_.assign(cap, 0);
  active_.reserve(size_);
  is_active_.assign(size_, 0);
  dead_.assign(size_, 0);
  for (size_t i = 0; i < fds.size(); ++i) {
    if (!fds[i].valid()) continue;
    Stream& st = streams_[i];
    st.fd = std::move(fds[i]);
    epoll_event ev{};
    ev.data.u32 = static_cast<uint32_t>(i);
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, st.fd.get(), &ev) != 0)
      return core::errnoStatus("epoll_ctl(ADD)", errno, Layer::kHostNetwork);
    st.registered = true;
  }
  setConnected(true);
  return Status::ok();
}

void TcpTransport::push(SlotQueue& q, int s, uint32_t slot) {
  link(s, slot) = kNil;
  if (q.tail == kNil)
    q.head = slot;
  else
    link(s, q.tail) = slot;
  q.tail = slot;
}

void TcpTransport::pop(SlotQueue& q, int s) {
  q.head = link(s, q.head);
  if (q.head == kNil) q.tail = kNil;
}

core::Result<Request> TcpTransport::doPost(Dir dir, int peer, uint32_t tag, const MemoryRegion& v) {
  const size_t len = v.len();
  CCSCOPE_ASSIGN_OR_RETURN(Request r, table_->open(dir, peer, tag, v.base(), len));
  RequestRecord& rec = table_->slot(r.slot);
  // A receive learns its part count from the stream-0 header; a send knows it now.
  int parts = dir == Dir::kSend ? tcpPartsFor(len, nstreams_) : 1;
  rec.parts_left = static_cast<uint32_t>(parts);
  for (int s = 0; s < parts; ++s)
    push(dir == Dir::kSend ? stream(peer, s).sendq : stream(peer, s).recvq, s, r.slot);
  if (!is_active_[peer]) {
    is_active_[peer] = 1;
    active_.push_back(peer);  // capacity reserved for every peer: never allocates
  }
  // Start a send at once when nothing is ahead of it: saves a progress round for latency.
  for (int s = 0; dir == Dir::kSend && s < parts && !dead_[peer]; ++s)
    if (stream(peer, s).sendq.head == r.slot) pumpSend(peer, s);
  return r;
}

bool TcpTransport::hasWork(int peer) {
  for (int s = 0; s < nstreams_; ++s) {
    const Stream& st = stream(peer, s);
    if (!st.sendq.empty() || !st.recvq.empty()) return true;
  }
  return false;
}

Status TcpTransport::progress() {
  if (!connected()) return Status::ok();
  for (size_t i = active_.size(); i-- > 0;) {
    int peer = active_[i];
    progressPeer(peer);
    if (hasWork(peer)) continue;
    is_active_[peer] = 0;
    active_[i] = active_.back();
    active_.pop_back();
  }
  return Status::ok();
}

void TcpTransport::progressPeer(int peer) {
  // Stream 0 first: its headers hand the later parts of striped receives to the other streams.
  for (int s = 0; s < nstreams_ && !dead_[peer]; ++s) {
    if (!stream(peer, s).sendq.empty() && !pumpSend(peer, s)) return;
    if (!stream(peer, s).recvq.empty() && !pumpRecv(peer, s)) return;
  }
}

bool TcpTransport::pumpSend(int peer, int s) {
  Stream& st = stream(peer, s);
  while (!st.sendq.empty()) {
    iovec iov[2 * kMaxBatchParts];
    int niov = 0, nparts = 0;
    size_t want = 0;
    for (uint32_t slot = st.sendq.head; slot != kNil && nparts < kMaxBatchParts;
         slot = link(s, slot)) {
      const RequestRecord& rec = table_->slot(slot);
      TcpPart part = tcpPartRange(rec.len, nstreams_, s);
      TcpFrameHeader& h = tx_hdrs_[nparts];
      h = {rec.tag, TcpFrameKind::kData, rec.len};
      size_t skip = nparts++ == 0 ? st.sent : 0;  // only the head part can be half written
      if (skip < kHeaderBytes)
        iov[niov++] = {reinterpret_cast<char*>(&h) + skip, kHeaderBytes - skip};
      size_t done = skip > kHeaderBytes ? skip - kHeaderBytes : 0;
      if (part.len > done) iov[niov++] = {rec.buf + part.off + done, part.len - done};
      want += kHeaderBytes + part.len - skip;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(niov);
    ssize_t n = ::sendmsg(st.fd.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      failPeer(peer, closedStatus(peer, "sendmsg", errno), nullptr);
      return false;
    }
    consumeSent(peer, s, static_cast<size_t>(n));
    if (static_cast<size_t>(n) < want) return true;  // the socket buffer is full
  }
  return true;
}

void TcpTransport::consumeSent(int peer, int s, size_t n) {
  Stream& st = stream(peer, s);
  while (!st.sendq.empty()) {
    uint32_t slot = st.sendq.head;
    size_t total = kHeaderBytes + tcpPartRange(table_->slot(slot).len, nstreams_, s).len;
    size_t take = std::min(n, total - st.sent);
    size_t payload = std::max(st.sent + take, kHeaderBytes) - std::max(st.sent, kHeaderBytes);
    if (payload > 0) table_->addBytes(slot, payload);
    st.sent += take;
    n -= take;
    if (st.sent < total) return;
    pop(st.sendq, s);
    st.sent = 0;
    finishPart(slot);
  }
}

bool TcpTransport::pumpRecv(int peer, int s) {
  Stream& st = stream(peer, s);
  while (!st.recvq.empty()) {
    if (st.got < kHeaderBytes) {
      ssize_t n = ::recv(st.fd.get(), reinterpret_cast<char*>(&st.rx) + st.got,
                         kHeaderBytes - st.got, MSG_DONTWAIT);
      if (n <= 0) return recvFailed(peer, n);
      st.got += static_cast<size_t>(n);
      if (st.got < kHeaderBytes) return true;
    }
    if (!st.matched) {
      // Cancelled receives may step aside here; with none left the header waits for a post.
      if (!onHeader(peer, s, st.recvq.head)) return false;
      if (st.recvq.empty()) return true;
      st.matched = true;
    }
    uint32_t slot = st.recvq.head;
    TcpPart part = tcpPartRange(msg_len_[slot], nstreams_, s);
    size_t done = st.got - kHeaderBytes;
    if (done < part.len) {
      size_t want = part.len - done;
      char* to = recvTarget(slot, part.off + done, want);
      ssize_t n = ::recv(st.fd.get(), to, want, MSG_DONTWAIT);
      if (n <= 0) return recvFailed(peer, n);
      st.got += static_cast<size_t>(n);
      table_->addBytes(slot, static_cast<size_t>(n));
      continue;  // read on until the part is complete or the socket is drained
    }
    pop(st.recvq, s);
    st.got = 0;
    st.matched = false;
    finishPart(slot);
  }
  return true;
}

bool TcpTransport::recvFailed(int peer, ssize_t n) {
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
  failPeer(peer, closedStatus(peer, "recv", n == 0 ? 0 : errno), nullptr);
  return false;
}

bool TcpTransport::onHeader(int peer, int s, uint32_t slot) {
  const TcpFrameHeader& h = stream(peer, s).rx;
  bool data = h.kind == TcpFrameKind::kData;
  if (data && s == 0) {
    slot = matchingRecv(peer, h.tag);
    if (slot == kNil) return true;  // every receive stepped aside: wait for the next post
  }
  RequestRecord& rec = table_->slot(slot);
  if (tcpIsAbort(h)) {
    failPeer(peer, tcpRemoteAbort(rank_, peer, h), nullptr);
  } else if (data && s == 0 && h.tag != rec.tag) {  // (a cancelled one stepped aside)
    // Tell the sender too, so both sides report the same disagreement.
    TcpFrameHeader note{h.tag, TcpFrameKind::kAbortTag, rec.tag};
    failPeer(peer, tcpTagMismatch(Code::kAborted, rank_, peer, rec.tag, h.tag).withPeer(peer),
             &note);
  } else if (data && s == 0 && h.len > rec.len && !rec.cancelled) {
    TcpFrameHeader note{h.tag, TcpFrameKind::kAbortLength, rec.len};
    failPeer(peer, tcpTooLong(Code::kAborted, rank_, peer, rec.len, h.tag, h.len).withPeer(peer),
             &note);
  } else if (!data || (s > 0 && (h.tag != rec.tag || h.len != msg_len_[slot]))) {
    failPeer(peer, tcpDesync(peer, s, h), nullptr);
  } else {
    if (s > 0) return true;
    msg_len_[slot] = h.len;
    int parts = tcpPartsFor(h.len, nstreams_);
    rec.parts_left = static_cast<uint32_t>(parts);
    for (int j = 1; j < parts; ++j) push(stream(peer, j).recvq, j, slot);
    return true;
  }
  return false;
}

void TcpTransport::finishPart(uint32_t slot) {
  RequestRecord& rec = table_->slot(slot);
  if (--rec.parts_left == 0) table_->complete(slot);
}

}  // namespace tcp_detail

std::unique_ptr<Transport> makeTcpTransport(const TransportOptions& opts) {
  return std::make_unique<tcp_detail::TcpTransport>(opts);
}

}  // namespace ccscope::transports
