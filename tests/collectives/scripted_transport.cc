#include "scripted_transport.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>
#include <thread>

namespace ccscope::collectives::testing {

using core::Code;
using core::Status;
using transports::Dir;
using transports::Request;

ScriptedTransport::ScriptedTransport(ScriptedOptions o) : opts_(o) {
  request_slots_ = o.request_slots;
}

void ScriptedTransport::open(int rank, int size) {
  initTable(rank, size);
  post_of_slot_.assign(table_->capacity(), SIZE_MAX);
  setConnected(true);
}

transports::Capabilities ScriptedTransport::caps() const {
  transports::Capabilities c;
  c.stream_ordered = opts_.stream_ordered;
  c.verifies_tags = opts_.verifies_tags;
  c.max_inflight_per_peer = opts_.max_inflight_per_peer;
  return c;
}

Status ScriptedTransport::connect(launch::Bootstrap& bootstrap, core::Deadline /*deadline*/) {
  open(bootstrap.rank(), bootstrap.size());
  return Status::ok();
}

void ScriptedTransport::beginBatch() {
  events_.push_back({EventKind::kBeginBatch, SIZE_MAX});
  in_batch_ = true;
}

Status ScriptedTransport::endBatch() {
  events_.push_back({EventKind::kEndBatch, SIZE_MAX});
  if (in_batch_) ++batches_;
  in_batch_ = false;
  return Status::ok();
}

Status ScriptedTransport::progress() {
  ++progress_calls_;
  if (!script_ || in_script_) return Status::ok();
  in_script_ = true;
  script_(*this);
  in_script_ = false;
  return Status::ok();
}

// Tests must be fast: a wait that blocks is one that expects a deadline, so a short nap will do.
void ScriptedTransport::blockFor(int64_t max_ns) {
  std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(max_ns, 100'000)));
}

core::Result<Request> ScriptedTransport::doPost(Dir dir, int peer, uint32_t tag,
                                                const transports::MemoryRegion& view) {
  CCSCOPE_ASSIGN_OR_RETURN(Request r, table_->open(dir, peer, tag, view.base(), view.len()));
  posts_.push_back({dir, peer, tag, view.len(), view.base(), in_batch_ ? batches_ : -1, r});
  post_of_slot_[r.slot] = posts_.size() - 1;
  events_.push_back({EventKind::kPost, posts_.size() - 1});
  if (sends_at_post_ && dir == Dir::kSend) complete(posts_.size() - 1);
  return r;
}

// Per the contract: a send none of whose bytes left is withdrawn; a receive no message matched
// keeps its place as a sink (it holds its slot until a message or a failure finishes it).
void ScriptedTransport::cancelPending(uint32_t slot) {
  const size_t i = post_of_slot_[slot];
  events_.push_back({EventKind::kCancel, i});
  if (posts_[i].dir == Dir::kRecv) {
    posts_[i].state = PostState::kSink;
    return;
  }
  posts_[i].state = PostState::kDropped;
  table_->drop(slot);
}

void ScriptedTransport::abortPeer(int peer, const Status& why) {
  for (size_t i = 0; i < posts_.size(); ++i) {
    Posted& p = posts_[i];
    if (p.peer != peer) continue;
    if (p.state == PostState::kPending) {
      p.state = PostState::kFailed;
      events_.push_back({EventKind::kFail, i});
    } else if (p.state == PostState::kSink) {
      p.state = PostState::kDropped;  // failPeer frees cancelled slots
    }
  }
  table_->failPeer(peer, why);
}

void ScriptedTransport::close() {
  for (int p = 0; p < size_; ++p)
    if (p != rank_) abortPeer(p, Status(Code::kAborted, "transport closed"));
  setConnected(false);
}

std::vector<size_t> ScriptedTransport::pending() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < posts_.size(); ++i)
    if (posts_[i].state == PostState::kPending) out.push_back(i);
  return out;
}

bool ScriptedTransport::complete(size_t i, std::span<const char> data) {
  if (i >= posts_.size() || posts_[i].state != PostState::kPending) return false;
  const uint32_t slot = posts_[i].req.slot;
  transports::RequestRecord& rec = table_->slot(slot);
  size_t n = rec.len;
  if (rec.dir == Dir::kRecv) {
    n = std::min(n, data.size());
    if (n > 0) std::memcpy(rec.buf, data.data(), n);
  }
  table_->addBytes(slot, n);
  table_->complete(slot);
  posts_[i].state = PostState::kDone;
  events_.push_back({EventKind::kComplete, i});
  return true;
}

bool ScriptedTransport::fail(size_t i, Status why) {
  if (i >= posts_.size() || posts_[i].state != PostState::kPending) return false;
  table_->fail(posts_[i].req.slot, std::move(why));
  posts_[i].state = PostState::kFailed;
  events_.push_back({EventKind::kFail, i});
  return true;
}

