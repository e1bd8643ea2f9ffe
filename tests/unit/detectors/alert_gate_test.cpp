// SPDX-License-Identifier: Apache-2.0
#include "detectors/alert_gate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <utility>

namespace neutracer {
namespace {

constexpr double kClockStart = 42000.125;

std::uint64_t ns(double seconds) {
  return static_cast<std::uint64_t>(std::llround((kClockStart + seconds) * 1e9));
}

const std::string kTrainer = "4242:5000";
const std::string kServer = "777:1200";

TEST(AlertGate, NotifiesOnTheRisingEdgeOnly) {
  AlertGate gate;
  EXPECT_FALSE(gate.condition(AlertKind::memory_leak, kTrainer, false, ns(0)));
  EXPECT_TRUE(gate.condition(AlertKind::memory_leak, kTrainer, true, ns(2)));
  // Still active for two hours: no repeat.
  for (double t = 4; t < 2 * 3600; t += 2)
    ASSERT_FALSE(gate.condition(AlertKind::memory_leak, kTrainer, true, ns(t))) << "at " << t;

  EXPECT_EQ(gate.sent(AlertKind::memory_leak), 1u);
  EXPECT_EQ(gate.suppressed(AlertKind::memory_leak), 0u);
  const std::set<std::pair<AlertKind, std::string>> expected = {{AlertKind::memory_leak, kTrainer}};
  EXPECT_EQ(gate.active(), expected);
}

TEST(AlertGate, FlappingWithinTheCooldownIsSuppressed) {
  AlertGate gate; // cooldown 600 s
  EXPECT_TRUE(gate.condition(AlertKind::hang, kTrainer, true, ns(0)));
  EXPECT_FALSE(gate.condition(AlertKind::hang, kTrainer, false, ns(10)));
  EXPECT_TRUE(gate.active().empty());
  EXPECT_FALSE(gate.condition(AlertKind::hang, kTrainer, true, ns(20)));
  EXPECT_FALSE(gate.condition(AlertKind::hang, kTrainer, false, ns(30)));
  EXPECT_FALSE(gate.condition(AlertKind::hang, kTrainer, true, ns(300)));
  EXPECT_FALSE(gate.condition(AlertKind::hang, kTrainer, false, ns(310)));

  EXPECT_EQ(gate.sent(AlertKind::hang), 1u);
  EXPECT_EQ(gate.suppressed(AlertKind::hang), 2u);
}

TEST(AlertGate, EdgeHeldByTheCooldownGoesOutWhenItEndsIfStillActive) {
  AlertGate gate;
  EXPECT_TRUE(gate.condition(AlertKind::hang, kTrainer, true, ns(0)));
  EXPECT_FALSE(gate.condition(AlertKind::hang, kTrainer, false, ns(10)));
  EXPECT_FALSE(gate.condition(AlertKind::hang, kTrainer, true, ns(20)));
  EXPECT_FALSE(gate.condition(AlertKind::hang, kTrainer, true, ns(598)));
  EXPECT_TRUE(gate.condition(AlertKind::hang, kTrainer, true, ns(600)));
  EXPECT_FALSE(gate.condition(AlertKind::hang, kTrainer, true, ns(602)));

  EXPECT_EQ(gate.sent(AlertKind::hang), 2u);
  EXPECT_EQ(gate.suppressed(AlertKind::hang), 0u);
}

TEST(AlertGate, RefiresAfterTheCooldown) {
  AlertGate gate;
  EXPECT_TRUE(gate.condition(AlertKind::fragmentation, kServer, true, ns(0)));
  EXPECT_FALSE(gate.condition(AlertKind::fragmentation, kServer, false, ns(100)));
  EXPECT_TRUE(gate.condition(AlertKind::fragmentation, kServer, true, ns(700)));

  EXPECT_EQ(gate.sent(AlertKind::fragmentation), 2u);
}

TEST(AlertGate, KindsAndSubjectsAreIndependent) {
  AlertGate gate;
  EXPECT_TRUE(gate.condition(AlertKind::memory_leak, kTrainer, true, ns(0)));
  EXPECT_TRUE(gate.condition(AlertKind::hang, kTrainer, true, ns(0)));
  EXPECT_TRUE(gate.condition(AlertKind::memory_leak, kServer, true, ns(0)));

  EXPECT_EQ(gate.active().size(), 3u);
  EXPECT_EQ(gate.sent(AlertKind::memory_leak), 2u);
  EXPECT_EQ(gate.sent(AlertKind::hang), 1u);
  EXPECT_EQ(gate.sent(AlertKind::oom), 0u);
}

TEST(AlertGate, EventsShareACooldownPerKindAndSubject) {
  AlertGate gate;
  EXPECT_TRUE(gate.event(AlertKind::oom, kTrainer, ns(0)));
  EXPECT_FALSE(gate.event(AlertKind::oom, kTrainer, ns(1)));
  EXPECT_FALSE(gate.event(AlertKind::oom, kTrainer, ns(599)));
  EXPECT_TRUE(gate.event(AlertKind::oom, kServer, ns(1)));
  EXPECT_TRUE(gate.event(AlertKind::oom, kTrainer, ns(600)));

  EXPECT_EQ(gate.sent(AlertKind::oom), 3u);
  EXPECT_EQ(gate.suppressed(AlertKind::oom), 2u);
  EXPECT_TRUE(gate.active().empty()); // events are not conditions
}

TEST(AlertGate, GlobalRateLimitRefillsContinuously) {
  AlertGate gate; // 30 per minute: one token every 2 s
  int delivered = 0;
  for (int i = 0; i < 40; ++i)
    delivered += gate.event(AlertKind::oom, "pid" + std::to_string(i), ns(0));
  EXPECT_EQ(delivered, 30);
  EXPECT_EQ(gate.suppressed(AlertKind::oom), 10u);

  EXPECT_FALSE(gate.event(AlertKind::oom, "late1", ns(1)));
  EXPECT_TRUE(gate.event(AlertKind::oom, "late2", ns(2.5)));
  EXPECT_FALSE(gate.event(AlertKind::oom, "late3", ns(2.5)));

  // A minute later the bucket is full again, but never holds more than 30.
  delivered = 0;
  for (int i = 0; i < 40; ++i)
    delivered += gate.event(AlertKind::oom, "next" + std::to_string(i), ns(3600));
  EXPECT_EQ(delivered, 30);
  EXPECT_EQ(gate.sent(AlertKind::oom), 61u);
  EXPECT_EQ(gate.suppressed(AlertKind::oom), 22u);
}

TEST(AlertGate, RateLimitedConditionIsDeliveredLater) {
  AlertGateSettings settings;
  settings.max_alerts_per_minute = 1;
  AlertGate gate(settings);
  EXPECT_TRUE(gate.condition(AlertKind::memory_leak, kTrainer, true, ns(0)));
  EXPECT_FALSE(gate.condition(AlertKind::memory_leak, kServer, true, ns(0)));
  EXPECT_FALSE(gate.condition(AlertKind::memory_leak, kServer, true, ns(30)));
  EXPECT_TRUE(gate.condition(AlertKind::memory_leak, kServer, true, ns(60)));

  EXPECT_EQ(gate.sent(AlertKind::memory_leak), 2u);
  EXPECT_EQ(gate.suppressed(AlertKind::memory_leak), 0u);
}

TEST(AlertGate, RateLimitedConditionThatClearsIsSuppressed) {
  AlertGateSettings settings;
  settings.max_alerts_per_minute = 1;
  AlertGate gate(settings);
  EXPECT_TRUE(gate.condition(AlertKind::hang, kTrainer, true, ns(0)));
  EXPECT_FALSE(gate.condition(AlertKind::hang, kServer, true, ns(0)));
  EXPECT_FALSE(gate.condition(AlertKind::hang, kServer, false, ns(10)));

  EXPECT_EQ(gate.suppressed(AlertKind::hang), 1u);
}

TEST(AlertGate, ZeroRateMeansNoLimit) {
  AlertGateSettings settings;
  settings.max_alerts_per_minute = 0;
  AlertGate gate(settings);
  int delivered = 0;
  for (int i = 0; i < 1000; ++i)
    delivered += gate.event(AlertKind::oom, std::to_string(i), ns(0));
  EXPECT_EQ(delivered, 1000);
}

TEST(AlertGate, ForgetDropsTheSubject) {
  AlertGate gate;
  EXPECT_TRUE(gate.condition(AlertKind::memory_leak, kTrainer, true, ns(0)));
  EXPECT_TRUE(gate.condition(AlertKind::memory_leak, kServer, true, ns(0)));
  EXPECT_FALSE(gate.condition(AlertKind::memory_leak, kTrainer, false, ns(5)));
  EXPECT_FALSE(gate.condition(AlertKind::memory_leak, kTrainer, true, ns(10))); // owed
  gate.forget(kTrainer);

  const std::set<std::pair<AlertKind, std::string>> expected = {{AlertKind::memory_leak, kServer}};
  EXPECT_EQ(gate.active(), expected);
  EXPECT_EQ(gate.suppressed(AlertKind::memory_leak), 1u);
  // A new process under a reused subject starts without the old cooldown.
  EXPECT_TRUE(gate.condition(AlertKind::memory_leak, kTrainer, true, ns(20)));
}

TEST(AlertGate, ClockGoingBackwardsStaysInTheCooldown) {
  AlertGate gate;
  EXPECT_TRUE(gate.event(AlertKind::oom, kTrainer, ns(100)));
  EXPECT_FALSE(gate.event(AlertKind::oom, kTrainer, ns(50)));
}

TEST(AlertGate, KindNames) {
  EXPECT_EQ(alert_kind_name(AlertKind::memory_leak), "memory_leak");
  EXPECT_EQ(alert_kind_name(AlertKind::fragmentation), "fragmentation");
  EXPECT_EQ(alert_kind_name(AlertKind::oom), "oom");
  EXPECT_EQ(alert_kind_name(AlertKind::hang), "hang");
}

} // namespace
} // namespace neutracer
