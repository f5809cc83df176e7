#include "burnin/profile.h"

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>

#include "core/toml.h"
#include "core/units.h"

namespace ccscope::burnin {

using core::Code;
using core::Status;

namespace {

// Reads the keys of one table, each as its type; what() names the key for errors, and
// finish() rejects any key no one asked for.
class Keys {
 public:
  Keys(const toml::table& t, std::string where, std::string source)
      : t_(t), where_(std::move(where)), source_(std::move(source)) {}

  Status error(const std::string& key, const std::string& why) const {
    return Status(Code::kInvalidArgument,
                  fmt::format("profile {}: {}{}: {}", source_, where_, key, why));
  }
  Status boolean(const char* key, bool& out) { return typed<bool>(key, out, "true or false"); }
  Status integer(const char* key, int& out, int lo, int hi) {
    int64_t v = out;
    CCSCOPE_RETURN_IF_ERROR(typed<int64_t>(key, v, "an integer"));
    if (v < lo || v > hi) return error(key, fmt::format("{} is outside {}..{}", v, lo, hi));
    out = static_cast<int>(v);
    return Status::ok();
  }
  Status number(const char* key, double& out, double lo, double hi) {
    used_.insert(key);
    const toml::node* n = t_.get(key);
    if (n == nullptr) return Status::ok();
    if (auto v = n->value<double>()) {
      if (!(*v >= lo && *v <= hi))
        return error(key, fmt::format("{} is outside {}..{}", *v, lo, hi));
      out = *v;
      return Status::ok();
    }
    return error(key, "needs a number");
  }
  Status string(const char* key, std::string& out) {
    return typed<std::string>(key, out, "a string");
  }
  Status size(const char* key, uint64_t& out) {
    std::string text;
    used_.insert(key);
    const toml::node* n = t_.get(key);
    if (n == nullptr) return Status::ok();
    if (auto v = n->value<int64_t>(); v && *v > 0) {
      out = static_cast<uint64_t>(*v);
      return Status::ok();
    }
    auto s = n->value<std::string>();
    if (!s) return error(key, "needs a size (\"1M\", 4096)");
    auto b = core::parseSize(*s);
    if (!b || *b == 0) return error(key, fmt::format("'{}' is not a size (\"1M\", \"64K\")", *s));
    out = *b;
    return Status::ok();
  }
  Status duration(const char* key, double& out) {
    used_.insert(key);
    const toml::node* n = t_.get(key);
    if (n == nullptr) return Status::ok();
    if (auto v = n->value<double>(); v && *v > 0) {
      out = *v;
      return Status::ok();
    }
    auto s = n->value<std::string>();
    auto d = s ? core::parseDurationSeconds(*s)
               : core::Result<double>(Status(Code::kInvalidArgument, ""));
    if (!d || *d <= 0) return error(key, "needs a duration above 0 (\"30s\", \"500ms\", \"10m\")");
    out = *d;
    return Status::ok();
  }
  Status strings(const char* key, std::vector<std::string>& out) {
    used_.insert(key);
    const toml::node* n = t_.get(key);
    if (n == nullptr) return Status::ok();
    const toml::array* a = n->as_array();
    if (a == nullptr) return error(key, "needs an array of strings");
    out.clear();
    for (const toml::node& e : *a) {
      auto s = e.value<std::string>();
      if (!s) return error(key, "needs an array of strings");
      out.push_back(*s);
    }
    return Status::ok();
  }
  void skip(const char* key) { used_.insert(key); }
  Status finish() const {
    for (const auto& [k, v] : t_)
      if (!used_.count(std::string(k.str()))) return error(std::string(k.str()), "unknown key");
    return Status::ok();
  }

 private:
  template <class T>
  Status typed(const char* key, T& out, const char* what) {
    used_.insert(key);
    const toml::node* n = t_.get(key);
    if (n == nullptr) return Status::ok();
    auto v = n->value_exact<T>();
    if (!v) return error(key, fmt::format("needs {}", what));
    out = *v;
    return Status::ok();
  }

