// Every registered data-movement schedule, for 1..17 ranks and awkward counts, out of place and
// (where the geometry allows) in place: each output element holds exactly the right source
// element (provenance) or, for reduce-scatter, every rank's contribution to the right element
// exactly once; no deadlock even when sends wait for their receives; no two ops touch the same
// elements in an undetermined order; and each rank sends what the algorithm's formula says.
#include "collectives/movement_schedules.h"

#include <gtest/gtest.h>

#include <bit>
#include <functional>
#include <tuple>

#include "collectives/algorithms.h"
#include "schedule_hazards.h"
#include "schedule_sim.h"

namespace ccscope::collectives {
namespace {

using testing::InPlace;
using testing::provenance;

struct Case {
  const AlgorithmInfo* algo;
  int ranks;
  uint64_t count;  // already rounded
  uint64_t segment;
  int root = 0;
  const AlltoallvPlan* plan = nullptr;
  bool in_place = false;
  int rs_mode = 0;  // reduce-scatter: 0 tags each contribution with its block, 1 its element
};

uint64_t block(const Case& c) { return c.count / c.ranks; }

// Reduce-scatter inputs: the bit of the rank, shifted by a residue of the element's block (or
// index), so a contribution that lands on the wrong element shows up as a wrong bit.
int residueShift(const Case& c, uint64_t e) {
  const uint64_t m = 64 / c.ranks, b = std::max<uint64_t>(1, block(c));
  return static_cast<int>(((c.rs_mode == 0 ? e / b : e) % m) * c.ranks);
}

uint64_t inputValue(const Case& c, int r, uint64_t i) {
  if (c.algo->collective == Collective::kReduceScatter)
    return uint64_t{1} << (r + residueShift(c, i));
  return provenance(r, i);
}

uint64_t expectedValue(const Case& c, int r, uint64_t e) {
  const int n = c.ranks;
  const uint64_t b = block(c);
  switch (c.algo->collective) {
    case Collective::kReduceScatter: {
      const uint64_t all = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
      return all << residueShift(c, r * b + e);
    }
    case Collective::kAllgather:
      return provenance(static_cast<int>(e / b), e % b);
    case Collective::kAlltoall:
      return provenance(static_cast<int>(e / b), r * b + e % b);
    case Collective::kAlltoallv: {
      int s = 0;
      while (s + 1 < n && c.plan->recvOffset(r, s + 1) <= e) ++s;
      return provenance(s, c.plan->sendOffset(s, r) + e - c.plan->recvOffset(r, s));
    }
    case Collective::kBroadcast:
      return provenance(c.root, e);
    case Collective::kSendrecv:
      return provenance((r + n - 1) % n, e);
    default:
      return 0;
  }
}

// Elements each rank must send; -1: only the total is fixed (checked separately).
int64_t expectedSent(const Case& c, int r) {
  const int n = c.ranks;
  const std::string name = c.algo->name;
  const int64_t b = static_cast<int64_t>(block(c)), count = static_cast<int64_t>(c.count);
  if (n == 1) return 0;
  switch (c.algo->collective) {
    case Collective::kAllgather:
      return (n - 1) * b;
    case Collective::kReduceScatter: {
      const int folded = n - static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
      const bool sends_all = name == "recursive_halving" && r < 2 * folded && r % 2 == 0;
      return sends_all ? n * b : (n - 1) * b;
    }
    case Collective::kAlltoall: {
      if (name != "bruck") return (n - 1) * b;
      int64_t bits = 0;
      for (int i = 0; i < n; ++i) bits += std::popcount(static_cast<unsigned>(i));
      return bits * b;
    }
    case Collective::kAlltoallv:
      return static_cast<int64_t>(c.plan->sendTotal(r) - c.plan->at(r, r));
    case Collective::kSendrecv:
      return count;
    case Collective::kBroadcast: {
      const int v = (r - c.root + n) % n;
      if (name == "chain") return v < n - 1 ? count : 0;
      if (name != "binomial") return -1;
      int kids = 0;
      const int low = v == 0 ? static_cast<int>(std::bit_ceil(static_cast<unsigned>(n))) : (v & -v);
      for (int m = low / 2; m >= 1; m /= 2) kids += v + m < n;
      return kids * count;
    }
    default:
      return -1;
  }
}

std::string describe(const Case& c) {
  return std::string(collectiveName(c.algo->collective)) + "/" + c.algo->name +
         " n=" + std::to_string(c.ranks) + " count=" + std::to_string(c.count) +
         " segment=" + std::to_string(c.segment) + " root=" + std::to_string(c.root) +
         (c.in_place ? " in place" : "") + ": ";
}

using Mutation = std::function<void(std::vector<Schedule>&)>;

// Builds, checks and simulates one case; returns the first problem found, "" if none.
std::string check(const Case& c, const Mutation& mutate = {}) {
  const int n = c.ranks;
  std::vector<Schedule> scheds;
  testing::SimSetup setup;
  std::vector<InPlace> layout;
  for (int r = 0; r < n; ++r) {
    ScheduleParams p{c.algo->collective, r, n, c.count, c.segment, false, c.root, c.plan};
    scheds.push_back(c.algo->build(p));
    Geometry g = geometry(c.algo->collective, c.count, n, r, c.plan);
    InPlace ip{c.in_place, g.in_place_in_offset, g.in_place_out_offset};
    layout.push_back(ip);
    setup.in_elems.push_back(g.in_elems);
    setup.out_elems.push_back(c.in_place
                                  ? std::max(ip.in_offset + g.in_elems, ip.out_offset + g.out_elems)
                                  : g.out_elems);
  }
  if (mutate) mutate(scheds);
  for (int r = 0; r < n; ++r)
    if (std::string race = testing::findRace(scheds[r], layout[r]); !race.empty())
      return describe(c) + race;
  if (std::string dl = testing::findRendezvousDeadlock(scheds); !dl.empty())
    return describe(c) + dl;
  if (c.in_place)
    for (int r = 0; r < n; ++r)
      scheds[r] = testing::inPlaceView(scheds[r], setup.in_elems[r], layout[r]);
  setup.input = [&c](int r, uint64_t i) { return inputValue(c, r, i); };
  testing::SimResult res = testing::simulate(scheds, setup);
  if (!res.ok) return describe(c) + res.error;
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    Geometry g = geometry(c.algo->collective, c.count, n, r, c.plan);
    const uint64_t base = c.in_place ? layout[r].out_offset : 0;
    for (uint64_t e = 0; e < g.out_elems; ++e)
      if (res.output[r][base + e] != expectedValue(c, r, e))
        return describe(c) + "rank " + std::to_string(r) + " output element " + std::to_string(e) +
               " is " + std::to_string(res.output[r][base + e]) + ", want " +
               std::to_string(expectedValue(c, r, e));
    const int64_t sent = static_cast<int64_t>(res.elems_sent[r]), want = expectedSent(c, r);
    total += sent;
    if (want >= 0 && sent != want)
      return describe(c) + "rank " + std::to_string(r) + " sent " + std::to_string(sent) +
             " elements, the formula says " + std::to_string(want);
  }
  // Broadcast: each of the n-1 other ranks receives every element exactly once, never more.
  if (c.algo->collective == Collective::kBroadcast &&
      total != static_cast<int64_t>((n - 1) * c.count))
    return describe(c) + "sent " + std::to_string(total) + " elements in total, want (n-1)*count";
  return "";
}

// Deterministic all-to-allv plans: uniform, and sparse uneven (about a third of pairs empty).
AlltoallvPlan makePlan(int n, uint64_t count, bool uneven) {
  AlltoallvPlan plan;
  plan.ranks = n;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      uint64_t h =
          (static_cast<uint64_t>(s) * 7919 + static_cast<uint64_t>(d) * 104729 + count * 31) *
          2654435761u;
      h ^= h >> 13;
      uint64_t even = partOffset(count, n, d + 1) - partOffset(count, n, d);
      plan.matrix.push_back(!uneven ? even : (h % 3 == 0 ? 0 : h % (count + 1)));
    }
  return plan;
}

