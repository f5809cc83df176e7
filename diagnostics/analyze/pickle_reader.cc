#include "diagnostics/analyze/pickle_reader.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "diagnostics/analyze/pickle_value.h"

namespace ccscope::diagnostics {
namespace {

using pickle::Kind;
using pickle::Node;
using pickle::toUtf8;
using std::string_view_literals::operator""sv;
constexpr size_t npos = std::string_view::npos;

// How far from its stated end a repaired str may end, the longest str repaired, and how many
// strs one pickle may try to repair: they bound the work a hostile input can cause.
constexpr size_t kRepairWindow = 1024;
constexpr size_t kMaxRepairedString = size_t{64} << 10;
constexpr size_t kMaxRepairs = 64;
constexpr size_t kMaxGlobalName = 256;

class Decoder {
 public:
  Decoder(std::string_view in, const PickleOptions& o) : in_(in), opt_(o), lim_(o.limits) {}
  core::Result<nlohmann::json> run();
  size_t repairs() const { return repairs_; }

  using Handler = bool (Decoder::*)(uint8_t);
  static const std::array<Handler, 256>& handlers();

 private:
  bool fail(std::string what);
  bool take(uint64_t n, std::string_view& out);
  bool readUint(size_t bytes, uint64_t& v);
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  bool push(Node n);
  bool pushRef(uint32_t idx);
  bool pop(uint32_t& v);
  bool popToMark(std::vector<uint32_t>& items);
  Node& top() { return values_.nodes[stack_.back()]; }
  uint64_t repairedLength(size_t start, uint64_t stated);

  bool opProto(uint8_t op);
  bool opScalar(uint8_t op);
  bool opInt(uint8_t op);
  bool opLong(uint8_t op);
  bool opText(uint8_t op);
  bool opContainer(uint8_t op);
  bool opMark(uint8_t op);
  bool opTupleN(uint8_t op);
  bool opAddTo(uint8_t op);
  bool opStack(uint8_t op);
  bool opPut(uint8_t op);
  bool opGet(uint8_t op);
  bool opGlobal(uint8_t op);
  bool opObject(uint8_t op);