  const toml::table& t_;
  std::string where_, source_;
  std::set<std::string> used_;
};

const toml::table* tableAt(const toml::table& doc, const char* key) { return doc[key].as_table(); }

Status shares(Keys& k, double& degraded, double& failed) {
  CCSCOPE_RETURN_IF_ERROR(k.number("degraded", degraded, 0, 1));
  CCSCOPE_RETURN_IF_ERROR(k.number("failed", failed, 0, 1));
  if (!(failed > 0 && failed < degraded && degraded < 1))
    return k.error("failed", fmt::format("{} and degraded {}: need 0 < failed < degraded < 1",
                                         failed, degraded));
  return Status::ok();
}

Status readPairs(const toml::table& t, const std::string& src, PairsSpec& p) {
  Keys k(t, "pairs.", src);
  std::string scope = scopeName(p.scope);
  int64_t seed = static_cast<int64_t>(p.seed);
  int seed_i = static_cast<int>(seed);
  CCSCOPE_RETURN_IF_ERROR(k.boolean("enabled", p.enabled));
  CCSCOPE_RETURN_IF_ERROR(k.string("scope", scope));
  auto s = parseScope(scope);
  if (!s) return k.error("scope", s.status().message());
  p.scope = *s;
  CCSCOPE_RETURN_IF_ERROR(k.integer("rounds", p.rounds, 0, 1000000));
  CCSCOPE_RETURN_IF_ERROR(k.integer("seed", seed_i, 0, 1 << 30));
  p.seed = static_cast<uint64_t>(seed_i);
  CCSCOPE_RETURN_IF_ERROR(k.size("size", p.bytes));
  if (p.bytes < 8) return k.error("size", "needs at least 8 B");
  CCSCOPE_RETURN_IF_ERROR(k.duration("test_time", p.test_s));
  CCSCOPE_RETURN_IF_ERROR(k.integer("lat_iters", p.lat_iters, 10, 10000000));
  CCSCOPE_RETURN_IF_ERROR(shares(k, p.degraded, p.failed));
  CCSCOPE_RETURN_IF_ERROR(k.boolean("retest", p.retest));
  return k.finish();
}

Status readSweep(const toml::table& t, const std::string& src, int index, SweepSpec& w) {
  Keys k(t, fmt::format("sweep[{}].", index), src);
  CCSCOPE_RETURN_IF_ERROR(k.string("collective", w.collective));
  CCSCOPE_RETURN_IF_ERROR(k.string("algo", w.algo));
  CCSCOPE_RETURN_IF_ERROR(k.size("min_size", w.min_bytes));
  CCSCOPE_RETURN_IF_ERROR(k.size("max_size", w.max_bytes));
  if (w.min_bytes > w.max_bytes) return k.error("min_size", "is above max_size");
  CCSCOPE_RETURN_IF_ERROR(k.integer("iters", w.iters, 1, 1000000));
  CCSCOPE_RETURN_IF_ERROR(k.integer("warmup", w.warmup, 0, 1000000));
  CCSCOPE_RETURN_IF_ERROR(k.string("min_busbw", w.min_busbw));
  CCSCOPE_RETURN_IF_ERROR(k.string("max_lat", w.max_lat));
  CCSCOPE_RETURN_IF_ERROR(k.string("baseline", w.baseline));
  CCSCOPE_RETURN_IF_ERROR(k.string("tolerance", w.tolerance));
  return k.finish();
}

Status readSoak(const toml::table& t, const std::string& src, SoakSpec& s) {
  Keys k(t, "soak.", src);
  s.enabled = true;  // a [soak] table asks for one
  CCSCOPE_RETURN_IF_ERROR(k.boolean("enabled", s.enabled));
  CCSCOPE_RETURN_IF_ERROR(k.duration("duration", s.duration_s));
  CCSCOPE_RETURN_IF_ERROR(k.duration("interval", s.interval_s));
  CCSCOPE_RETURN_IF_ERROR(k.string("links", s.links));
  if (s.links != "all" && s.links != "ring" && s.links != "none")
    return k.error("links", fmt::format("'{}': all, ring or none", s.links));
  CCSCOPE_RETURN_IF_ERROR(k.size("size", s.bytes));
  if (s.bytes < 8) return k.error("size", "needs at least 8 B");
  CCSCOPE_RETURN_IF_ERROR(k.duration("test_time", s.test_s));
  CCSCOPE_RETURN_IF_ERROR(k.integer("lat_iters", s.lat_iters, 10, 10000000));
  CCSCOPE_RETURN_IF_ERROR(k.strings("collectives", s.collectives));
  CCSCOPE_RETURN_IF_ERROR(k.string("collective_algo", s.collective_algo));
  CCSCOPE_RETURN_IF_ERROR(k.size("collective_size", s.collective_bytes));
  CCSCOPE_RETURN_IF_ERROR(shares(k, s.degraded, s.failed));
  CCSCOPE_RETURN_IF_ERROR(k.number("min_z", s.min_z, 1, 1000));
  if (s.links == "none" && s.collectives.empty() && s.enabled)
    return k.error("links", "none, and no collectives: the soak would sample nothing");
  return k.finish();
}

Status readCongestion(const toml::table& t, const std::string& src, CongestionSpec& c) {
  Keys k(t, "congestion.", src);
  c.enabled = true;
  CCSCOPE_RETURN_IF_ERROR(k.boolean("enabled", c.enabled));
  CCSCOPE_RETURN_IF_ERROR(k.integer("repeats", c.repeats, 1, 1000));
  CCSCOPE_RETURN_IF_ERROR(k.integer("lat_iters", c.lat_iters, 10, 10000000));
  CCSCOPE_RETURN_IF_ERROR(k.size("size", c.bytes));
  if (c.bytes < 8) return k.error("size", "needs at least 8 B");
  CCSCOPE_RETURN_IF_ERROR(k.duration("test_time", c.test_s));
  CCSCOPE_RETURN_IF_ERROR(k.size("aggressor_size", c.aggressor_bytes));
  CCSCOPE_RETURN_IF_ERROR(k.number("max_factor", c.max_factor, 0, 1e9));
  return k.finish();
}

}  // namespace

core::Result<Profile> parseProfile(const std::string& text, const std::string& source) {
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return Status(Code::kInvalidArgument,
                  fmt::format("profile {}: line {}: {}", source, e.source().begin.line,
                              std::string(e.description())));
  }
  Profile p;
  p.source = source;
  Keys k(doc, "", source);
  CCSCOPE_RETURN_IF_ERROR(k.string("name", p.name));
  CCSCOPE_RETURN_IF_ERROR(k.string("transport", p.transport));
  CCSCOPE_RETURN_IF_ERROR(k.string("ifname", p.ifname));
  CCSCOPE_RETURN_IF_ERROR(k.duration("timeout", p.timeout_s));
  for (const char* table : {"preflight", "pairs", "soak", "congestion"}) {
    k.skip(table);
    if (doc.contains(table) && tableAt(doc, table) == nullptr)
      return k.error(table, "needs to be a table ([" + std::string(table) + "])");
  }
  if (const toml::table* t = tableAt(doc, "preflight")) {
    Keys pk(*t, "preflight.", source);
    CCSCOPE_RETURN_IF_ERROR(pk.boolean("enabled", p.preflight));
    CCSCOPE_RETURN_IF_ERROR(pk.finish());
  }
  if (const toml::table* t = tableAt(doc, "pairs"))
    CCSCOPE_RETURN_IF_ERROR(readPairs(*t, source, p.pairs));
  k.skip("sweep");
  if (const toml::node* n = doc.get("sweep")) {
    const toml::array* a = n->as_array();
    if (a == nullptr || !a->is_array_of_tables())
      return k.error("sweep", "needs to be an array of tables ([[sweep]])");
    int i = 0;
    for (const toml::node& e : *a) {
      SweepSpec w;
      CCSCOPE_RETURN_IF_ERROR(readSweep(*e.as_table(), source, i++, w));
      p.sweeps.push_back(std::move(w));
    }
  }
  if (const toml::table* t = tableAt(doc, "soak"))
    CCSCOPE_RETURN_IF_ERROR(readSoak(*t, source, p.soak));
  if (const toml::table* t = tableAt(doc, "congestion"))
    CCSCOPE_RETURN_IF_ERROR(readCongestion(*t, source, p.congestion));
  CCSCOPE_RETURN_IF_ERROR(k.finish());
  if (!p.pairs.enabled && p.sweeps.empty() && !p.soak.enabled && !p.congestion.enabled)
    return Status(
        Code::kInvalidArgument,
        fmt::format("profile {}: no phase is enabled (pairs, sweep, soak, congestion)", source));
  return p;
}

core::Result<Profile> loadProfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(Code::kInvalidArgument, fmt::format("profile {}: cannot be read", path));
  std::ostringstream text;
  text << in.rdbuf();
  return parseProfile(text.str(), path);
}

}  // namespace ccscope::burnin