std::vector<const AlgorithmInfo*> movementRows() {
  std::vector<const AlgorithmInfo*> rows;
  for (const AlgorithmInfo& a : allAlgorithms())
    if (a.collective != Collective::kAllreduce) rows.push_back(&a);
  return rows;
}

class MovementScheduleTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(MovementScheduleTest, RightDataFormulaBytesNoHazards) {
  const auto [row, n] = GetParam();
  const AlgorithmInfo* algo = movementRows()[row];
  const Collective coll = algo->collective;
  const bool in_place_ok =
      geometry(coll, 0, n, 0, nullptr).in_place_supported && coll != Collective::kAlltoallv;
  for (uint64_t raw : {uint64_t{0}, uint64_t{1}, uint64_t(n - 1), uint64_t(n + 1),
                       uint64_t(3 * n + 1), uint64_t{97}, uint64_t{1000}}) {
    const uint64_t count = roundCount(coll, raw, n);
    for (uint64_t segment : {uint64_t{1}, uint64_t{4}, uint64_t{1} << 20}) {
      if (segment == 1 && count > 100) continue;  // keeps schedules small enough to simulate fast
      for (bool uneven : {false, true}) {
        if (uneven && coll != Collective::kAlltoallv) continue;
        AlltoallvPlan plan = makePlan(n, count, uneven);
        for (bool in_place : {false, true}) {
          if (in_place && !in_place_ok) continue;
          Case c{algo, n, count, segment, static_cast<int>((raw + segment) % n), &plan, in_place};
          EXPECT_EQ(check(c), "");
          if (coll == Collective::kReduceScatter) {
            c.rs_mode = 1;
            EXPECT_EQ(check(c), "");
          }
        }
      }
    }
  }
}

