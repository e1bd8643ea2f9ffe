// SPDX-License-Identifier: Apache-2.0
#include "allocator/investigation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace neutracer {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
// CLOCK_MONOTONIC starts anywhere: windows are not aligned with the workload's start (a
// quarter-second start keeps these times exact in nanoseconds).
constexpr double kClockStart = 5000.25;

std::uint64_t ns(double seconds) {
  return static_cast<std::uint64_t>(std::llround((kClockStart + seconds) * 1e9));
}

ProcessId process(int pid) { return {pid, 1000u + static_cast<std::uint64_t>(pid)}; }

using Usage = std::function<std::uint64_t(int second)>;

// A leak: 40 MiB/s on top of 1 GiB (80 MiB per 2 s window).
std::uint64_t leaking(int second) { return kGiB + static_cast<std::uint64_t>(second) * 40 * kMiB; }
std::uint64_t flat(int /*second*/) { return 2 * kGiB; }

struct TimedChange {
  int second = 0;
  InvestigationChange change;
};

// The driver view's scans: once a second over [from, to), each process's use, then a decision.
std::vector<TimedChange> scan(Investigations &investigations,
                              const std::vector<std::pair<ProcessId, Usage>> &processes, int from,
                              int to) {
  std::vector<TimedChange> changes;
  for (int second = from; second < to; ++second) {
    for (const auto &[id, used] : processes)
      investigations.observe(id, ns(second), used(second));
    for (const auto &change : investigations.decide(ns(second)))
      changes.push_back({second, change});
  }
  return changes;
}

// The second of the first change of `id` that opens (or closes) its view, if any.
std::optional<int> first(const std::vector<TimedChange> &changes, const ProcessId &id, bool open) {
  for (const auto &timed : changes)
    if (timed.change.process == id && timed.change.open == open)
      return timed.second;
  return std::nullopt;
}

TEST(Investigations, SteadyGrowthOpensOnceTheWindowsHaveSeenIt) {
  Investigations investigations;
  const auto changes = scan(investigations, {{process(1), leaking}}, 0, 20);
  ASSERT_FALSE(changes.empty());
  const auto &opened = changes.front();
  EXPECT_TRUE(opened.change.open);
  EXPECT_EQ(opened.change.process, process(1));
  EXPECT_EQ(opened.change.reason, InvestigationReason::growth);
  // Three complete 2 s windows are needed; the horizon rule (512 MiB) would take 13 s.
  EXPECT_GE(opened.second, 6);
  EXPECT_LE(opened.second, 8);
  EXPECT_EQ(changes.size(), 1u);
  EXPECT_TRUE(investigations.is_open(process(1)));
  EXPECT_EQ(investigations.open_count(), 1u);
  EXPECT_EQ(investigations.opened_at(process(1)), ns(opened.second));
}

TEST(Investigations, GrowthBelowMinGrowthDoesNotOpen) {
  Investigations investigations({.horizon_growth_bytes = 100 * kGiB});
  // 10 MiB/s: 40 MiB over the two rises of three 2 s windows, below 64 MiB.
  const auto changes =
      scan(investigations,
           {{process(1),
             [](int second) { return kGiB + static_cast<std::uint64_t>(second) * 10 * kMiB; }}},
           0, 60);
  EXPECT_TRUE(changes.empty());
}

TEST(Investigations, FlatUseNeverOpens) {
  Investigations investigations;
  // Steps of 1 s that take 256 MiB of temporaries and give them back, for ten minutes.
  const auto stepping = [](int second) { return 2 * kGiB + (second % 2 ? 256 * kMiB : 0); };
  const auto changes = scan(investigations, {{process(1), flat}, {process(2), stepping}}, 0, 600);
  EXPECT_TRUE(changes.empty());
  EXPECT_EQ(investigations.open_count(), 0u);
}

