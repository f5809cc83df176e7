#include "model/predict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "collectives/algorithms.h"
#include "collectives/collective.h"

namespace ccscope::model {

using collectives::Collective;
using collectives::CostParams;
using core::Code;
using core::Status;

Topology fromParams(const Params& p, int ranks_per_host, int cores, bool one_machine,
                    uint64_t min_segment_bytes, double llc_bytes) {
  Topology t;
  t.name = "fit";
  t.ranks_per_host = ranks_per_host;
  t.intra = {p.alpha[kIntra], p.beta[kIntra] > 0 ? 1 / p.beta[kIntra] : 0};
  t.nic = {p.alpha[kInter], p.beta[kInter] > 0 ? 1 / p.beta[kInter] : 0};
  t.gamma = p.gamma;
  t.cores = cores;
  t.one_machine = one_machine;
  t.cpu_driven = true;
  t.min_segment_bytes = min_segment_bytes;
  t.llc_bytes = llc_bytes;
  t.delta = p.delta;
  t.source = "ccscope model fit";
  return t;
}

std::vector<std::string> modelAlgorithms(const std::string& collective, const Topology& t) {
  if (collective == "alltoall") return {"pairwise", "hierarchical"};
  std::vector<std::string> a = {"ring", "tree", "hierarchical"};
  if (t.in_switch_factor > 0) a.emplace_back("nvls");
  return a;
}

namespace {

// What one rank's share of the job costs where phases cross hop classes.
struct Shape {
  int n, hosts, per_host;
  int on_machine;      // ranks sharing one machine's cores and cache
  double inter_alpha;  // NIC plus the switches between two hosts
  double miss;         // per byte moved or reduced by a CPU: delta x the share beyond the cache
  double work = 0;     // > 0: costs as CPU work, ranks on a machine over its cores (cpuWork)
};

Shape shapeOf(const Topology& t, int ranks, uint64_t bytes) {
  Shape s{ranks, 1, std::min(ranks, t.ranks_per_host), 0, 0, 0};
  s.hosts = (ranks + t.ranks_per_host - 1) / t.ranks_per_host;
  s.on_machine = t.one_machine ? ranks : s.per_host;
  bool spine = t.hosts_per_leaf > 0 && s.hosts > t.hosts_per_leaf;
  s.inter_alpha = t.nic.alpha_s + (spine ? 3 : 1) * t.switch_hop_s;
  if (t.cpu_driven)
    s.miss = t.delta * beyondCache(kBuffersPerRank * s.on_machine * double(bytes), t.llc_bytes);
  return s;
}

// Costs on the critical path, or (s.work > 0) as work on a machine's cores. As in the replay
// (simulate.cc), a message holds the CPUs of both its ends: its latency and bytes count twice.
CostParams costs(const Shape& s, double alpha, double beta, double gamma, bool cpu_driven) {
  if (!cpu_driven) return {alpha, beta, 0};
  if (s.work <= 0) return {alpha, beta + s.miss, gamma + s.miss};
  return {2 * alpha * s.work, 2 * (beta + s.miss) * s.work, (gamma + s.miss) * s.work};
}

double cost(Collective c, const char* algo, int n, double bytes, const CostParams& p) {
  if (n < 2) return 0;
  return collectives::findAlgorithm(c, algo)->cost(n, bytes, p);
}

// A flat schedule: every step as slow as the slower hop class it crosses; a host's crossing
// spreads over its rails (NCCL's channels do). On a device fabric the reduction of a segment
// overlaps the next one's transfer (NCCL fuses them); only a CPU that moves and reduces pays
// for both.
CostParams flat(const Topology& t, const Shape& s) {
  double alpha = 0, beta = 0;
  if (s.per_host > 1) alpha = t.intra.alpha_s, beta = t.intra.beta();
  if (s.hosts > 1) {
    alpha = std::max(alpha, s.inter_alpha);
    beta = std::max(beta, t.nic.beta() / t.nics_per_host);
  }
  return costs(s, alpha, beta, t.gamma, t.cpu_driven);
}

CostParams intraOf(const Topology& t, const Shape& s) {
  return costs(s, t.intra.alpha_s, t.intra.beta(), t.gamma, t.cpu_driven);
}

// Between hosts when every rank of a host crosses at once: the host's rails shared, and the
// share of traffic that leaves the leaf slowed by the uplinks' oversubscription.
CostParams interShared(const Topology& t, const Shape& s, bool all_to_all) {
  double beta = t.nic.beta() * s.per_host / t.nics_per_host;
  if (all_to_all && t.hosts_per_leaf > 0 && s.hosts > t.hosts_per_leaf) {
    double leaving = double(s.hosts - t.hosts_per_leaf) / (s.hosts - 1);
    beta *= std::max(1.0, leaving * t.oversubscription);
  }
  return costs(s, s.inter_alpha, beta, t.gamma, t.cpu_driven);
}

double allreduceFormula(const Topology& t, const Shape& s, const std::string& algo, double b) {
  if (algo == "ring" || algo == "tree")
    return cost(Collective::kAllreduce, algo.c_str(), s.n, b, flat(t, s));
  double across =
      cost(Collective::kAllreduce, "ring", s.hosts, b / s.per_host, interShared(t, s, false));
  if (algo == "nvls") {
    // Each GPU sends its buffer to the switch and its reduced shard back (multimem ld_reduce),
    // then its shard out and every other shard in (multimem st): (R+1)/R of the buffer each way.
    double bw = t.intra.bytes_per_s * t.in_switch_factor;
    double moved = b * (s.per_host + 1) / s.per_host;
    return (s.per_host > 1 ? 2 * t.intra.alpha_s + moved / bw : 0) + across;
  }
  CostParams in = intraOf(t, s);
  return cost(Collective::kReduceScatter, "ring", s.per_host, b, in) + across +
         cost(Collective::kAllgather, "ring", s.per_host, b, in);
}

double alltoallFormula(const Topology& t, const Shape& s, const std::string& algo, double b) {
  CostParams in = intraOf(t, s), out = interShared(t, s, true);
  if (algo == "pairwise") {
    double c = b / s.n;
    return (s.per_host - 1) * (in.alpha + c * in.beta) +
           (s.n - s.per_host) * (out.alpha + c * out.beta);
  }
  return 2 * (s.per_host - 1) * (in.alpha + b / s.per_host * in.beta) +
         (s.hosts - 1) * (out.alpha + b / s.hosts * out.beta);
}

double formula(const Topology& t, const Shape& s, const std::string& collective,
               const std::string& algo, double b) {
  return collective == "allreduce" ? allreduceFormula(t, s, algo, b)
                                   : alltoallFormula(t, s, algo, b);
}

// Ring and tree within kScheduleRanks: their schedules replayed, as the fit replays them.
core::Result<double> allreduceSchedule(const Topology& t, const Shape& s, const std::string& algo,
                                       uint64_t bytes) {
  SimInput in;
  in.algo = collectives::findAlgorithm(Collective::kAllreduce, algo);
  in.ranks = s.n;
  in.elem = 4;
  in.count = std::max<uint64_t>(static_cast<uint64_t>(s.n), bytes / in.elem);
  size_t seg = collectives::defaultSegmentBytes(in.count * in.elem / s.n, t.min_segment_bytes,
                                                t.cores > 0 && s.on_machine > t.cores);
  in.segment_elems = std::max<uint64_t>(1, seg / in.elem);
  for (int r = 0; r < s.n; ++r) in.host_of.push_back(r / t.ranks_per_host);
  in.cpu_driven = t.cpu_driven;
  in.cores = t.cores;
  if (t.one_machine) in.machine_of.assign(s.n, 0);
  in.beyond_cache = beyondCache(kBuffersPerRank * s.on_machine * double(bytes), t.llc_bytes);
  Params p;
  p.alpha = {t.intra.alpha_s, s.inter_alpha};
  p.beta = {t.intra.beta(), t.nic.beta() / t.nics_per_host};
  p.gamma = t.gamma;
  p.delta = t.delta;
  CCSCOPE_ASSIGN_OR_RETURN(SimResult r, simulate(in, p));
  return r.seconds;
}

}  // namespace

core::Result<Prediction> predict(const Topology& t, const std::string& collective,
                                 const std::string& algorithm, int ranks, uint64_t bytes,
                                 Method method) {
  auto algos = modelAlgorithms(collective, t);
  if (collective != "allreduce" && collective != "alltoall")
    return Status(Code::kInvalidArgument,
                  fmt::format("model: no model of {} (allreduce, alltoall)", collective));
  if (std::find(algos.begin(), algos.end(), algorithm) == algos.end())
    return Status(Code::kInvalidArgument,
                  fmt::format("model: no {} algorithm '{}' (one of: {})", collective, algorithm,
                              fmt::join(algos, ", ")));
  if (ranks < 1 || t.ranks_per_host < 1)
    return Status(Code::kInvalidArgument, "model: ranks and ranks per host must be at least 1");
  Shape s = shapeOf(t, ranks, bytes);
  Prediction p{collective, algorithm, "formula", ranks, s.hosts, bytes};
  double b = static_cast<double>(bytes);
  bool scheduled = collective == "allreduce" && (algorithm == "ring" || algorithm == "tree");
  if (method == Method::kSchedule && !scheduled)
    return Status(Code::kInvalidArgument,
                  fmt::format("model: {} {} has no schedule to replay", collective, algorithm));
  bool replay = method == Method::kSchedule ||
                (method == Method::kAuto && scheduled && t.cpu_driven && ranks <= kScheduleRanks);
  if (replay && ranks > 1) {
    CCSCOPE_ASSIGN_OR_RETURN(p.seconds, allreduceSchedule(t, s, algorithm, bytes));
    p.method = "schedule";
  } else {
    p.seconds = formula(t, s, collective, algorithm, b);
    // Ranks beyond their machine's cores wait for one: at least their work over the cores.
    if (t.cpu_driven && t.cores > 0 && s.on_machine > t.cores) {
      Shape w = s;
      w.work = s.on_machine / double(t.cores);
      p.seconds = std::max(p.seconds, formula(t, w, collective, algorithm, b));
    }
  }
  Collective c = collective == "allreduce" ? Collective::kAllreduce : Collective::kAlltoall;
  p.algbw_gbps = p.seconds > 0 ? b / p.seconds / 1e9 : 0;
  p.busbw_gbps = p.algbw_gbps * collectives::busbwFactor(c, ranks);
  return p;
}

}  // namespace ccscope::model