std::string rowName(const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
  const AlgorithmInfo* a = movementRows()[std::get<0>(info.param)];
  return std::string(collectiveName(a->collective)) + "_" + a->name + "_" +
         std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    AllRowsAllRanks, MovementScheduleTest,
    ::testing::Combine(::testing::Range(0, static_cast<int>(movementRows().size())),
                       ::testing::Range(1, 18)),
    rowName);

TEST(MovementRegistryTest, ListsEveryAlgorithmOfTheIssue) {
  auto names = [](Collective c) { return algorithmNames(c); };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(Collective::kAllgather), (V{"ring", "recursive_doubling", "bruck"}));
  EXPECT_EQ(names(Collective::kReduceScatter), (V{"ring", "recursive_halving"}));
  EXPECT_EQ(names(Collective::kBroadcast), (V{"chain", "binomial", "scatter_allgather"}));
  EXPECT_EQ(names(Collective::kSendrecv), (V{"direct"}));
  EXPECT_EQ(names(Collective::kAlltoall), (V{"pairwise", "bruck", "linear"}));
  EXPECT_EQ(names(Collective::kAlltoallv), (V{"pairwise", "linear"}));
  for (const AlgorithmInfo* a : movementRows())  // costs grow with size and stay finite
    for (int n : {1, 2, 7, 8})
      EXPECT_LE(a->cost(n, 1024, CostParams{}), a->cost(n, 1 << 20, CostParams{})) << a->name;
}

// The checks above must fail on broken schedules: each mutation breaks one property.
const AlgorithmInfo* algo(Collective c, const char* name) { return findAlgorithm(c, name); }

void dropDeps(Schedule& s, OpKind kind, int nth) {
  for (Op& o : s.ops)
    if (o.kind == kind && nth-- == 0) o.dep_count = 0;
  s.finalize();
}