TEST(Investigations, HorizonRuleOpensBurstyGrowth) {
  Investigations investigations;
  // 300 MiB every 20 s: never rising in three windows in a row, 600 MiB over a minute.
  const auto bursty = [](int second) {
    return kGiB + static_cast<std::uint64_t>(second / 20) * 300 * kMiB;
  };
  const auto changes = scan(investigations, {{process(1), bursty}}, 0, 60);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].second, 40);
  EXPECT_TRUE(changes[0].change.open);
  EXPECT_EQ(changes[0].change.reason, InvestigationReason::growth);
}

TEST(Investigations, BurstsFurtherApartThanTheHorizonNeverOpen) {
  Investigations investigations;
  // 300 MiB every 70 s: each burst rises above a minimum that already holds the one before.
  const auto sparse = [](int second) {
    return kGiB + static_cast<std::uint64_t>(second / 70) * 300 * kMiB;
  };
  EXPECT_TRUE(scan(investigations, {{process(1), sparse}}, 0, 700).empty());
}

TEST(Investigations, OpenViewClosesAfterOpenSeconds) {
  Investigations investigations;
  auto changes = scan(investigations, {{process(1), leaking}}, 0, 20);
  const auto opened = first(changes, process(1), true);
  ASSERT_TRUE(opened);

  changes = scan(investigations, {{process(1), leaking}}, 20, *opened + 120);
  EXPECT_TRUE(changes.empty());
  EXPECT_TRUE(investigations.is_open(process(1)));

  changes = scan(investigations, {{process(1), leaking}}, *opened + 120, *opened + 121);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_FALSE(changes[0].change.open);
  EXPECT_EQ(changes[0].change.process, process(1));
  EXPECT_EQ(changes[0].change.reason, InvestigationReason::growth);
  EXPECT_FALSE(investigations.is_open(process(1)));
  EXPECT_EQ(investigations.opened_at(process(1)), std::nullopt);
  EXPECT_EQ(investigations.open_count(), 0u);
}

TEST(Investigations, CooldownBlocksReopeningUntilItExpires) {
  Investigations investigations;
  const auto changes = scan(investigations, {{process(1), leaking}}, 0, 500);
  const auto opened = first(changes, process(1), true);
  ASSERT_TRUE(opened);
  const int closed = *opened + 120;
  ASSERT_EQ(first(changes, process(1), false), closed);

  // Still growing all along, it reopens only when the 300 s cooldown is over.
  std::vector<int> opens;
  for (const auto &timed : changes)
    if (timed.change.open)
      opens.push_back(timed.second);
  EXPECT_EQ(opens, (std::vector<int>{*opened, closed + 300}));
}

TEST(Investigations, VerdictSkipsTheCooldownButGrowthMustShowAgain) {
  Investigations investigations;
  auto changes = scan(investigations, {{process(1), leaking}}, 0, 20);
  const auto opened = first(changes, process(1), true);
  ASSERT_TRUE(opened);
  investigations.verdict(process(1));

  const int closed = *opened + 120;
  changes = scan(investigations, {{process(1), leaking}}, 20, closed + 20);
  ASSERT_EQ(first(changes, process(1), false), closed);
  const auto reopened = first(changes, process(1), true);
  ASSERT_TRUE(reopened);
  // Not at once (the windows start over), but long before a cooldown would end.
  EXPECT_GT(*reopened, closed + 2);
  EXPECT_LE(*reopened, closed + 8);
}

TEST(Investigations, VerdictOutsideAnOpenViewChangesNothing) {
  Investigations investigations;
  auto changes = scan(investigations, {{process(1), leaking}}, 0, 20);
  const auto opened = first(changes, process(1), true);
  ASSERT_TRUE(opened);
  changes = scan(investigations, {{process(1), leaking}}, 20, *opened + 121);
  ASSERT_EQ(first(changes, process(1), false), *opened + 120);

  // Too late: the view had closed, and the cooldown stands.
  investigations.verdict(process(1));
  changes = scan(investigations, {{process(1), leaking}}, *opened + 121, *opened + 421);
  EXPECT_EQ(first(changes, process(1), true), *opened + 420);
}

