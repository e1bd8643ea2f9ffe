// SPDX-License-Identifier: Apache-2.0
// Adaptive launch counting: the window policy, the scaling of counts read at window ends, and
// the scheduler driving a fake BPF side (attach, gate, detach) with a fake clock.
#include "cuda/launch_sampling.h"
#include "cuda/launch_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

namespace neutracer {
namespace {

constexpr std::uint64_t kMs = 1'000'000;

LaunchCount count(std::uint32_t tgid, std::uint64_t handle, std::uint64_t value) {
  return {tgid, 7, NT_API_LAUNCH_KERNEL, handle, value, 0};
}

std::uint64_t total_of(const std::vector<LaunchCount> &totals, std::uint32_t tgid) {
  std::uint64_t sum = 0;
  for (const auto &entry : totals)
    if (entry.tgid == tgid)
      sum += entry.count;
  return sum;
}

TEST(LaunchWindowFraction, ExactUpToTheRateThenProportional) {
  const LaunchSamplingSettings settings{1000, 1000 * kMs, 0.01};
  EXPECT_EQ(launch_window_fraction(settings, 0), 1.0);
  EXPECT_EQ(launch_window_fraction(settings, 1000), 1.0);
  EXPECT_DOUBLE_EQ(launch_window_fraction(settings, 4000), 0.25);
  EXPECT_DOUBLE_EQ(launch_window_fraction(settings, 1e9), 0.01); // floor
}

TEST(LaunchWindowFraction, AFixedShareHoldsWhateverTheRate) {
  LaunchSamplingSettings settings{1000, 1000 * kMs, 0.01};
  settings.fixed_fraction = 0.5;
  EXPECT_EQ(launch_window_fraction(settings, 10), 0.5);
  EXPECT_EQ(launch_window_fraction(settings, 1e6), 0.5);
}

TEST(LaunchScaler, ExactTotalsAreNotEstimatesAndHaveNoError) {
  LaunchScaler scaler(1000);
  scaler.set_counting(10, true, 0);
  scaler.apply_read({count(10, 1, 500)}, 1000 * kMs);
  EXPECT_FALSE(scaler.estimated(10));
  EXPECT_EQ(scaler.relative_error(10), 0.0);
  // Sampled from now on, but no window taken yet: still exact.
  scaler.set_sampled(10, true);
  EXPECT_FALSE(scaler.estimated(10));
}

// One sampled window of `on_ms` in a 1 s period holding `launches`, read at the period's end.
void sampled_period(LaunchScaler &scaler, int period, std::uint64_t on_ms, std::uint64_t &raw,
                    std::uint64_t launches) {
  const std::uint64_t start = static_cast<std::uint64_t>(period) * 1000 * kMs;
  scaler.set_counting(10, true, start);
  raw += launches;
  scaler.set_counting(10, false, start + on_ms * kMs);
  scaler.apply_read({count(10, 1, raw)}, start + 1000 * kMs);
}

TEST(LaunchScaler, TheErrorBoundIsUnknownBeforeThreeWindowsThenShrinksWithMore) {
  LaunchScaler scaler;
  scaler.set_sampled(10, true);
  std::uint64_t raw = 0;
  sampled_period(scaler, 0, 100, raw, 900);
  sampled_period(scaler, 1, 100, raw, 1100);
  EXPECT_TRUE(scaler.estimated(10));
  EXPECT_EQ(scaler.relative_error(10), 1.0) << "two windows: no bound yet";
  sampled_period(scaler, 2, 100, raw, 1000);
  // Rates 9000, 11000, 10000 per s: sd 1000, mean 10000: 1.96 * 0.1 / sqrt(3); edges 2 / 3.
  EXPECT_NEAR(scaler.relative_error(10), 1.96 * 0.1 / std::sqrt(3.0) + 2.0 / 3, 1e-9);
  for (int period = 3; period < 300; ++period)
    sampled_period(scaler, period, 100, raw, period % 3 == 0 ? 900 : period % 3 == 1 ? 1100 : 1000);
  EXPECT_LT(scaler.relative_error(10), 0.02);
}

TEST(LaunchScaler, TheErrorBoundHoldsTheTrapShareOfAWindow) {
  // 1000 launches at 10 us per trap in a 100 ms window: traps took 10 % of it.
  LaunchScaler scaler(10'000);
  scaler.set_sampled(10, true);
  std::uint64_t raw = 0;
  for (int period = 0; period < 5; ++period)
    sampled_period(scaler, period, 100, raw, 1000);
  EXPECT_NEAR(scaler.relative_error(10), 0.10 + 2.0 / 5, 1e-9); // identical windows: no spread
}

TEST(LaunchScaler, AlwaysOnCountsAreExact) {
  LaunchScaler scaler;
  scaler.set_counting(10, true, 0);
  scaler.apply_read({count(10, 1, 500)}, 1000 * kMs);
  scaler.apply_read({count(10, 1, 1500)}, 2000 * kMs);
  EXPECT_EQ(total_of(scaler.totals(), 10), 1500u);
  EXPECT_DOUBLE_EQ(scaler.rate(10), 1000.0);
  EXPECT_DOUBLE_EQ(scaler.counted_fraction(10), 1.0);
}

TEST(LaunchScaler, WindowCountsAreScaledByPeriodOverWindow) {
  LaunchScaler scaler;
  // 10 ms of counting in each 1 s period, 50 launches each: 5000 launches/s estimated.
  std::uint64_t raw = 0;
  for (int period = 0; period < 4; ++period) {
    const std::uint64_t start = static_cast<std::uint64_t>(period) * 1000 * kMs;
    scaler.set_counting(10, true, start);
    raw += 50;
    scaler.set_counting(10, false, start + 10 * kMs);
    scaler.apply_read({count(10, 1, raw)}, start + 1000 * kMs);
  }
  EXPECT_EQ(total_of(scaler.totals(), 10), 20000u);
  EXPECT_DOUBLE_EQ(scaler.rate(10), 5000.0);
  EXPECT_NEAR(scaler.counted_fraction(10), 0.01, 1e-9);
  const auto window = scaler.last_window(10);
  EXPECT_EQ(window.launches, 50u);
  EXPECT_EQ(window.on_ns, 10 * kMs);
  EXPECT_EQ(window.elapsed_ns, 1000 * kMs);
}

TEST(LaunchScaler, SampledWindowsLoseTheirTrapsTime) {
  // 50 launches in a 10 ms window at 20 us per trap: untraced, they take 9 ms, not 10.
  LaunchScaler scaler(20'000);
  scaler.set_sampled(10, true);
  scaler.set_counting(10, true, 0);
  scaler.set_counting(10, false, 10 * kMs);
  scaler.apply_read({count(10, 1, 50)}, 1000 * kMs);
  EXPECT_EQ(total_of(scaler.totals(), 10), 5556u); // 50 * 1000 / 9
  // Traps said to take more than the window: at most half of it is taken off.
  LaunchScaler extreme(1e9);
  extreme.set_sampled(11, true);
  extreme.set_counting(11, true, 0);
  extreme.set_counting(11, false, 10 * kMs);
  extreme.apply_read({count(11, 1, 50)}, 1000 * kMs);
  EXPECT_EQ(total_of(extreme.totals(), 11), 10000u);
}

TEST(LaunchScaler, AProcessWaitingOnItsGpuIsNotCorrected) {
  // Its launching thread waits on a saturated GPU: the traps cost it no launches.
  LaunchScaler scaler(20'000);
  scaler.set_sampled(10, true);
  scaler.set_launch_bound(10, false);
  scaler.set_counting(10, true, 0);
  scaler.set_counting(10, false, 10 * kMs);
  scaler.apply_read({count(10, 1, 50)}, 1000 * kMs);
  EXPECT_EQ(total_of(scaler.totals(), 10), 5000u); // 50 * 1000 / 10
}

TEST(LaunchScaler, ExactCountsAreNotCorrected) {
  LaunchScaler scaler(20'000);
  scaler.set_counting(10, true, 0);
  scaler.apply_read({count(10, 1, 500)}, 1000 * kMs);
  EXPECT_EQ(total_of(scaler.totals(), 10), 500u);
}

TEST(LaunchScaler, SampledProcessCountsAreTakenAtPeriodEndsOnly) {
  LaunchScaler scaler;
  scaler.set_sampled(10, true);
  scaler.set_counting(10, true, 0);
  scaler.set_counting(10, false, 10 * kMs);
  // A scan 100 ms in: the window's 50 launches stand for the whole period, not for 100 ms.
  scaler.apply_read({count(10, 1, 50)}, 100 * kMs, false);
  EXPECT_EQ(total_of(scaler.totals(), 10), 0u);
  scaler.apply_read({count(10, 1, 50)}, 1000 * kMs, true);
  EXPECT_EQ(total_of(scaler.totals(), 10), 5000u);
}

TEST(LaunchScaler, ReadInsideAWindowStaysUnbiased) {
  LaunchScaler scaler;
  scaler.set_counting(10, true, 0);
  scaler.apply_read({count(10, 1, 30)}, 3 * kMs); // 3 ms into a 10 ms window: scale 1
  scaler.set_counting(10, false, 10 * kMs);
  scaler.apply_read({count(10, 1, 100)}, 1000 * kMs); // 70 more in 7 ms of 997 ms
  EXPECT_EQ(total_of(scaler.totals(), 10), 30u + 9970u);
}

TEST(LaunchScaler, TotalsNeverDecreaseAndForgetDropsAProcess) {
  LaunchScaler scaler;
  scaler.set_counting(10, true, 0);
  scaler.set_counting(11, true, 0);
  scaler.apply_read({count(10, 1, 5), count(11, 2, 9)}, kMs);
  const auto before = total_of(scaler.totals(), 10);
  scaler.apply_read({count(10, 1, 5), count(11, 2, 9)}, 2 * kMs);
  EXPECT_EQ(total_of(scaler.totals(), 10), before);
  scaler.forget(11);
  EXPECT_EQ(total_of(scaler.totals(), 11), 0u);
  EXPECT_EQ(total_of(scaler.totals(), 10), 5u);
}

TEST(LaunchScaler, ACounterThatRestartsCountsFromZero) {
  LaunchScaler scaler;
  scaler.apply_read({count(10, 1, 100)}, kMs);
  scaler.forget_counters(10); // the in-kernel entry was deleted (exec)
  scaler.apply_read({count(10, 1, 4)}, 2 * kMs);
  EXPECT_EQ(total_of(scaler.totals(), 10), 4u);
}

// The BPF side as the scheduler sees it: links per pid, gates, counters that a test advances
// only while the gate of a process with attached probes is open.
class FakeProbes : public LaunchProbeControl {
public:
  std::size_t attach_launch_probes(int pid, const std::vector<LibraryId> &, bool with_name_calls,
                                   std::string &) override {
    attached.insert(pid);
    name_calls[pid] = with_name_calls;
    ++attaches;
    return 8;
  }
  void detach_launch_probes(int pid) override { attached.erase(pid); }
  void set_launch_gate(std::uint32_t tgid, bool open) override {
    gates[tgid] = open;
    gate_changes.push_back({tgid, open});
  }
  LaunchGateHits launch_gate_hits(std::uint32_t) const override { return {}; }
  void forget_launch_gate(std::uint32_t tgid) override { gates.erase(tgid); }
  void drop_sampled_calls(std::uint32_t) override {}
  std::vector<LaunchCount> read_launch_counts() const override {
    std::vector<LaunchCount> counts;
    for (const auto &[tgid, value] : raw)
      counts.push_back(count(tgid, 1, value));
    return counts;
  }
  // `launches` happen in process `pid` now: counted if its probes are attached and gate open.
  void launch(int pid, std::uint64_t launches) {
    const auto tgid = static_cast<std::uint32_t>(pid);
    if (attached.contains(pid) && gates[tgid])
      raw[tgid] += launches;
  }
  std::set<int> attached;
  std::map<int, bool> name_calls; // whether the last attach had the name-call probes
  std::map<std::uint32_t, bool> gates;
  std::map<std::uint32_t, std::uint64_t> raw;
  std::vector<std::pair<std::uint32_t, bool>> gate_changes;
  int attaches = 0;
};

CudaProcess process(int pid, std::string comm) {
  CudaProcess p;
  p.id = {pid, 1};
  p.comm = std::move(comm);
  p.exe = "/usr/bin/" + p.comm;
  return p;
}

TEST(LaunchScheduler, SlowProcessIsCountedExactly) {
  FakeProbes probes;
  LaunchScheduler scheduler(LaunchCounting::adaptive, {}, {1000, 1000 * kMs, 0.01}, probes);
  scheduler.update_processes({process(10, "slow")}, 0);
  std::uint64_t truth = 0;
  for (std::uint64_t ms = 1; ms <= 10'000; ++ms) {
    scheduler.tick(ms * kMs);
    if (ms % 2 == 0) { // 500 launches/s
      probes.launch(10, 1);
      ++truth;
    }
  }
  EXPECT_EQ(total_of(scheduler.read(10'000 * kMs), 10), truth);
  EXPECT_EQ(probes.attaches, 1); // never detached
  EXPECT_DOUBLE_EQ(scheduler.processes().at(0).window_fraction, 1.0);
}

TEST(LaunchScheduler, BusyProcessIsSampledWithinTwoPercent) {
  FakeProbes probes;
  LaunchScheduler scheduler(LaunchCounting::adaptive, {}, {1000, 1000 * kMs, 0.005}, probes);
  scheduler.update_processes({process(10, "busy")}, 0);
  std::uint64_t truth = 0;
  std::uint64_t trapped = 0;
  for (std::uint64_t ms = 1; ms <= 60'000; ++ms) {
    scheduler.tick(ms * kMs);
    const auto before = probes.raw[10];
    probes.launch(10, 20); // 20 000 launches/s
    trapped += probes.raw[10] - before;
    truth += 20;
    if (ms % 137 == 0) // the daemon's scans read the counters at their own times
      scheduler.read(ms * kMs);
  }
  const auto estimate = static_cast<double>(total_of(scheduler.read(60'000 * kMs), 10));
  EXPECT_NEAR(estimate / static_cast<double>(truth), 1.0, 0.02);
  EXPECT_LT(trapped, truth / 10); // the point: most launches never trap
  EXPECT_NEAR(scheduler.processes().at(0).window_fraction, 0.05, 0.01);
  EXPECT_TRUE(scheduler.processes().at(0).estimated);
}

TEST(LaunchScheduler, TheExportedErrorBoundCoversTheErrorOfABurstyProcess) {
  // A process that launches in bursts of random length: windows see different rates.
  FakeProbes probes;
  LaunchScheduler scheduler(LaunchCounting::adaptive, {}, {1000, 1000 * kMs, 0.005}, probes);
  scheduler.seed_window_placement(7);
  scheduler.update_processes({process(10, "bursty")}, 0);
  std::mt19937_64 random(3);
  std::uint64_t truth = 0;
  std::uint64_t per_ms = 20;
  for (std::uint64_t ms = 1; ms <= 120'000; ++ms) {
    scheduler.tick(ms * kMs);
    if (ms % 250 == 0)
      per_ms = std::uniform_int_distribution<std::uint64_t>(5, 40)(random);
    probes.launch(10, per_ms);
    truth += per_ms;
  }
  const auto estimate = static_cast<double>(total_of(scheduler.read(120'000 * kMs), 10));
  const auto view = scheduler.processes().at(0);
  const double error = std::abs(estimate / static_cast<double>(truth) - 1);
  EXPECT_TRUE(view.estimated);
  EXPECT_GT(view.relative_error, 0.0);
  EXPECT_LT(view.relative_error, 0.5);
  EXPECT_LE(error, view.relative_error) << "estimate " << estimate << " of " << truth;
}

TEST(LaunchScheduler, TheErrorBoundCoversAShortRunThatStopsInsideAPeriod) {
  // 2.5 s of launching, then idle: a window may stand for a period the run left half-way.
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    FakeProbes probes;
    LaunchScheduler scheduler(LaunchCounting::adaptive, {}, {1000, 1000 * kMs, 0.005}, probes);
    scheduler.seed_window_placement(seed);
    scheduler.update_processes({process(10, "short")}, 0);
    std::uint64_t truth = 0;
    for (std::uint64_t ms = 1; ms <= 4000; ++ms) {
      scheduler.tick(ms * kMs);
      if (ms <= 2500) {
        probes.launch(10, 20);
        truth += 20;
      }
    }
    const auto estimate = static_cast<double>(total_of(scheduler.read(4000 * kMs), 10));
    const auto view = scheduler.processes().at(0);
    EXPECT_LE(std::abs(estimate / static_cast<double>(truth) - 1), view.relative_error)
        << "seed " << seed << ": estimate " << estimate << " of " << truth;
  }
}

TEST(LaunchScheduler, AFixedShareAlternatesProbesOnAndOffInHalves) {
  FakeProbes probes;
  std::uint64_t clock_ms = 0;
  LaunchSamplingSettings settings{1000, 2000 * kMs, 0.005};
  settings.fixed_fraction = 0.5;
  LaunchScheduler scheduler(LaunchCounting::adaptive, {}, settings, probes,
                            [&] { return clock_ms * kMs; });
  scheduler.update_processes({process(10, "bench")}, 0);
  std::uint64_t attached_ms = 0;
  for (clock_ms = 1; clock_ms <= 40'000; ++clock_ms) {
    scheduler.tick(clock_ms * kMs);
    probes.launch(10, 1); // 1 000 launches/s: below launch_max_rate, sampled all the same
    if (clock_ms > 4000 && probes.attached.contains(10))
      ++attached_ms;
  }
  EXPECT_NEAR(static_cast<double>(attached_ms) / 36'000, 0.5, 0.03);
  EXPECT_EQ(scheduler.processes().at(0).window_fraction, 0.5);
}

TEST(LaunchScheduler, SampledWindowsOpenAnywhereInTheirPeriodAndCloseInIt) {
  FakeProbes probes;
  std::uint64_t clock_ms = 0;
  LaunchScheduler scheduler(LaunchCounting::adaptive, {}, {1000, 1000 * kMs, 0.005}, probes,
                            [&] { return clock_ms * kMs; });
  scheduler.seed_window_placement(1);
  scheduler.update_processes({process(10, "busy")}, 0);
  std::vector<std::uint64_t> opened_at; // ms into the period
  std::uint64_t open_since = 0;
  for (clock_ms = 1; clock_ms <= 120'000; ++clock_ms) {
    probes.gate_changes.clear();
    scheduler.tick(clock_ms * kMs);
    probes.launch(10, 20); // 20 000 launches/s: windows of 50 ms
    for (const auto &[tgid, open] : probes.gate_changes) {
      if (open) {
        open_since = clock_ms;
        opened_at.push_back(clock_ms % 1000);
      } else if (clock_ms > 2000) {
        EXPECT_EQ(open_since / 1000, (clock_ms - 1) / 1000) << "a window ends in its period";
      }
    }
  }
  ASSERT_GT(opened_at.size(), 100u);
  std::set<std::uint64_t> tenths;
  for (const auto at : opened_at)
    tenths.insert(at / 100);
  EXPECT_GE(tenths.size(), 9u) << "openings spread over the period, not at its start";
}

TEST(LaunchScheduler, ARunThatStopsInsideAPeriodIsNotCountedHighOnAverage) {
  // 20 000 launches/s for 20.5 s, then none. A window always at the start of its period
  // would find the last period busy and count all of it: +10 000 launches (+2.4 %).
  double sum = 0;
  constexpr int kRuns = 100;
  for (int seed = 0; seed < kRuns; ++seed) {
    FakeProbes probes;
    LaunchScheduler scheduler(LaunchCounting::adaptive, {}, {1000, 1000 * kMs, 0.005}, probes);
    scheduler.seed_window_placement(static_cast<std::uint64_t>(seed));
    scheduler.update_processes({process(10, "busy")}, 0);
    for (std::uint64_t ms = 1; ms <= 23'000; ++ms) {
      scheduler.tick(ms * kMs);
      if (ms <= 20'500)
        probes.launch(10, 20);
    }
    sum += static_cast<double>(total_of(scheduler.read(23'000 * kMs), 10)) / (20.0 * 20'500);
  }
  EXPECT_NEAR(sum / kRuns, 1.0, 0.01);
}

TEST(LaunchScheduler, SampledWindowsProbeTheNamingCallsOnlyWhileNamesAreMissing) {
  FakeProbes probes;
  LaunchScheduler scheduler(LaunchCounting::adaptive, {}, {1000, 1000 * kMs, 0.005}, probes);
  bool missing = true;
  std::vector<int> asked;
  scheduler.set_names_wanted([&](int pid) {
    asked.push_back(pid);
    return missing;
  });
  scheduler.update_processes({process(10, "busy")}, 0);
  EXPECT_TRUE(probes.name_calls.at(10)) << "the first, exact period learns every name";
  EXPECT_TRUE(asked.empty()) << "an exact process always has its naming probes";
  const auto run = [&](std::uint64_t from_ms, std::uint64_t to_ms) {
    for (std::uint64_t ms = from_ms; ms <= to_ms; ++ms) {
      scheduler.tick(ms * kMs);
      probes.launch(10, 20);
    }
  };
  run(1, 2999); // sampled from the first period's end
  ASSERT_LT(scheduler.processes().at(0).window_fraction, 1.0);
  EXPECT_TRUE(probes.name_calls.at(10));
  // The first window keeps the exact period's probes; the second attaches, and asks.
  EXPECT_EQ(asked, (std::vector<int>{10}));
  missing = false;
  run(3000, 4999);
  EXPECT_FALSE(probes.name_calls.at(10)) << "windows without unnamed kernels skip them";
  missing = true;
  run(5000, 5999);
  EXPECT_TRUE(probes.name_calls.at(10)) << "a new unnamed kernel brings them back";
}

TEST(LaunchScheduler, ProcessesOnASaturatedGpuAreNotCorrectedForTraps) {
  const auto estimate = [](bool saturated) {
    FakeProbes probes; // launches here never slow down: the uncorrected estimate is right
    LaunchScheduler scheduler(LaunchCounting::adaptive, {}, {1000, 1000 * kMs, 0.005, 2000},
                              probes);
    scheduler.set_gpu_saturated([&](int) { return saturated; });
    scheduler.update_processes({process(10, "busy")}, 0);
    for (std::uint64_t ms = 1; ms <= 20'000; ++ms) {
      scheduler.tick(ms * kMs);
      probes.launch(10, 20);
    }
    return static_cast<double>(total_of(scheduler.read(20'000 * kMs), 10));
  };
  const double truth = 20.0 * 20'000;
  EXPECT_NEAR(estimate(true) / truth, 1.0, 0.01);
  EXPECT_GT(estimate(false) / truth, 1.03) << "2 us x 20 000 launches/s taken off each window";
}

TEST(LaunchScheduler, RulesChooseTheModeAndOffAttachesNothing) {
  FakeProbes probes;
  LaunchScheduler scheduler(LaunchCounting::adaptive,
                            {{"bench*", LaunchCounting::off}, {"/opt/*", LaunchCounting::exact}},
                            {1000, 1000 * kMs, 0.01}, probes);
  auto exact = process(11, "trainer");
  exact.exe = "/opt/train/trainer";
  scheduler.update_processes({process(10, "benchmark"), exact}, 0);
  EXPECT_FALSE(probes.attached.contains(10));
  EXPECT_TRUE(probes.attached.contains(11));
  for (std::uint64_t ms = 1; ms <= 3000; ++ms) {
    scheduler.tick(ms * kMs);
    probes.launch(10, 50);
    probes.launch(11, 50); // 50 000/s, yet exact by rule
  }
  const auto totals = scheduler.read(3000 * kMs);
  EXPECT_EQ(total_of(totals, 10), 0u);
  EXPECT_EQ(total_of(totals, 11), 150'000u);
  for (const auto &view : scheduler.processes())
    EXPECT_EQ(view.counted_fraction, view.pid == 10 ? 0.0 : 1.0);
}

TEST(LaunchScheduler, ExitedProcessLosesItsProbesAndGate) {
  FakeProbes probes;
  LaunchScheduler scheduler(LaunchCounting::adaptive, {}, {1000, 1000 * kMs, 0.01}, probes);
  scheduler.update_processes({process(10, "a")}, 0);
  scheduler.update_processes({}, kMs);
  EXPECT_TRUE(probes.attached.empty());
  EXPECT_TRUE(probes.gates.empty());
  EXPECT_TRUE(scheduler.processes().empty());
}

TEST(LaunchScheduler, AReusedPidGetsNewProbes) {
  FakeProbes probes;
  LaunchScheduler scheduler(LaunchCounting::adaptive, {}, {1000, 1000 * kMs, 0.01}, probes);
  scheduler.update_processes({process(10, "first")}, 0);
  ASSERT_EQ(probes.attaches, 1);
  auto second = process(10, "second");
  second.id.start_ticks = 2; // same PID, started later: another process
  scheduler.update_processes({second}, kMs);
  EXPECT_EQ(probes.attaches, 2);
  EXPECT_TRUE(probes.attached.contains(10));
}

TEST(LaunchScheduler, AProcessTheScanCouldNotReadKeepsItsProbes) {
  FakeProbes probes;
  LaunchScheduler scheduler(LaunchCounting::adaptive, {}, {1000, 1000 * kMs, 0.01}, probes);
  scheduler.update_processes({process(10, "a"), process(11, "b")}, 0);
  ASSERT_EQ(probes.attached, (std::set<int>{10, 11}));
  scheduler.update_processes({}, 1, [](int pid) { return pid == 10; });
  EXPECT_EQ(probes.attached, std::set<int>{10}) << "11 was read and is gone; 10 is unknown";
}

TEST(LaunchCountingMode, NamesRoundTrip) {
  for (const auto mode : {LaunchCounting::exact, LaunchCounting::adaptive, LaunchCounting::off})
    EXPECT_EQ(parse_launch_counting(launch_counting_name(mode)), mode);
  EXPECT_FALSE(parse_launch_counting("sampled").has_value());
}

} // namespace
} // namespace neutracer