TEST(MovementCheckerTest, CatchesABlockSentFromTheWrongPlace) {
  Case c{algo(Collective::kAlltoall, "pairwise"), 4, 16, 4};
  ASSERT_EQ(check(c), "");
  std::string err = check(c, [](std::vector<Schedule>& s) {
    for (Op& o : s[0].ops)
      if (o.kind == OpKind::kSend) {
        o.a.offset = (o.a.offset + 4) % 16;
        break;
      }
  });
  EXPECT_NE(err.find("output element"), std::string::npos) << err;
}

TEST(MovementCheckerTest, CatchesAReductionOfTheWrongBlock) {
  for (int mode : {0, 1}) {
    Case c{algo(Collective::kReduceScatter, "ring"), 4, 16, 4};
    c.rs_mode = mode;
    ASSERT_EQ(check(c), "");
    std::string err = check(c, [](std::vector<Schedule>& s) {
      for (auto it = s[0].ops.rbegin(); it != s[0].ops.rend(); ++it)
        if (it->kind == OpKind::kReduce) {
          it->a.offset = (it->a.offset + 8) % 16;
          break;
        }
    });
    EXPECT_NE(err.find("output element"), std::string::npos) << err;
  }
}

TEST(MovementCheckerTest, CatchesAForwardThatDoesNotWaitForItsReceive) {
  Case c{algo(Collective::kAllgather, "ring"), 4, 16, 4};
  std::string err = check(c, [](std::vector<Schedule>& s) { dropDeps(s[2], OpKind::kSend, 1); });
  EXPECT_NE(err.find("no fixed order"), std::string::npos) << err;
}

TEST(MovementCheckerTest, CatchesAnInPlaceOverwriteOfUnsentInput) {
  // Rank 0 of 3 folds out of recursive halving: its input goes to rank 1, its block comes back
  // into the output, which in place is its input. Without the wait only in place is wrong.
  Case c{algo(Collective::kReduceScatter, "recursive_halving"), 3, 12, 4};
  auto broken = [](std::vector<Schedule>& s) { dropDeps(s[0], OpKind::kRecv, 0); };
  EXPECT_EQ(check(c, broken), "");
  c.in_place = true;
  ASSERT_EQ(check(c), "");
  std::string err = check(c, broken);
  EXPECT_NE(err.find("no fixed order"), std::string::npos) << err;
}

TEST(MovementCheckerTest, CatchesARingThatDeadlocksWhenSendsWaitForReceives) {
  // Every rank sends, then receives once its send completed: fine if sends are buffered (the
  // simulator), a deadlock if a send needs its receive posted.
  std::vector<Schedule> s(3);
  for (int r = 0; r < 3; ++r) {
    s[r].rank = r;
    s[r].ranks = 3;
    uint32_t snd = testing::appendOp(
        s[r], Op{.kind = OpKind::kSend, .peer = (r + 1) % 3, .a = {Buf::kInput, 0}, .count = 1});
    testing::appendOp(
        s[r], Op{.kind = OpKind::kRecv, .peer = (r + 2) % 3, .dst = {Buf::kOutput, 0}, .count = 1},
        {snd});
    s[r].finalize();
  }
  EXPECT_TRUE(testing::simulate(s, 1).ok);
  EXPECT_NE(testing::findRendezvousDeadlock(s), "");
}

TEST(MovementCheckerTest, CatchesBytesBeyondTheFormula) {
  Case c{algo(Collective::kAllgather, "ring"), 4, 16, 4};
  std::string err = check(c, [](std::vector<Schedule>& s) {
    testing::appendOp(
        s[0], Op{.kind = OpKind::kSend, .peer = 1, .tag = 999, .a = {Buf::kInput, 0}, .count = 4});
    s[1].scratch_elems = 4;
    testing::appendOp(
        s[1],
        Op{.kind = OpKind::kRecv, .peer = 0, .tag = 999, .dst = {Buf::kScratch, 0}, .count = 4});
    s[0].finalize();
    s[1].finalize();
  });
  EXPECT_NE(err.find("the formula says"), std::string::npos) << err;
}

}  // namespace
}  // namespace ccscope::collectives