TEST(Investigations, RequestOpensWhenAutomaticIsOff) {
  Investigations investigations({.automatic = false});
  auto changes = scan(investigations, {{process(1), leaking}}, 0, 60);
  EXPECT_TRUE(changes.empty());

  EXPECT_TRUE(investigations.request(process(1), ns(60)));
  changes = scan(investigations, {{process(1), leaking}}, 60, 61);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].change.open);
  EXPECT_EQ(changes[0].change.reason, InvestigationReason::requested);
  EXPECT_EQ(investigations.opened_at(process(1)), ns(60));

  // It closes when its time is up, with the reason it opened for.
  changes = scan(investigations, {{process(1), leaking}}, 61, 181);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].second, 180);
  EXPECT_FALSE(changes[0].change.open);
  EXPECT_EQ(changes[0].change.reason, InvestigationReason::requested);
}

TEST(Investigations, RequestOpensInCooldown) {
  Investigations investigations;
  investigations.failed(process(1), ns(0));
  EXPECT_TRUE(scan(investigations, {{process(1), leaking}}, 0, 30).empty());

  EXPECT_TRUE(investigations.request(process(1), ns(30)));
  const auto changes = scan(investigations, {{process(1), leaking}}, 30, 31);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].change.open);
  EXPECT_EQ(changes[0].change.reason, InvestigationReason::requested);
}

TEST(Investigations, RequestForAProcessNeverObservedOpensIt) {
  Investigations investigations;
  EXPECT_TRUE(investigations.request(process(7), ns(0)));
  const auto changes = investigations.decide(ns(0));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].process, process(7));
  EXPECT_TRUE(changes[0].open);
  EXPECT_EQ(changes[0].reason, InvestigationReason::requested);
  // Opened once: the request is spent.
  EXPECT_TRUE(investigations.decide(ns(1)).empty());
}

TEST(Investigations, MaxOpenBoundsGrowthAndRequests) {
  Investigations investigations({.max_open = 2});
  std::vector<std::pair<ProcessId, Usage>> processes;
  for (int pid = 4; pid >= 1; --pid)
    processes.emplace_back(process(pid), leaking);
  const auto changes = scan(investigations, processes, 0, 20);
  // The first two in ProcessId order, at the same decision.
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].change.process, process(1));
  EXPECT_EQ(changes[1].change.process, process(2));
  EXPECT_EQ(changes[0].second, changes[1].second);
  EXPECT_EQ(investigations.open_count(), 2u);

  EXPECT_FALSE(investigations.request(process(3), ns(20)));
  // A request for a process already open needs no room.
  EXPECT_TRUE(investigations.request(process(1), ns(20)));

  // An exit makes room for the next growing one.
  EXPECT_TRUE(investigations.forget(process(1)));
  processes.pop_back(); // process 1 is gone
  const auto next = scan(investigations, processes, 20, 21);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].change.process, process(3));
  EXPECT_EQ(investigations.open_count(), 2u);
}

TEST(Investigations, AViewWithoutAVerdictYieldsToAGrowingProcessThatWaits) {
  Investigations investigations({.max_open = 1, .yield_after_seconds = 30});
  const std::vector<std::pair<ProcessId, Usage>> processes{{process(1), leaking},
                                                           {process(2), leaking}};
  const auto changes = scan(investigations, processes, 0, 60);
  const auto opened = first(changes, process(1), true);
  ASSERT_TRUE(opened);
  const auto yielded = first(changes, process(1), false);
  ASSERT_TRUE(yielded) << "process 2 waits while process 1's view finds nothing";
  EXPECT_GE(*yielded - *opened, 30);
  EXPECT_LE(*yielded - *opened, 31);
  EXPECT_EQ(first(changes, process(2), true), yielded) << "in the same decision";
  EXPECT_TRUE(investigations.is_open(process(2)));
  EXPECT_FALSE(investigations.is_open(process(1)));
  EXPECT_EQ(investigations.open_count(), 1u);
}

