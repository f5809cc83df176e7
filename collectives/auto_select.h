// `--algo auto`: a Hockney alpha-beta-gamma model fitted by a short calibration on the transport
// in use (all ranks together, well under 2 s), then, per size and rank count, the algorithm with
// the cheapest predicted time. The prediction of every candidate is kept so each row can say why.
//
// Two calibrations, both collective over all ranks:
//  1. calibrate() (auto_policy.h): alpha, beta and gamma from a ring shift of 8 B and 1 MiB and
//     a local reduction. This is the model every candidate's formula (algorithms.h) is
//     evaluated with.
//  2. measureCandidates(): each candidate of one collective run for real at a few anchor sizes
//     (a warm-up round, then the median of three), and its measured time divided
//     by its formula's. The formulas miss what this machine does between a message and the
//     next (a dependent step costs a wake-up of the peer, shm copies small messages twice and
//     large ones once, ranks outnumbering cores share them); the per-algorithm ratio,
//     interpolated between anchors in log(size), carries that into the prediction while the
//     formula keeps its shape.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectives/algorithms.h"
#include "core/deadline.h"
#include "core/status.h"

namespace ccscope::collectives {

struct Calibration {
  CostParams cost;
  double seconds = 0;  // how long calibrating took
};

// Measured time over modelled time of each candidate at anchor sizes (ascending).
struct Corrections {
  std::vector<double> bytes;
  std::vector<std::pair<std::string, std::vector<double>>> ratio;  // per algorithm, per anchor
  std::vector<double> measured_to;  // per algorithm (as ratio): the largest anchor it ran at
  double seconds = 0;               // how long measuring took
  // One line per anchor, us per operation ("-": pruned): "65536 B: ring 11.2 tree 12.0 ...".
  std::string table;
  // The ratio at `bytes`, linear in log(bytes) between anchors, flat beyond; 1 if not measured.
  double at(std::string_view algorithm, double bytes) const;
  // Whether at(algorithm, bytes) is carried from more than twice as small a size as any this
  // candidate ran at (pruned, or beyond the last anchor): a guess, not a measurement.
  bool extrapolated(std::string_view algorithm, double bytes) const;
  // What timeClose() measured at `bytes` (seconds per operation) becomes an anchor of those
  // candidates: from here at() carries their ratio to the model (`model(name)`, seconds at
  // `bytes`), and extrapolated() counts from here. The others keep their curves. Without it a
  // size timed 4x apart from the model (allreduce np 2 16 MiB: ring 2.1 ms, predicted 9.0)
  // left the next size with the model's guess, too dear to time.
  void learn(double bytes, const std::vector<std::pair<std::string, double>>& timed,
             const std::function<double(std::string_view)>& model);
};

// Anchor element counts for a collective: sizes from 8 B up to max_bytes (16 MiB at most),
// rounded as the harness rounds counts, at least one element per rank, no duplicates.
std::vector<uint64_t> anchorCounts(Collective c, int ranks, size_t elem, size_t max_bytes);

// Seconds per operation of `algo` at `count` elements on this rank: a barrier, one warm-up
// run, then `iters` back-to-back runs (what the harness times).
using TimeAlgorithm =
    std::function<core::Result<double>(const AlgorithmInfo& algo, uint64_t count, int iters)>;

// Times every candidate of `c` (all-to-allv: all-to-all's) at every anchor (a warm-up round,
// then three rounds taking turns; the slowest rank's time counts) and fits the ratios. From
// 1 MiB on, a candidate more than 3x slower than the best is not measured at larger anchors;
// anchors stop where the next would overrun a 1 s budget. Every rank must call it with the
// same arguments; every decision is taken from times already reduced over the ranks.
core::Result<Corrections> measureCandidates(
    Collective c, int ranks, size_t elem, size_t max_bytes, const CostParams& cost,
    const TimeAlgorithm& time,
    const std::function<core::Status(std::span<double>)>& max_over_ranks);

struct Choice {
  const AlgorithmInfo* algo = nullptr;
  std::vector<std::pair<std::string, double>> predicted_s;  // every candidate, cheapest first
  std::vector<std::pair<std::string, double>> timed_s;      // timed at the size, fastest first
  std::vector<std::string> extrapolated;  // candidates whose prediction is a guess at this size
  double timing_seconds = 0;              // how long timing them took
  // "rabenseifner 12.1 us < ring 15.3 us < tree 20.0 us", then, when candidates were timed at
  // the size itself, "; timed at this size in 0.03 s: ring 14.0 us < rabenseifner 14.9 us".
  std::string explain() const;
};

// `measured` (optional) corrects each candidate's formula; without it the formula alone decides.
Choice choose(Collective c, int ranks, double bytes, const CostParams& cost,
              const Corrections* measured = nullptr);

// Which of ch.predicted_s (indices, cheapest first) are worth timing at the size itself
// before the first row: the model's pick and those predicted within 1.5x of it, or within 4x
// where their prediction is extrapolated, as many as timing them (a warm-up and five rounds of
// batches of at least 10 ms) is predicted to take in 0.5 s. Extrapolation is where the model
// goes wrong most: a candidate pruned at 1 MiB for being 3x slower than recursive doubling
// (allreduce, np 2, the tree) inherits recursive doubling's fall beyond the caches, and at
// 16 MiB was predicted 3x slower than it while its rows ran 1.6x faster.
// Anchors are a few sizes, the model interpolates between them and holds flat beyond the last,
// and which of two close algorithms is faster can change from one process to the next
// (docs/algorithms.md): timing the close ones where the rows run settles what the model
// cannot. Fewer than two: the model's pick stands (and the result is empty).
std::vector<size_t> closeCandidates(const Choice& ch);

// Seconds per operation of `algo` at the size, on this rank, over `iters` back-to-back runs
// after one warm-up run.
using TimeAtSize = std::function<core::Result<double>(const AlgorithmInfo& algo, int iters)>;

// Times the candidates at `which` indices of ch.predicted_s (closeCandidates) at the size: a
// warm-up round sets each batch (10 ms), then five rounds taking turns (three to five: as many
// as the warm-up's times say fit in 0.5 s); the slowest rank's time counts and the median of
// the rounds decides. Sets ch.timed_s and picks the fastest as ch.algo.
// Every rank must call it alike.
core::Status timeClose(Choice& ch, Collective c, const std::vector<size_t>& which,
                       const TimeAtSize& time,
                       const std::function<core::Status(std::span<double>)>& max_over_ranks);

}  // namespace ccscope::collectives