size_t ScriptedTransport::indexOf(Request r) const {
  for (size_t i = posts_.size(); i > 0; --i)
    if (posts_[i - 1].req.slot == r.slot && posts_[i - 1].req.gen == r.gen) return i - 1;
  return SIZE_MAX;
}

void Mailbox::match(ScriptedTransport& t, std::map<size_t, std::vector<char>>& ready) {
  for (size_t i : t.pending()) {  // posting order: per-peer FIFO on both ends
    if (ready.count(i)) continue;
    const Posted& p = t.posts()[i];
    if (p.dir == Dir::kSend) {  // copied now, completed later: an eager protocol
      queues_[{t.rank(), p.peer}].push_back({p.tag, std::vector<char>(p.buf, p.buf + p.len)});
      ready[i] = {};
      continue;
    }
    auto& q = queues_[{p.peer, t.rank()}];
    if (q.empty()) continue;
    Message m = std::move(q.front());
    q.pop_front();
    if (m.tag != p.tag || m.bytes.size() > p.len) {
      t.fail(i, Status(Code::kRemoteError, "mailbox: tag or length mismatch"));
      continue;
    }
    ready[i] = std::move(m.bytes);
  }
}

void Mailbox::pump(ScriptedTransport& t, bool reverse, size_t per_call) {
  std::vector<std::pair<size_t, std::vector<char>>> done;  // post, bytes for a receive
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& ready = ready_[t.rank()];
    match(t, ready);
    while (!ready.empty() && done.size() < per_call) {
      auto it = reverse ? std::prev(ready.end()) : ready.begin();
      done.emplace_back(it->first, std::move(it->second));
      ready.erase(it);
    }
  }
  for (auto& [i, bytes] : done) t.complete(i, bytes);
}

bool ScriptedCompute::nextFinished(uint32_t* token) {
  if (finished_.empty()) return false;
  *token = finished_.front();
  finished_.pop_front();
  return true;
}

bool ScriptedCompute::runNext() {
  if (ran_ == started_.size()) return false;
  const Started& s = started_[ran_++];
  cpu_.start(s.step, s.token).value();  // the CPU finishes it at once
  finished_.push_back(s.token);
  return true;
}

HandSchedule::HandSchedule(int rank, int ranks, uint64_t scratch_elems) {
  s_.rank = rank;
  s_.ranks = ranks;
  s_.scratch_elems = scratch_elems;
}

uint32_t HandSchedule::add(Op op, const std::vector<uint32_t>& deps) {
  op.dep_begin = static_cast<uint32_t>(s_.deps.size());
  op.dep_count = static_cast<uint32_t>(deps.size());
  s_.deps.insert(s_.deps.end(), deps.begin(), deps.end());
  s_.ops.push_back(op);
  return static_cast<uint32_t>(s_.ops.size() - 1);
}

uint32_t HandSchedule::send(int peer, uint32_t tag, Span src, uint64_t count,
                            const std::vector<uint32_t>& deps) {
  return add({.kind = OpKind::kSend, .peer = peer, .tag = tag, .a = src, .count = count}, deps);
}

uint32_t HandSchedule::recv(int peer, uint32_t tag, Span dst, uint64_t count,
                            const std::vector<uint32_t>& deps) {
  return add({.kind = OpKind::kRecv, .peer = peer, .tag = tag, .dst = dst, .count = count}, deps);
}

uint32_t HandSchedule::reduce(Span dst, Span a, Span b, uint64_t count,
                              const std::vector<uint32_t>& deps) {
  return add({.kind = OpKind::kReduce, .dst = dst, .a = a, .b = b, .count = count}, deps);
}

Schedule HandSchedule::finish() {
  s_.finalize();
  return std::move(s_);
}

ScriptedRank::ScriptedRank(int rank, int size, size_t elems, ScriptedOptions o)
    : t(o), in(elems), out(elems), scratch(elems) {
  t.open(rank, size);
  for (size_t i = 0; i < elems; ++i) in[i] = static_cast<float>(size_t{100} * rank + i);
  in_reg = std::move(*t.registerMemory(in.data(), in.size() * sizeof(float)));
  out_reg = std::move(*t.registerMemory(out.data(), out.size() * sizeof(float)));
  scratch_reg = std::move(*t.registerMemory(scratch.data(), scratch.size() * sizeof(float)));
}

Buffers ScriptedRank::buffers() const {
  return {in_reg.region(), out_reg.region(), scratch_reg.region()};
}

void ScriptedRank::prepare(Schedule s) {
  sched = std::move(s);
  ex.prepare(sched, core::DataType::kFloat, core::ReduceOp::kSum);
}

}  // namespace ccscope::collectives::testing
