// SPDX-License-Identifier: Apache-2.0
#include "nccl/straggler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "nccl_event.h"

namespace neutracer {
namespace {

using test::nccl_call;
using test::nccl_init;

constexpr std::uint64_t kMs = 1'000'000ull;
const ProcessId kRanks[] = {{100, 1}, {101, 1}, {102, 1}, {103, 1}};

std::uint64_t handle_of(int rank) { return 0x100 + static_cast<std::uint64_t>(rank); }

// `nranks` ranks of one communicator, fed one collective at a time.
struct Job {
  explicit Job(int nranks, NcclCommunicatorsSettings settings = {}) : all(settings), n(nranks) {
    for (int r = 0; r < n; ++r)
      all.apply(kRanks[r], nccl_init(handle_of(r), 0xbeef, r, n));
  }
  // One collective: rank r arrives at `at_ms(r)`.
  void collective(const std::function<double(int)> &at_ms) {
    for (int r = 0; r < n; ++r)
      all.apply(kRanks[r], nccl_call(NT_NCCL_ALL_REDUCE, handle_of(r), 1, 7,
                                     static_cast<std::uint64_t>(at_ms(r) * kMs) + 1));
  }
  std::vector<NcclRank> ranks() const { return joined_communicators(all).begin()->second; }

  NcclCommunicators all;
  int n;
};

// Calls `at(ms)` every `step_ms` milliseconds from `from_s` to `to_s` seconds (not at `to_s`).
void every(double from_s, double to_s, double step_ms, const std::function<void(double)> &at) {
  for (double ms = from_s * 1000; ms < to_s * 1000 - 1e-6; ms += step_ms)
    at(ms);
}

// Steps of 100 ms with two all-reduces each, from `from_s` to `to_s` seconds; every rank arrives
// with a jitter of up to `jitter_ms`, and rank `slow` (if any) `delay_ms(second)` later.
void steps(Job &job, double from_s, double to_s, int slow, double jitter_ms,
           const std::function<double(double)> &delay_ms, std::mt19937 &random) {
  std::uniform_real_distribution<double> jitter(0, jitter_ms);
  every(from_s, to_s, 100, [&](double ms) {
    for (int call = 0; call < 2; ++call)
      job.collective([&](int r) {
        return ms + call * 10.0 + jitter(random) + (r == slow ? delay_ms(ms / 1000) : 0);
      });
  });
}

// Judges at each whole second from `from_s` to `to_s`, feeding the steps of each second first;
// the seconds at which a straggler was named, and the last verdict.
struct Run {
  std::vector<int> named_at;
  std::optional<Straggler> last;
};
Run run(Job &job, StragglerHistory &history, int from_s, int to_s,
        const std::function<void(Job &, double, double)> &feed) {
  Run result;
  for (int s = from_s; s < to_s; ++s) {
    feed(job, s, s + 1);
    result.last = history.judge("c", job.ranks(), static_cast<std::uint64_t>(s + 1) * 1000 * kMs);
    if (result.last)
      result.named_at.push_back(s + 1);
  }
  return result;
}

TEST(StragglerTally, PutsEachWaitOnTheRankThatArrivedLast) {
  Job job(4);
  std::mt19937 random(3);
  steps(
      job, 0, 6, /*slow=*/2, /*jitter_ms=*/2, [](double) { return 50.0; }, random);
  std::uint64_t next = 0;
  const auto tally = tally_collectives(job.ranks(), next, 0, 6000 * kMs);
  EXPECT_EQ(tally.collectives, 120u);
  EXPECT_EQ(tally.last.at({kRanks[2], handle_of(2)}), 120u);
  EXPECT_NEAR(tally.median_wait_seconds, 0.050, 0.003);
  EXPECT_NEAR(tally.waited.at({kRanks[2], handle_of(2)}), 120 * 0.050, 120 * 0.003);
  EXPECT_EQ(next, 120u);
  EXPECT_EQ(tally_collectives(job.ranks(), next, 0, 7000 * kMs).collectives, 0u)
      << "tallied once only";
  next = 0;
  EXPECT_EQ(tally_collectives(job.ranks(), next, 3000 * kMs, 7000 * kMs).collectives, 60u)
      << "only the collectives since 3 s";
}

TEST(StragglerTally, ACollectiveWithALostArrivalIsLeftOut) {
  Job job(4);
  std::mt19937 random(3);
  steps(
      job, 0, 1, /*slow=*/2, 2, [](double) { return 50.0; }, random);
  // Rank 2's next collective is numbered 22: its 21st event was lost. Both collectives 21
  // and 22 have arrivals of every other rank.
  for (int r = 0; r < 4; ++r)
    for (std::uint64_t number = 21; number <= 22; ++number) {
      if (r == 2 && number == 21)
        continue;
      auto call = nccl_call(NT_NCCL_ALL_REDUCE, handle_of(r), 1, 7, (1000 + number) * kMs);
      call.call.sequence = number;
      job.all.apply(kRanks[r], call);
    }
  std::uint64_t next = 0;
  const auto tally = tally_collectives(job.ranks(), next, 0, 1100 * kMs);
  EXPECT_EQ(tally.collectives, 21u) << "20 steps' and number 22; not number 21";
  EXPECT_EQ(tally.last.at({kRanks[2], handle_of(2)}), 20u)
      << "number 22 came at once to all: a tie";
}

TEST(StragglerTally, ArrivalsAreMatchedByNumberWhenRanksHoldDifferentOnes) {
  // 5 arrivals kept: rank 0 holds numbers 15..19, rank 1, two collectives ahead, 17..21. Only
  // 17..19 are in both, at different places of the two ranks' histories.
  Job job(2, {.max_communicators_per_process = 8, .arrivals_kept = 5});
  for (int k = 0; k < 20; ++k)
    job.collective([&](int r) { return k * 100.0 + r * 30.0; });
  for (int k = 20; k < 22; ++k)
    job.all.apply(kRanks[1], nccl_call(NT_NCCL_ALL_REDUCE, handle_of(1), 1, 7,
                                       static_cast<std::uint64_t>(k * 100 + 30) * kMs));
  std::uint64_t next = 0;
  const auto tally = tally_collectives(job.ranks(), next, 0, 2200 * kMs);
  EXPECT_EQ(tally.collectives, 3u);
  EXPECT_EQ(tally.last.at({kRanks[1], handle_of(1)}), 3u);
  EXPECT_NEAR(tally.median_wait_seconds, 0.030, 1e-9);
  EXPECT_EQ(next, 20u) << "numbers 20 and 21 wait for rank 0";
}

TEST(StragglerTally, RanksThatNumberAfreshStartOver) {
  Job job(2);
  for (int k = 0; k < 20; ++k)
    job.collective([&](int r) { return k * 100.0 + r * 30.0; });
  std::uint64_t next = 0;
  tally_collectives(job.ranks(), next, 0, 2000 * kMs);
  ASSERT_EQ(next, 20u);
  // Both ranks restarted (new processes, the same communicator id): 5 collectives so far.
  Job again(2);
  for (int k = 0; k < 5; ++k)
    again.collective([&](int r) { return 3000 + k * 100.0 + r * 30.0; });
  EXPECT_EQ(tally_collectives(again.ranks(), next, 0, 3500 * kMs).collectives, 5u);
  EXPECT_EQ(next, 5u);
}

TEST(Straggler, ALateRankIsNamedOnceItsLatenessSpansHalfTheWindow) {
  Job job(4);
  StragglerHistory history;
  std::mt19937 random(3);
  const auto result = run(job, history, 0, 40, [&](Job &j, double from, double to) {
    steps(
        j, from, to, /*slow=*/2, 2, [](double) { return 50.0; }, random);
  });
  ASSERT_FALSE(result.named_at.empty());
  EXPECT_GE(result.named_at.front(), 16) << "tallies from 1 s to 16 s span half of 30 s";
  EXPECT_LE(result.named_at.front(), 17);
  ASSERT_TRUE(result.last);
  EXPECT_EQ(result.last->rank.process, kRanks[2]);
  EXPECT_GT(result.last->wait_share, 0.99);
  EXPECT_DOUBLE_EQ(result.last->last_share, 1.0);
  EXPECT_NEAR(result.last->median_wait_seconds, 0.050, 0.003);
  EXPECT_EQ(result.last->collectives, 31u * 20) << "the tallies of the window's 31 seconds";
}

TEST(Straggler, ARankSlowedAfterAMinuteInStepIsNamedWithin30Seconds) {
  Job job(2);
  StragglerHistory history;
  std::mt19937 random(3);
  const auto result = run(job, history, 0, 120, [&](Job &j, double from, double to) {
    steps(
        j, from, to, /*slow=*/1, /*jitter_ms=*/2, [](double s) { return s < 60 ? 0.0 : 50.0; },
        random);
  });
  ASSERT_FALSE(result.named_at.empty());
  // In step, each rank comes last at about half the collectives: the window's last share
  // reaches 95 % once about 28 of its 31 tallies came after the slowdown.
  EXPECT_GE(result.named_at.front(), 60 + 25);
  EXPECT_LE(result.named_at.front(), 60 + 30);
  ASSERT_TRUE(result.last);
  EXPECT_EQ(result.last->rank.process, kRanks[1]);
}

TEST(Straggler, RanksInStepNameNobody) {
  Job job(4);
  StragglerHistory history;
  std::mt19937 random(3);
  const auto result = run(job, history, 0, 90, [&](Job &j, double from, double to) {
    steps(
        j, from, to, /*slow=*/-1, /*jitter_ms=*/2, [](double) { return 0.0; }, random);
  });
  EXPECT_TRUE(result.named_at.empty()) << "first at " << result.named_at.front() << " s";
}

TEST(Straggler, RanksThatTakeTurnsArrivingLastNameNobody) {
  // What ranks that run ahead of their GPUs do (DDP on H200s): one arrives 5..25 ms after the
  // other for 2..8 s, then the other way round, for ten minutes.
  Job job(2);
  StragglerHistory history;
  std::mt19937 random(7);
  std::uniform_int_distribution<int> turn_s(2, 8);
  std::uniform_real_distribution<double> lag_ms(5, 25);
  std::vector<std::pair<double, int>> turns; // (until second, late rank)
  for (double until = 0; until < 600;)
    turns.emplace_back(until += turn_s(random), static_cast<int>(turns.size() % 2));
  const auto result = run(job, history, 0, 600, [&](Job &j, double from, double to) {
    every(from, to, 50, [&](double ms) {
      const auto turn = std::find_if(turns.begin(), turns.end(),
                                     [&](const auto &t) { return ms / 1000 < t.first; });
      const double lag = lag_ms(random);
      j.collective([&](int r) { return ms + (r == turn->second ? lag : 0); });
    });
  });
  EXPECT_TRUE(result.named_at.empty()) << "first at " << result.named_at.front() << " s";
}

TEST(Straggler, ABurstAtSetUpNamesNobody) {
  // 30 collectives over 3 s (three scans), rank 0 20 ms late at each (one rank builds its
  // model while the other waits), then a quiet minute: lateness, but not spread over the window.
  Job job(2);
  StragglerHistory history;
  const auto result = run(job, history, 0, 60, [&](Job &j, double from, double to) {
    every(from, std::min(to, 3.0), 100,
          [&](double ms) { j.collective([&](int r) { return ms + (r == 0 ? 20 : 0); }); });
  });
  EXPECT_TRUE(result.named_at.empty()) << "first at " << result.named_at.front() << " s";
}

TEST(Straggler, AFewLongWaitsNameNobody) {
  // In step for a minute but for one collective in ten, where rank 0 is 200 ms late: 20 ms a
  // collective on the mean, half a millisecond on the median.
  Job job(2);
  StragglerHistory history;
  int k = 0;
  const auto result = run(job, history, 0, 60, [&](Job &j, double from, double to) {
    every(from, to, 100, [&](double ms) {
      j.collective([&](int r) { return ms + (r == 0 ? (k % 10 == 0 ? 200.0 : 0.5) : 0); });
      ++k;
    });
  });
  EXPECT_TRUE(result.named_at.empty()) << "first at " << result.named_at.front() << " s";
}

TEST(Straggler, AStragglerThatCatchesUpIsDroppedWithinTheWindow) {
  Job job(2);
  StragglerHistory history;
  std::mt19937 random(3);
  // Late for the first 40 s, in step from then on.
  const auto result = run(job, history, 0, 80, [&](Job &j, double from, double to) {
    steps(
        j, from, to, /*slow=*/1, 1, [](double s) { return s < 40 ? 30.0 : 0.0; }, random);
  });
  ASSERT_FALSE(result.named_at.empty());
  EXPECT_LT(result.named_at.back(), 75);
  EXPECT_FALSE(result.last);
}

TEST(Straggler, TooFewCollectivesNameNobody) {
  // One collective every 4 s: 8 in the window, 10 needed.
  Job job(2);
  StragglerHistory history;
  const auto result = run(job, history, 0, 60, [&](Job &j, double from, double) {
    if (static_cast<int>(from) % 4 == 0)
      j.collective([&](int r) { return from * 1000 + (r == 1 ? 50 : 0); });
  });
  EXPECT_TRUE(result.named_at.empty()) << "first at " << result.named_at.front() << " s";
}

TEST(Straggler, AJobFasterThanTheArrivalsKeptIsJudgedOverTheWholeWindow) {
  // 2 000 collectives a second, 512 arrivals kept: each scan tallies its last 512.
  Job job(2);
  StragglerHistory history;
  const auto result = run(job, history, 0, 20, [&](Job &j, double from, double to) {
    every(from, to, 0.5,
          [&](double ms) { j.collective([&](int r) { return ms + (r == 1 ? 6.0 : 0); }); });
  });
  ASSERT_TRUE(result.last);
  EXPECT_EQ(result.last->rank.process, kRanks[1]);
  EXPECT_EQ(result.last->collectives, 20u * 512);
}

// When a rank arrived last, as the daemon named it in a healthy two-rank DDP job on two H200s
// (1 150 collectives a second; the old rule judged the 512 latest arrivals, under half a
// second): (second, rank) at each change, ten minutes. Read pessimistically here: the rank
// stays late until the next change (the daemon may have named nobody in between).
constexpr std::pair<int, int> kObservedTurns[] = {
    {0, 0},   {1, 1},   {6, 0},   {8, 1},   {13, 0},  {17, 1},  {19, 0},  {22, 1},  {25, 0},
    {32, 1},  {47, 0},  {51, 1},  {57, 0},  {58, 1},  {65, 0},  {66, 1},  {67, 0},  {71, 1},
    {79, 0},  {88, 1},  {90, 0},  {92, 1},  {95, 0},  {96, 1},  {107, 0}, {110, 1}, {114, 0},
    {118, 1}, {121, 0}, {128, 1}, {130, 0}, {138, 1}, {146, 0}, {150, 1}, {155, 0}, {159, 1},
    {160, 0}, {161, 1}, {166, 0}, {167, 1}, {171, 0}, {177, 1}, {183, 0}, {187, 1}, {196, 0},
    {198, 1}, {199, 0}, {204, 1}, {208, 0}, {211, 1}, {220, 0}, {226, 1}, {232, 0}, {234, 1},
    {237, 0}, {238, 1}, {251, 0}, {256, 1}, {264, 0}, {269, 1}, {272, 0}, {274, 1}, {275, 0},
    {277, 1}, {291, 0}, {294, 1}, {296, 0}, {298, 1}, {301, 0}, {304, 1}, {308, 0}, {309, 1},
    {313, 0}, {315, 1}, {316, 0}, {328, 1}, {333, 0}, {335, 1}, {338, 0}, {339, 1}, {340, 0},
    {341, 1}, {346, 0}, {347, 1}, {353, 0}, {363, 1}, {365, 0}, {367, 1}, {369, 0}, {374, 1},
    {376, 0}, {378, 1}, {393, 0}, {395, 1}, {399, 0}, {404, 1}, {406, 0}, {409, 1}, {411, 0},
    {415, 1}, {429, 0}, {431, 1}, {443, 0}, {444, 1}, {445, 0}, {452, 1}, {461, 0}, {463, 1},
    {469, 0}, {474, 1}, {477, 0}, {479, 1}, {486, 0}, {487, 1}, {505, 0}, {506, 1}, {507, 0},
    {510, 1}, {511, 0}, {515, 1}, {526, 0}, {528, 1}, {532, 0}, {533, 1}, {536, 0}, {539, 1},
    {545, 0}, {546, 1}, {559, 0}, {562, 1}, {564, 0}, {567, 1}, {574, 0}, {576, 1}, {581, 0},
    {591, 1}, {593, 0}, {597, 1}, {598, 0}, {599, 1},
};

TEST(Straggler, TheTurnsOfAHealthyDdpJobOnH200sNameNobody) {
  Job job(2);
  StragglerHistory history;
  const auto late_at = [](double second) {
    int late = 0;
    for (const auto &[from, rank] : kObservedTurns)
      if (from <= second)
        late = rank;
    return late;
  };
  std::mt19937 random(5);
  std::uniform_real_distribution<double> lag_ms(5, 25);
  const auto result = run(job, history, 0, 600, [&](Job &j, double from, double to) {
    every(from, to, 20, [&](double ms) {
      const int late = late_at(ms / 1000);
      const double lag = lag_ms(random);
      j.collective([&](int r) { return ms + (r == late ? lag : 0); });
    });
  });
  EXPECT_TRUE(result.named_at.empty()) << "first at " << result.named_at.front() << " s";
}

TEST(Straggler, AProcessWithTwoRanksHasTheLateOneNamed) {
  // One process drives ranks 0 and 1 (two communicator handles), another rank 2; rank 1 is late.
  NcclCommunicators all;
  const ProcessId both{200, 1}, other{201, 1};
  all.apply(both, nccl_init(0x10, 0xbeef, 0, 3));
  all.apply(both, nccl_init(0x11, 0xbeef, 1, 3));
  all.apply(other, nccl_init(0x20, 0xbeef, 2, 3));
  StragglerHistory history;
  std::optional<Straggler> last;
  for (int k = 0; k < 400; ++k) {
    const auto ms = static_cast<std::uint64_t>(k * 100);
    all.apply(both, nccl_call(NT_NCCL_ALL_REDUCE, 0x10, 1, 7, ms * kMs + 1));
    all.apply(both, nccl_call(NT_NCCL_ALL_REDUCE, 0x11, 1, 7, (ms + 30) * kMs));
    all.apply(other, nccl_call(NT_NCCL_ALL_REDUCE, 0x20, 1, 7, (ms + 1) * kMs));
    if (k % 10 == 9)
      last = history.judge("c", joined_communicators(all).begin()->second, (ms + 100) * kMs);
  }
  ASSERT_TRUE(last);
  EXPECT_EQ(last->rank.process, both);
  EXPECT_EQ(last->rank.communicator->rank, 1);
}

TEST(Straggler, SplitsHeldByOneProcessAreRanksOfTheirOwn) {
  // One process holds two ranks of a communicator and splits both (a split's rank number is not
  // known: -1 in each); another process holds the third. The split's rank held by handle 0x19
  // is late: it is named, not its process's other rank.
  NcclCommunicators all;
  const ProcessId both{200, 1}, other{201, 1};
  all.apply(both, nccl_init(0x10, 0xbeef, 0, 3));
  all.apply(both, nccl_init(0x18, 0xbeef, 1, 3));
  all.apply(other, nccl_init(0x20, 0xbeef, 2, 3));
  const auto split = [](std::uint64_t parent, std::uint64_t child) {
    nt_nccl_event event{};
    event.kind = NT_EVENT_NCCL;
    event.op = NT_NCCL_COMM_SPLIT;
    event.call.comm = child;
    event.call.comm_key = parent;
    event.call.rank = 7; // the color
    return event;
  };
  all.apply(both, split(0x10, 0x11));
  all.apply(both, split(0x18, 0x19));
  all.apply(other, split(0x20, 0x21));
  StragglerHistory history;
  std::optional<Straggler> last;
  for (int k = 0; k < 400; ++k) {
    const auto ms = static_cast<std::uint64_t>(k * 100);
    all.apply(both, nccl_call(NT_NCCL_ALL_REDUCE, 0x11, 1, 7, ms * kMs + 1));
    all.apply(both, nccl_call(NT_NCCL_ALL_REDUCE, 0x19, 1, 7, (ms + 30) * kMs));
    all.apply(other, nccl_call(NT_NCCL_ALL_REDUCE, 0x21, 1, 7, (ms + 1) * kMs));
    if (k % 10 == 9) {
      const auto joined = joined_communicators(all);
      const auto split_ranks = std::find_if(joined.begin(), joined.end(), [](const auto &c) {
        return std::any_of(c.second.begin(), c.second.end(),
                           [](const NcclRank &r) { return r.handle == 0x11; });
      });
      ASSERT_NE(split_ranks, joined.end());
      ASSERT_EQ(split_ranks->second.size(), 3u) << "the three splits join";
      last = history.judge("split", split_ranks->second, (ms + 100) * kMs);
    }
  }
  ASSERT_TRUE(last);
  EXPECT_EQ(last->rank.process, both);
  EXPECT_EQ(last->rank.handle, 0x19u);
  EXPECT_EQ(last->rank.communicator->rank, -1);
}

TEST(Straggler, AStragglerThatLeftIsNotNamed) {
  Job job(3);
  StragglerHistory history;
  std::mt19937 random(3);
  run(job, history, 0, 30, [&](Job &j, double from, double to) {
    steps(
        j, from, to, /*slow=*/2, 1, [](double) { return 40.0; }, random);
  });
  ASSERT_TRUE(history.judge("c", job.ranks(), 30'000 * kMs));
  job.all.forget(kRanks[2]);
  EXPECT_FALSE(history.judge("c", job.ranks(), 30'500 * kMs));
}

TEST(Straggler, ShortScansInALongWindowAreMergedNotLost) {
  // 100 ms scans, a 60 s window, 64 tallies at most: a slow rank is still named, over all the
  // window's collectives.
  Job job(2);
  StragglerHistory history({.window_seconds = 60, .max_tallies = 64});
  std::optional<Straggler> last;
  for (int k = 0; k < 900; ++k) { // 90 s of collectives every 100 ms, a scan after each
    const double ms = k * 100.0;
    job.collective([&](int r) { return ms + (r == 1 ? 20.0 : 0); });
    last = history.judge("c", job.ranks(), static_cast<std::uint64_t>(ms + 50) * kMs);
  }
  ASSERT_TRUE(last);
  EXPECT_EQ(last->rank.process, kRanks[1]);
  EXPECT_GE(last->collectives, 600u - 64) << "60 s of collectives, give or take a merged tally";
  EXPECT_LE(last->collectives, 600u + 64);
}

TEST(Straggler, ForgetsTheCommunicatorsNotKept) {
  Job job(2);
  StragglerHistory history;
  run(job, history, 0, 20, [&](Job &j, double from, double to) {
    every(from, to, 100,
          [&](double ms) { j.collective([&](int r) { return ms + (r == 1 ? 30.0 : 0); }); });
  });
  ASSERT_TRUE(history.judge("c", job.ranks(), 20'500 * kMs));
  history.keep_only({"other"});
  EXPECT_FALSE(history.judge("c", job.ranks(), 21'000 * kMs)) << "its tallies are gone";
}

} // namespace
} // namespace neutracer