TEST(Investigations, AViewWithAVerdictKeepsItsPlace) {
  Investigations investigations({.max_open = 1, .yield_after_seconds = 30});
  const std::vector<std::pair<ProcessId, Usage>> processes{{process(1), leaking},
                                                           {process(2), leaking}};
  scan(investigations, processes, 0, 10);
  ASSERT_TRUE(investigations.is_open(process(1)));
  investigations.verdict(process(1));
  const auto after = scan(investigations, processes, 10, 60);
  EXPECT_FALSE(first(after, process(1), false)) << "a leak is not put aside for a warm-up";
  EXPECT_FALSE(investigations.is_open(process(2)));
}

TEST(Investigations, ARequestWhenEveryPlaceIsTakenWaitsForOne) {
  Investigations investigations({.max_open = 1, .yield_after_seconds = 30});
  scan(investigations, {{process(1), leaking}}, 0, 10);
  ASSERT_TRUE(investigations.is_open(process(1)));
  EXPECT_FALSE(investigations.request(process(2), ns(10))) << "no place now";
  EXPECT_FALSE(investigations.is_open(process(2)));
  // The growth view without a verdict gives its place once it had its 30 s.
  const auto changes = scan(investigations, {{process(1), leaking}, {process(2), flat}}, 10, 40);
  const auto handed = first(changes, process(2), true);
  ASSERT_TRUE(handed) << "the request was kept, not dropped";
  EXPECT_EQ(first(changes, process(1), false), handed);
  EXPECT_TRUE(investigations.is_open(process(2)));
}

TEST(Investigations, RequestedProcessesOpenBeforeGrowingOnes) {
  Investigations investigations({.max_open = 1});
  for (int second = 0; second < 20; ++second) {
    investigations.observe(process(1), ns(second), leaking(second));
    investigations.observe(process(2), ns(second), flat(second));
  }
  EXPECT_TRUE(investigations.request(process(2), ns(20)));
  const auto changes = investigations.decide(ns(20));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].process, process(2));
  EXPECT_EQ(changes[0].reason, InvestigationReason::requested);
  EXPECT_FALSE(investigations.is_open(process(1)));
}

TEST(Investigations, FailedViewCoolsDown) {
  Investigations investigations;
  auto changes = scan(investigations, {{process(1), leaking}}, 0, 20);
  const auto opened = first(changes, process(1), true);
  ASSERT_TRUE(opened);

  investigations.failed(process(1), ns(*opened));
  EXPECT_FALSE(investigations.is_open(process(1)));
  EXPECT_EQ(investigations.open_count(), 0u);

  changes = scan(investigations, {{process(1), leaking}}, 20, *opened + 310);
  // Not closed (it never opened), and tried again when the cooldown is over.
  EXPECT_EQ(first(changes, process(1), false), std::nullopt);
  EXPECT_EQ(first(changes, process(1), true), *opened + 300);
}

TEST(Investigations, ForgetSaysWhetherAViewWasOpen) {
  Investigations investigations;
  const auto changes = scan(investigations, {{process(1), leaking}, {process(2), flat}}, 0, 20);
  ASSERT_TRUE(first(changes, process(1), true));

  EXPECT_TRUE(investigations.forget(process(1)));
  EXPECT_FALSE(investigations.is_open(process(1)));
  EXPECT_EQ(investigations.open_count(), 0u);
  EXPECT_FALSE(investigations.forget(process(1))); // already gone
  EXPECT_FALSE(investigations.forget(process(2))); // observed, never open
  EXPECT_FALSE(investigations.forget(process(3))); // never seen

  // A forgotten process starts over (no cooldown, no windows): its growth must show again.
  EXPECT_TRUE(scan(investigations, {{process(1), leaking}}, 20, 24).empty());
}

TEST(Investigations, ReasonNames) {
  EXPECT_EQ(investigation_reason_name(InvestigationReason::growth), "growth");
  EXPECT_EQ(investigation_reason_name(InvestigationReason::requested), "requested");
}

} // namespace
} // namespace neutracer
