// SPDX-License-Identifier: Apache-2.0
#include "nccl/straggler.h"

#include <gtest/gtest.h>

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

// Steps of 100 ms with two all-reduces each, from `from_s` to `to_s` seconds; every rank arrives
// with a jitter of up to `jitter_ms`, and rank `slow` (if any) `delay_ms(second)` later.
void steps(Job &job, double from_s, double to_s, int slow, double jitter_ms,
           const std::function<double(double)> &delay_ms, std::mt19937 &random) {
  std::uniform_real_distribution<double> jitter(0, jitter_ms);
  for (double ms = from_s * 1000; ms < to_s * 1000 - 1e-6; ms += 100)
    for (int call = 0; call < 2; ++call)
      job.collective([&](int r) {
        return ms + call * 10.0 + jitter(random) + (r == slow ? delay_ms(ms / 1000) : 0);
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
  const auto tally = tally_collectives(job.ranks(), next, 6000 * kMs);
  EXPECT_EQ(tally.collectives, 120u);
  EXPECT_EQ(tally.last.at(kRanks[2]), 120u);
  EXPECT_NEAR(tally.median_wait_seconds, 0.050, 0.003);
  EXPECT_NEAR(tally.waited.at(kRanks[2]), 120 * 0.050, 120 * 0.003);
  EXPECT_EQ(next, 120u);
  EXPECT_EQ(tally_collectives(job.ranks(), next, 7000 * kMs).collectives, 0u)
      << "tallied once only";
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
  const auto tally = tally_collectives(job.ranks(), next, 1100 * kMs);
  EXPECT_EQ(tally.collectives, 21u) << "20 steps' and number 22; not number 21";
  EXPECT_EQ(tally.last.at(kRanks[2]), 20u) << "number 22 came at once to all: a tie";
}

TEST(StragglerTally, ArrivalsAreMatchedBySequenceWhenRanksKeepDifferentHistories) {
  // Rank 0 keeps only its 5 latest arrivals, the others more: only those 5 are compared.
  Job job(2, {.max_communicators_per_process = 8, .arrivals_kept = 5});
  for (int k = 0; k < 20; ++k)
    job.collective([&](int r) { return k * 100.0 + r * 30.0; });
  std::uint64_t next = 0;
  const auto tally = tally_collectives(job.ranks(), next, 2000 * kMs);
  EXPECT_EQ(tally.collectives, 5u);
  EXPECT_EQ(tally.last.at(kRanks[1]), 5u);
  EXPECT_NEAR(tally.median_wait_seconds, 0.030, 1e-9);
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
  // The window's last share reaches 90 % once 27 of its 31 tallies came after the slowdown; in
  // step, each rank comes last at about half the collectives.
  EXPECT_GE(result.named_at.front(), 60 + 20);
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
    for (double ms = from * 1000; ms < to * 1000 - 1e-6; ms += 50) {
      const auto turn = std::find_if(turns.begin(), turns.end(),
                                     [&](const auto &t) { return ms / 1000 < t.first; });
      const double lag = lag_ms(random);
      j.collective([&](int r) { return ms + (r == turn->second ? lag : 0); });
    }
  });
  EXPECT_TRUE(result.named_at.empty()) << "first at " << result.named_at.front() << " s";
}

TEST(Straggler, ABurstAtSetUpNamesNobody) {
  // 25 collectives in 250 ms, rank 0 20 ms late at each (one rank builds its model while the
  // other waits), then a quiet minute.
  Job job(2);
  for (int k = 0; k < 25; ++k)
    job.collective([&](int r) { return 500.0 + k * 10.0 + (r == 0 ? 20 : 0); });
  StragglerHistory history;
  const auto result = run(job, history, 0, 60, [](Job &, double, double) {});
  EXPECT_TRUE(result.named_at.empty()) << "first at " << result.named_at.front() << " s";
}

TEST(Straggler, AFewLongWaitsNameNobody) {
  // In step for a minute but for one collective in ten, where rank 0 is 200 ms late: 20 ms a
  // collective on the mean, half a millisecond on the median.
  Job job(2);
  StragglerHistory history;
  int k = 0;
  const auto result = run(job, history, 0, 60, [&](Job &j, double from, double to) {
    for (double ms = from * 1000; ms < to * 1000 - 1e-6; ms += 100, ++k)
      j.collective([&](int r) { return ms + (r == 0 ? (k % 10 == 0 ? 200.0 : 0.5) : 0); });
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
    for (double ms = from * 1000; ms < to * 1000 - 1e-6; ms += 0.5)
      j.collective([&](int r) { return ms + (r == 1 ? 6.0 : 0); });
  });
  ASSERT_TRUE(result.last);
  EXPECT_EQ(result.last->rank.process, kRanks[1]);
  EXPECT_EQ(result.last->collectives, 20u * 512);
}

TEST(Straggler, ForgetsTheCommunicatorsNotKept) {
  Job job(2);
  StragglerHistory history;
  run(job, history, 0, 20, [&](Job &j, double from, double to) {
    for (double ms = from * 1000; ms < to * 1000 - 1e-6; ms += 100)
      j.collective([&](int r) { return ms + (r == 1 ? 30.0 : 0); });
  });
  ASSERT_TRUE(history.judge("c", job.ranks(), 20'500 * kMs));
  history.keep_only({"other"});
  EXPECT_FALSE(history.judge("c", job.ranks(), 21'000 * kMs)) << "its tallies are gone";
}

} // namespace
} // namespace neutracer
