// SPDX-License-Identifier: Apache-2.0
// Exact counting: the probes of the call that names launched functions follow each process's
// need for names (attached from first sight, removed once every launch is named, back when an
// unnamed launch shows up), against a fake BPF side.
#include "cuda/name_probe_keeper.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace neutracer {
namespace {

class FakeNameProbes : public LaunchProbeControl {
public:
  std::size_t attach_launch_probes(int pid, const std::vector<LibraryId> &libraries, bool names,
                                   std::string &error) override {
    if (failing.contains(pid)) {
      error = "attaching for pid " + std::to_string(pid) + ": Operation not permitted";
      return 0;
    }
    EXPECT_TRUE(names);
    attached[pid] = libraries;
    ++attaches;
    return 2;
  }
  void detach_launch_probes(int pid) override { attached.erase(pid); }
  void set_launch_gate(std::uint32_t, bool) override { ADD_FAILURE() << "no gates here"; }
  LaunchGateHits launch_gate_hits(std::uint32_t) const override { return {}; }
  void forget_launch_gate(std::uint32_t) override {}
  void drop_sampled_calls(std::uint32_t tgid) override { dropped.push_back(tgid); }
  std::vector<LaunchCount> read_launch_counts() const override { return {}; }

  std::map<int, std::vector<LibraryId>> attached;
  std::set<int> failing;
  std::vector<std::uint32_t> dropped;
  int attaches = 0;
};

CudaProcess process(int pid, std::uint64_t start_ticks = 1) {
  CudaProcess p;
  p.id = {pid, start_ticks};
  p.comm = "python3";
  p.libraries = {LibraryId{1, 2}};
  return p;
}

TEST(NameProbeKeeper, AttachesAtFirstSightAndRemovesOnceEveryLaunchIsNamed) {
  FakeNameProbes probes;
  NameProbeKeeper keeper(probes);
  bool wanted = true;
  keeper.update({process(10)}, [&](int) { return wanted; });
  EXPECT_TRUE(probes.attached.contains(10));
  keeper.update({process(10)}, [&](int) { return wanted; });
  EXPECT_EQ(probes.attaches, 1) << "attached once while wanted";

  wanted = false; // launched, every launch named
  keeper.update({process(10)}, [&](int) { return wanted; });
  EXPECT_FALSE(probes.attached.contains(10));
  EXPECT_FALSE(keeper.attached(10));
  // The scan after the removal drops the calls it cut short, once.
  const auto drops = probes.dropped.size();
  keeper.update({process(10)}, [&](int) { return wanted; });
  keeper.update({process(10)}, [&](int) { return wanted; });
  EXPECT_EQ(probes.dropped.size(), drops + 1);

  wanted = true; // a kernel launched without a name
  keeper.update({process(10)}, [&](int) { return wanted; });
  EXPECT_TRUE(probes.attached.contains(10));
  EXPECT_EQ(probes.attaches, 2);
}

TEST(NameProbeKeeper, AProcessSeenEarlyIsProbedBeforeItsFirstScan) {
  FakeNameProbes probes;
  NameProbeKeeper keeper(probes);
  keeper.track(process(10));
  EXPECT_TRUE(keeper.tracks(10));
  EXPECT_TRUE(probes.attached.contains(10));
  keeper.track(process(10));
  EXPECT_EQ(probes.attaches, 1);
}

TEST(NameProbeKeeper, GoneProcessesLoseTheirProbesUnlessTheScanCouldNotReadThem) {
  FakeNameProbes probes;
  NameProbeKeeper keeper(probes);
  const auto always = [](int) { return true; };
  keeper.update({process(10), process(11)}, always);
  keeper.update({process(10)}, always, [](int pid) { return pid == 11; });
  EXPECT_TRUE(probes.attached.contains(11)) << "unreadable is not gone";
  keeper.update({process(10)}, always);
  EXPECT_FALSE(probes.attached.contains(11));
  EXPECT_FALSE(keeper.tracks(11));
}

TEST(NameProbeKeeper, AReusedPidIsANewProcess) {
  FakeNameProbes probes;
  NameProbeKeeper keeper(probes);
  const auto always = [](int) { return true; };
  keeper.update({process(10, 1)}, always);
  keeper.update({process(10, 2)}, always);
  EXPECT_EQ(probes.attaches, 2) << "the old links watched the old process";
  EXPECT_TRUE(probes.attached.contains(10));
}

TEST(NameProbeKeeper, AFailedAttachIsTriedAgainAtTheNextScan) {
  FakeNameProbes probes;
  NameProbeKeeper keeper(probes);
  probes.failing.insert(10);
  const auto always = [](int) { return true; };
  keeper.update({process(10)}, always);
  EXPECT_FALSE(keeper.attached(10));
  probes.failing.clear();
  keeper.update({process(10)}, always);
  EXPECT_TRUE(keeper.attached(10));
}

} // namespace
} // namespace neutracer
