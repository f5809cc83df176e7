#include "transports/shm/shm_transport.h"

#include <fmt/format.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "launch/socket_util.h"
#include "transports/common/fixed_queue.h"
#include "transports/common/host_identity.h"
#include "transports/shm/shm_address.h"
#include "transports/shm/shm_segment.h"
#include "transports/shm/shm_state.h"
#include "transports/shm/single_copy.h"

namespace ccscope::transports {

using core::Code;
using core::Layer;
using core::Status;
using namespace shm;

namespace shm_detail {

namespace {

// An address in a peer's address space, as it published it: only ever handed to the kernel
// (process_vm_readv), never dereferenced here.
void* remoteAddress(uint64_t addr) {
  return reinterpret_cast<void*>(addr);  // NOLINT(performance-no-int-to-ptr)
}

}  // namespace

Status ShmTransport::probeSingleCopy(int p, uint64_t remote_header) {
  uint32_t got = 0;
  iovec local{&got, sizeof got};
  iovec remote{remoteAddress(remote_header + offsetof(SegmentHeader, probe)), sizeof got};
  ssize_t n = process_vm_readv(peers_[p].pid, &local, 1, &remote, 1, 0);
  if (n == sizeof got && got == peers_[p].seg.header()->probe) return Status::ok();
  return core::errnoStatus("process_vm_readv", n < 0 ? errno : EIO, Layer::kLibrary, p);
}

Status ShmTransport::connect(launch::Bootstrap& bs, core::Deadline deadline) {
  initTable(bs.rank(), bs.size());
  setSpinPolicy(opts_.local_ranks);
  const SingleCopyThreshold threshold =
      singleCopyThreshold(opts_.single_copy_from, oversubscribed());
  single_copy_from_ = threshold.from_bytes;
  // The scope keeps a second instance (the harness's channel) apart in /dev/shm, in the store
  // and in the log.
  const std::string scope = opts_.scope;
  const std::string who = scope.empty() ? "shm" : fmt::format("shm ({})", scope);
  spdlog::debug("{}: single copy from {} B ({})", who, single_copy_from_, threshold.why);
  remote_seq_.assign(table_->capacity(), 0);
  const std::string name = uniqueShmName("shm", bs.jobToken(), scope, rank_);
  CCSCOPE_ASSIGN_OR_RETURN(own_, Segment::create(name, size_));
  const bool prefault = prefaultFits(size_);
  if (prefault)
    own_.prefault();  // we read every ring
  else
    spdlog::info(
        "{}: {} segments of {} B would take more than half of /dev/shm's free space; "
        "their pages are mapped as messages reach them",
        who, size_, segmentBytes(size_));
  const std::string me = hostIdentity();
  CCSCOPE_RETURN_IF_ERROR(
      bs.put(fmt::format("{}shm/{}", scope, rank_),
             encodeAddress({getpid(), reinterpret_cast<uintptr_t>(own_.header()), name, me})));
  peers_.resize(size_);
  for (int p = 0; p < size_; ++p) {
    Peer& peer = peers_[p];
    peer.sends = FixedQueue(table_->capacity());
    peer.remote_inflight = FixedQueue(table_->capacity());
    peer.recvs = FixedQueue(table_->capacity());
    if (p == rank_) continue;
    CCSCOPE_ASSIGN_OR_RETURN(std::string v, bs.get(fmt::format("{}shm/{}", scope, p), deadline));
    CCSCOPE_ASSIGN_OR_RETURN(ShmAddress pa, decodeAddress(v, p, rank_, me));
    peer.pid = pa.pid;
    CCSCOPE_ASSIGN_OR_RETURN(peer.seg, Segment::open(pa.name, size_));
    if (prefault) peer.seg.prefault(rank_);  // the ring we write into
    peer.pidfd = launch::Fd(static_cast<int>(syscall(SYS_pidfd_open, peer.pid, 0)));
    if (single_copy_ && !probeSingleCopy(p, pa.header).isOk()) {
      spdlog::info(
          "{}: single-copy (process_vm_readv) not permitted toward rank {}; copying "
          "through shared slots instead",
          who, p);
      single_copy_ = false;
    }
  }
  CCSCOPE_RETURN_IF_ERROR(bs.barrier(scope + "shm-mapped", deadline));
  own_.unlinkName();  // every peer mapped it: nothing to leak in /dev/shm from here on
  setConnected(true);
  return Status::ok();
}

void ShmTransport::fillSlot(Peer& peer, uint32_t slot, Slot& s) {
  RequestRecord& rec = table_->slot(slot);
  if (single_copy_ && rec.len >= single_copy_from_) {
    s.kind = kRemote;
    s.chunk_len = rec.len;
    s.addr = reinterpret_cast<uintptr_t>(rec.buf);
    remote_seq_[slot] = peer.head;
    peer.remote_inflight.push(slot);
    peer.sends.pop();
  } else {
    // The receiver may be polling the slot's first line (seq): that line is written last,
    // the bytes after it first, so it is taken from the receiver once, not twice.
    size_t chunk = std::min<size_t>(kSlotBytes, rec.len - peer.send_off);
    size_t first = std::min(chunk, kFirstLineData);
    const char* src = rec.buf + peer.send_off;
    std::memcpy(s.data + first, src + first, chunk - first);
    std::memcpy(s.data, src, first);
    s.kind = kInline;
    s.chunk_len = chunk;
    peer.send_off += chunk;
    table_->addBytes(slot, chunk);
    if (peer.send_off == rec.len) {
      table_->complete(slot);
      peer.sends.pop();
      peer.send_off = 0;
    }
  }
}

void ShmTransport::progressSends(int p) {
  Peer& peer = peers_[p];
  if (peer.sends.empty() && peer.remote_inflight.empty()) return;
  if (peer.gone) {  // nobody will ever take them
    failSends(p);
    return;
  }
  Ring* ring = peer.seg.ring(rank_);
  if (peer.head - peer.peer_tail >= kSlots || !peer.remote_inflight.empty())
    peer.peer_tail = ring->tail.load(std::memory_order_acquire);
  const uint64_t tail = peer.peer_tail;
  bool any = false;
  while (!peer.sends.empty() && peer.head - tail < kSlots) {
    uint32_t slot = peer.sends.front();
    RequestRecord& rec = table_->slot(slot);
    if (rec.cancelled) {  // withdrawn before any of it was published (cancelPending)
      peer.sends.pop();
      table_->drop(slot);
      continue;
    }
    Slot& s = ring->slots[peer.head % kSlots];
    fillSlot(peer, slot, s);
    s.tag = rec.tag;
    s.msg_len = rec.len;
    shm::publish(s, peer.head++);
    any = true;
  }
  while (!peer.remote_inflight.empty() && remote_seq_[peer.remote_inflight.front()] < tail) {
    uint32_t slot = peer.remote_inflight.front();
    table_->addBytes(slot, table_->slot(slot).len);
    table_->complete(slot);
    peer.remote_inflight.pop();
    ++events_;
  }
  if (any) {
    ++events_;
    peer.seg.ring_doorbell();
  }
}

bool ShmTransport::readRemote(int p, char* dst, uint64_t addr, uint64_t len) {
  // One call moves at most 2 GiB - 4 KiB (MAX_RW_COUNT); a cancelled receive reads into a
  // discard buffer so the sender's slot is still consumed in order.
  for (uint64_t done = 0; done < len;) {
    uint64_t want = len - done;
    char* to = dst ? dst + done : nullptr;
    if (!dst) {
      discard_.resize(size_t{1} << 20);
      want = std::min<uint64_t>(want, discard_.size());
      to = discard_.data();
    }
    iovec local{to, want};
    iovec remote{remoteAddress(addr + done), want};
    ssize_t n = process_vm_readv(peers_[p].pid, &local, 1, &remote, 1, 0);
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      failPeer(p, err == ESRCH ? exitedStatus(p)
                               : core::errnoStatus("process_vm_readv", err, Layer::kLibrary));
      return false;
    }
    done += static_cast<uint64_t>(n);
  }
  return true;
}

bool ShmTransport::matchHead(int p, Slot& s) {
  Peer& peer = peers_[p];
  Ring* ring = own_.ring(p);
  while (!peer.recvs.empty()) {
    uint32_t slot = peer.recvs.front();
    RequestRecord& rec = table_->slot(slot);
    if (rec.cancelled && s.tag != rec.tag) {  // not the late message it waited for: step aside
      peer.recvs.pop();
      table_->drop(slot);
      continue;
    }
    if (!rec.cancelled && (s.tag != rec.tag || s.msg_len > rec.len)) {
      bool tag = s.tag != rec.tag;
      ring->fault_expected = tag ? rec.tag : rec.len;
      ring->fault_got = tag ? s.tag : s.msg_len;
      ring->fault.store(tag ? kTagMismatch : kTooLong, std::memory_order_release);
      peer.seg.ring_doorbell(/*force=*/true);
      failPeer(p, mismatchStatus(rank_, p, *ring));
      return false;
    }
    peer.recv_started = true;
    return true;
  }
  return true;  // every receive stepped aside: the message waits for the next one posted
}

void ShmTransport::progressRecvs(int p) {
  Peer& peer = peers_[p];
  Ring* ring = own_.ring(p);
  bool consumed = false;
  while (!peer.recvs.empty()) {
    Slot& s = ring->slots[peer.tail % kSlots];
    if (!shm::published(s, peer.tail)) break;
    if (!peer.recv_started && !matchHead(p, s)) return;
    if (!peer.recv_started) break;
    uint32_t slot = peer.recvs.front();
    RequestRecord& rec = table_->slot(slot);
    if (s.kind == kRemote) {
      if (!readRemote(p, rec.buf, s.addr, s.chunk_len)) return;
    } else if (rec.buf) {
      std::memcpy(rec.buf + rec.bytes, s.data, s.chunk_len);
    }
    table_->addBytes(slot, s.chunk_len);
    if (rec.bytes == s.msg_len) {
      peer.recvs.pop();
      peer.recv_started = false;
      table_->complete(slot);  // frees the slot if it was cancelled
    }
    ring->tail.store(++peer.tail, std::memory_order_release);
    consumed = true;
  }
  if (consumed) {
    ++events_;
    peer.seg.ring_doorbell();
  }
}

Status ShmTransport::progress() {
  if (!connected()) return Status::ok();
  seen_doorbell_ = own_.header()->doorbell.load(std::memory_order_acquire);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    const Ring* out = peers_[p].seg.ring(rank_);
    if (out->fault.load(std::memory_order_acquire) != kNoFault && table_->peerError(p).isOk())
      failPeer(p, mismatchStatus(p, rank_, *out));
    progressRecvs(p);
    progressSends(p);
  }
  return Status::ok();
}

}  // namespace shm_detail

std::unique_ptr<Transport> makeShmTransport(const TransportOptions& opts) {
  return std::make_unique<shm_detail::ShmTransport>(opts);
}

}  // namespace ccscope::transports