  std::string_view in_;
  const PickleOptions& opt_;
  const PickleLimits& lim_;
  size_t pos_ = 0;
  size_t op_at_ = 0;
  std::string error_;
  pickle::Values values_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, uint32_t> memo_;
  size_t repair_tries_ = 0;
  size_t repairs_ = 0;
};

const std::array<Decoder::Handler, 256>& Decoder::handlers() {
  static const std::array<Handler, 256> table = [] {
    std::array<Handler, 256> t{};
    auto set = [&t](std::string_view ops, Handler h) {
      for (char c : ops) t[static_cast<uint8_t>(c)] = h;
    };
    set("\x80\x95", &Decoder::opProto);  // PROTO, FRAME
    set("N\x88\x89", &Decoder::opScalar);
    set("JKMG", &Decoder::opInt);  // BININT, BININT1, BININT2, BINFLOAT
    set("\x8a\x8b", &Decoder::opLong);
    set("X\x8c\x8dUTCB\x8e\x96", &Decoder::opText);
    set("dlt\x91}])\x8f", &Decoder::opContainer);
    set("(", &Decoder::opMark);
    set("\x85\x86\x87", &Decoder::opTupleN);
    set("suae\x90", &Decoder::opAddTo);
    set("012", &Decoder::opStack);
    set("qr\x94", &Decoder::opPut);
    set("hj", &Decoder::opGet);
    set("c\x93", &Decoder::opGlobal);
    set("Rb\x81\x92", &Decoder::opObject);
    return t;
  }();
  return table;
}

bool Decoder::fail(std::string what) {
  if (error_.empty()) error_ = fmt::format("pickle: {} (opcode at byte {})", what, op_at_);
  return false;
}

bool Decoder::take(uint64_t n, std::string_view& out) {
  if (n > in_.size() - pos_) return fail(fmt::format("truncated: {} bytes announced", n));
  out = in_.substr(pos_, n);
  pos_ += n;
  return true;
}

bool Decoder::readUint(size_t bytes, uint64_t& v) {
  std::string_view b;
  if (!take(bytes, b)) return false;
  v = 0;
  for (size_t k = bytes; k-- > 0;) v = (v << 8) | static_cast<uint8_t>(b[k]);
  return true;
}

bool Decoder::push(Node n) {
  auto& nodes = values_.nodes;
  if (nodes.size() >= lim_.max_values)
    return fail(fmt::format("more than {} values", lim_.max_values));
  nodes.push_back(std::move(n));
  stack_.push_back(static_cast<uint32_t>(nodes.size() - 1));
  return true;
}

// A memo reference or DUP costs no value, only a stack slot: bounded all the same.
bool Decoder::pushRef(uint32_t idx) {
  if (stack_.size() >= 2 * lim_.max_values) return fail("stack deeper than the value limit");
  stack_.push_back(idx);
  return true;
}

bool Decoder::pop(uint32_t& v) {
  if (stack_.size() <= floor()) return fail("stack underflow");
  v = stack_.back();
  stack_.pop_back();
  return true;
}

bool Decoder::popToMark(std::vector<uint32_t>& items) {
  if (marks_.empty()) return fail("no MARK to return to");
  items.assign(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
  stack_.resize(marks_.back());
  marks_.pop_back();
  return true;
}

core::Result<nlohmann::json> Decoder::run() {
  if (in_.size() > lim_.max_input_bytes) {
    return core::Status(
        core::Code::kInvalidArgument,
        fmt::format("pickle: {} bytes, more than the {} read", in_.size(), lim_.max_input_bytes));
  }
  bool ok = true;
  for (;;) {
    op_at_ = pos_;
    if (pos_ >= in_.size()) {
      ok = fail("truncated: no STOP opcode");
      break;
    }
    const auto op = static_cast<uint8_t>(in_[pos_++]);
    if (op == '.') break;
    const Handler h = handlers()[op];
    ok = h ? (this->*h)(op) : fail(fmt::format("unsupported opcode 0x{:02x}", op));
    if (!ok) break;
  }
  nlohmann::json out;
  if (ok && stack_.empty()) ok = fail("STOP with nothing on the stack");
  if (ok) ok = pickle::toJson(values_, stack_.back(), lim_, out, error_);
  if (!ok) return core::Status(core::Code::kInvalidArgument, error_);
  return out;
}

bool Decoder::opProto(uint8_t op) {
  uint64_t v = 0;
  if (!readUint(op == 0x80 ? 1 : 8, v)) return false;
  if (op == 0x80 && v > 5) return fail(fmt::format("protocol {} is newer than 5", v));
  // A FRAME only announces how many bytes follow (a buffering hint); they must be there.
  if (op == 0x95 && v > in_.size() - pos_) return fail("truncated frame");
  return true;
}

bool Decoder::opScalar(uint8_t op) {
  Node n;
  if (op != 'N') {
    n.kind = Kind::kBool;
    n.i = op == 0x88;
  }
  return push(std::move(n));
}

bool Decoder::opInt(uint8_t op) {
  uint64_t v = 0;
  if (op == 'G') {  // BINFLOAT: an IEEE double, big-endian
    std::string_view b;
    if (!take(8, b)) return false;
    for (char c : b) v = (v << 8) | static_cast<uint8_t>(c);
  } else if (!readUint(op == 'J' ? 4 : op == 'K' ? 1 : 2, v)) {
    return false;
  }
  Node n;
  n.kind = op == 'G' ? Kind::kFloat : Kind::kInt;
  n.i = op == 'J' ? static_cast<int32_t>(static_cast<uint32_t>(v)) : static_cast<int64_t>(v);
  return push(std::move(n));
}

// Two's complement, little-endian, any length: what fits 64 bits is a number, the rest a
// placeholder (Flight Recorder's nanosecond timestamps fit).
bool Decoder::opLong(uint8_t op) {
  uint64_t len = 0;
  std::string_view b;
  if (!readUint(op == 0x8a ? 1 : 4, len)) return false;
  if (op == 0x8b && len > INT32_MAX) return fail("negative LONG4 length");
  if (!take(len, b)) return false;
  const bool neg = !b.empty() && (static_cast<uint8_t>(b.back()) & 0x80) != 0;
  bool fits = true;
  for (size_t k = 8; k < b.size(); ++k)
    fits = fits && static_cast<uint8_t>(b[k]) == (neg ? 0xFF : 0);
  uint64_t bits = 0;
  for (size_t k = std::min<size_t>(b.size(), 8); k-- > 0;)
    bits = (bits << 8) | static_cast<uint8_t>(b[k]);
  if (b.size() < 8 && neg) bits |= ~uint64_t{0} << (8 * b.size());
  const bool top = (bits >> 63) != 0;  // differs from the sign only past 8 bytes
  Node n;
  n.kind = !neg && top ? Kind::kUint : Kind::kInt;
  n.i = static_cast<int64_t>(bits);
  if (!fits || (neg && !top)) {
    n.kind = Kind::kOpaque;
    n.text = values_.keep(fmt::format("<int of {} bytes>", b.size()));
  }
  return push(std::move(n));
}

// Bounded: at most kMaxRepairs strs, each no longer than kMaxRepairedString, are searched.
uint64_t Decoder::repairedLength(size_t start, uint64_t stated) {
  const size_t next = memo_.size();
  if (stated <= in_.size() - start && pickle::memoStoreAt(in_, start + stated, next)) return stated;
  if (stated > kMaxRepairedString || repair_tries_ >= kMaxRepairs) return stated;
  ++repair_tries_;
  const uint64_t len = pickle::memoizedStrLength(in_, start, stated, next, kRepairWindow);
  repairs_ += len != stated ? 1 : 0;
  return len;
}

bool Decoder::opText(uint8_t op) {
  const char c = static_cast<char>(op);
  const size_t prefix = "\x8cUC"sv.find(c) != npos ? 1 : "\x8d\x8e\x96"sv.find(c) != npos ? 8 : 4;
  uint64_t len = 0;
  if (!readUint(prefix, len)) return false;
  if (op == 'T' && len > INT32_MAX) return fail("negative BINSTRING length");
  Node n;
  n.kind = "X\x8c\x8dUT"sv.find(c) != npos ? Kind::kString : Kind::kBytes;
  if (n.kind == Kind::kString && opt_.repair_string_lengths) len = repairedLength(pos_, len);
  if (!take(len, n.text)) return false;
  return push(std::move(n));
}

// EMPTY_DICT/LIST/TUPLE/SET, and DICT/LIST/TUPLE/FROZENSET of the items since the MARK.
bool Decoder::opContainer(uint8_t op) {
  static constexpr Kind kKinds[] = {Kind::kDict, Kind::kList, Kind::kTuple, Kind::kSet};
  const size_t at = "dlt\x91}])\x8f"sv.find(static_cast<char>(op));
  Node n;
  n.kind = kKinds[at % 4];
  if (at < 4 && !popToMark(n.items)) return false;
  if (n.kind == Kind::kDict && n.items.size() % 2) return fail("DICT with an odd item count");
  return push(std::move(n));
}

bool Decoder::opMark(uint8_t) {
  if (marks_.size() >= lim_.max_depth)
    return fail(fmt::format("more than {} open MARKs", lim_.max_depth));
  marks_.push_back(stack_.size());
  return true;
}

bool Decoder::opTupleN(uint8_t op) {
  Node n;
  n.kind = Kind::kTuple;
  n.items.resize(op - 0x84u);
  for (size_t k = n.items.size(); k-- > 0;) {
    if (!pop(n.items[k])) return false;
  }
  return push(std::move(n));
}

// SETITEM(S), APPEND(S), ADDITEMS: add to the container below; an opaque object absorbs them.
bool Decoder::opAddTo(uint8_t op) {
  std::vector<uint32_t> items(op == 's' ? 2 : 1);
  if (op == 'u' || op == 'e' || op == 0x90) {
    if (!popToMark(items)) return false;
  } else {
    for (size_t k = items.size(); k-- > 0;) {
      if (!pop(items[k])) return false;
    }
  }
  const Kind want = op == 's' || op == 'u' ? Kind::kDict : op == 0x90 ? Kind::kSet : Kind::kList;
  if (stack_.size() <= floor()) return fail("nothing to add to");
  Node& target = top();
  if (target.kind == Kind::kOpaque) return true;
  if (target.kind != want) return fail("adding to a value of the wrong type");
  if (want == Kind::kDict && items.size() % 2) return fail("SETITEMS with an odd item count");
  target.items.insert(target.items.end(), items.begin(), items.end());
  return true;
}

// POP on an empty frame pops its MARK, as Python does.
bool Decoder::opStack(uint8_t op) {
  uint32_t v = 0;
  if (op == '1' || (op == '0' && stack_.size() == floor())) {
    if (marks_.empty()) return fail("POP_MARK without a MARK");
    stack_.resize(marks_.back());
    marks_.pop_back();
    return true;
  }
  if (!pop(v)) return false;
  return op != '2' || (pushRef(v) && pushRef(v));
}

bool Decoder::opPut(uint8_t op) {
  uint64_t idx = memo_.size();
  if (op != 0x94 && !readUint(op == 'q' ? 1 : 4, idx)) return false;
  if (stack_.size() <= floor()) return fail("memo store with an empty stack");
  if (memo_.size() >= lim_.max_memo && !memo_.count(static_cast<uint32_t>(idx)))
    return fail(fmt::format("more than {} memo entries", lim_.max_memo));
  memo_[static_cast<uint32_t>(idx)] = stack_.back();
  return true;
}

bool Decoder::opGet(uint8_t op) {
  uint64_t idx = 0;
  if (!readUint(op == 'h' ? 1 : 4, idx)) return false;
  const auto it = memo_.find(static_cast<uint32_t>(idx));
  if (it == memo_.end()) return fail(fmt::format("memo entry {} was never stored", idx));
  return pushRef(it->second);
}

// GLOBAL "module\nname\n" and STACK_GLOBAL name a class or function: only its name is kept.
bool Decoder::opGlobal(uint8_t op) {
  std::string module, name;
  if (op == 'c') {
    for (std::string* part : {&module, &name}) {
      const size_t len = in_.substr(pos_, kMaxGlobalName + 1).find('\n');
      if (len == npos || len > kMaxGlobalName) return fail("bad GLOBAL");
      *part = toUtf8(in_.substr(pos_, len));
      pos_ += len + 1;
    }
  } else {
    uint32_t m = 0, n = 0;
    if (!pop(n) || !pop(m)) return false;
    if (values_.nodes[m].kind != Kind::kString || values_.nodes[n].kind != Kind::kString)
      return fail("STACK_GLOBAL needs two strs");
    module = toUtf8(values_.nodes[m].text.substr(0, kMaxGlobalName));
    name = toUtf8(values_.nodes[n].text.substr(0, kMaxGlobalName));
  }
  Node g;
  g.kind = Kind::kOpaque;
  g.text = values_.keep(fmt::format("<object {}.{}>", module, name));
  return push(std::move(g));
}

// REDUCE, NEWOBJ, NEWOBJ_EX would call the class below their arguments and BUILD would set an
// object's state: the arguments and state are dropped, the call becomes the class's placeholder.
bool Decoder::opObject(uint8_t op) {
  uint32_t dropped = 0;
  for (int k = op == 0x92 ? 2 : 1; k > 0; --k) {
    if (!pop(dropped)) return false;
  }
  if (stack_.size() <= floor()) return fail("no object to build");
  if (op == 'b') return true;
  Node made;
  made.kind = Kind::kOpaque;
  made.text = top().kind == Kind::kOpaque ? top().text : values_.keep("<object>");
  stack_.pop_back();
  return push(std::move(made));
}

}  // namespace

bool looksLikePickle(std::string_view data) {
  return data.size() >= 2 && static_cast<uint8_t>(data[0]) == 0x80 &&
         static_cast<uint8_t>(data[1]) >= 2 && static_cast<uint8_t>(data[1]) <= 5;
}

core::Result<nlohmann::json> decodePickle(std::string_view data, const PickleOptions& options,
                                          size_t* repaired_strings) {
  Decoder decoder(data, options);
  auto out = decoder.run();
  if (repaired_strings != nullptr) *repaired_strings = decoder.repairs();
  return out;
}

}  // namespace ccscope::diagnostics
