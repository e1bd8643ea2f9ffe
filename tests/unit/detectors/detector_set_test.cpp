// SPDX-License-Identifier: Apache-2.0
// DetectorSet over CudaState with a fake clock, plus what is made from its findings: journal
// entries, metric families and the JSON views.
#include "collectors/detector_collector.h"
#include "detectors/detector_set.h"

#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "config/config.h"
#include "cuda/cuda_state.h"
#include "detectors/alert_journal.h"
#include "exporters/api_json.h"
#include "exporters/detector_metrics.h"
#include "exposition/text_sink.h"

namespace neutracer {
namespace {

constexpr std::uint32_t kPid = 4242;
constexpr std::uint64_t kStartTicks = 777;
constexpr std::uint64_t kNsPerTick = 10'000'000;
constexpr std::uint64_t kSecond = 1'000'000'000;
constexpr std::uint64_t kMiB = 1 << 20;
const ProcessId kId{static_cast<int>(kPid), kStartTicks};

nt_call_event memory_call(nt_api api, std::uint64_t time_ns, std::uint64_t address,
                          std::uint64_t size, std::uint32_t result = 0) {
  nt_call_event e{};
  e.kind = NT_EVENT_CALL;
  e.api = api;
  e.tgid = kPid;
  e.tid = kPid;
  e.proc_start_ns = kStartTicks * kNsPerTick;
  e.enter_ns = time_ns;
  e.exit_ns = time_ns;
  e.result = result;
  e.args[0] = api == NT_API_MEM_FREE ? address : 0x7ffd0000;
  e.args[1] = size;
  e.out[0] = address;
  return e;
}

class DetectorSetTest : public ::testing::Test {
protected:
  DetectorSetTest() : state_({50, 10, 100, {}}), detectors_(settings()) {
    DiscoveryResult discovery;
    discovery.processes.push_back({kId, "train.py", "/usr/bin/python3", {}, {}});
    state_.update_processes(discovery, [](const ProcessId &) { return true; });
  }

  static DetectorSettings settings() {
    Config config;
    config.detectors.leak_window = std::chrono::seconds(1);
    config.detectors.leak_windows = 3;
    config.detectors.leak_min_growth_bytes = kMiB;
    config.detectors.leak_sample_step_bytes = kMiB;
    config.detectors.hang_call_threshold = std::chrono::seconds(5);
    config.alerts.cooldown = std::chrono::seconds(60);
    return detector_settings(config);
  }

  void scan(std::uint64_t now_ns, double cpu_seconds = 0) {
    detectors_.scan(state_, state_.take_memory_changes(), {{kId, cpu_seconds}}, now_ns);
  }

  // 2 MiB allocated every 200 ms for 10 s, none freed; the notices it raised.
  std::vector<AlertNotice> steady_leak() {
    std::uint64_t address = 0x7f0000000000;
    std::vector<AlertNotice> notices;
    for (std::uint64_t t = 0; t < 10 * kSecond; t += kSecond / 5) {
      state_.apply(memory_call(NT_API_MEM_ALLOC, t, address, 2 * kMiB));
      address += 2 * kMiB;
      scan(t + 1);
      for (auto &notice : detectors_.take_notices())
        notices.push_back(std::move(notice));
    }
    return notices;
  }

  CudaState state_;
  DetectorSet detectors_;
};

TEST_F(DetectorSetTest, SettingsComeFromTheConfig) {
  const auto s = settings();
  EXPECT_DOUBLE_EQ(s.leak.window_seconds, 1.0);
  EXPECT_EQ(s.leak.windows, 3);
  EXPECT_EQ(s.leak.high_water_step_bytes, kMiB);
  EXPECT_DOUBLE_EQ(s.hang.call_seconds, 5.0);
  EXPECT_DOUBLE_EQ(s.gate.cooldown_seconds, 60.0);
  EXPECT_EQ(s.gate.max_alerts_per_minute, Config{}.alerts.max_per_minute);
}

TEST_F(DetectorSetTest, SteadyLeakNotifiesOnceAndIsActive) {
  const auto notices = steady_leak();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].kind, AlertKind::memory_leak);
  EXPECT_EQ(notices[0].id, kId);
  EXPECT_EQ(notices[0].comm, "train.py");
  const auto &findings = detectors_.findings().at(kId);
  EXPECT_TRUE(findings.leak.suspected);
  EXPECT_EQ(findings.gpu_bytes_in_use, 100 * kMiB);
  ASSERT_EQ(detectors_.active().size(), 1u);
  EXPECT_EQ(detectors_.active()[0].kind, AlertKind::memory_leak);
  EXPECT_EQ(detectors_.recent().size(), 1u);
  EXPECT_EQ(detectors_.gate().sent(AlertKind::memory_leak), 1u);

  // The journal entry: fixed MESSAGE_ID, warning, the process and the numbers.
  const auto entry = journal_entry(notices[0]);
  EXPECT_EQ(entry.message_id, "3dd5317340b24af494c60d5f9bde2eba");
  EXPECT_EQ(entry.priority, 4);
  EXPECT_NE(entry.message.find("memory_leak in train.py (pid 4242)"), std::string::npos);
  std::map<std::string, std::string> fields(entry.fields.begin(), entry.fields.end());
  EXPECT_EQ(fields.at("ALERT_KIND"), "memory_leak");
  EXPECT_EQ(fields.at("TARGET_PID"), "4242");
  EXPECT_EQ(fields.at("TARGET_COMM"), "train.py");
  EXPECT_EQ(fields.count("TARGET_CONTAINER"), 0u);
  // Bytes in use when the alert went out: the leak had run about three 1 s windows.
  const auto bytes_at_alert = std::stoull(fields.at("GPU_BYTES_IN_USE"));
  EXPECT_GE(bytes_at_alert, 20 * kMiB);
  EXPECT_LE(bytes_at_alert, 50 * kMiB);
  EXPECT_GT(std::stod(fields.at("GROWTH_BYTES_PER_SECOND")), 5.0 * kMiB);
}

TEST_F(DetectorSetTest, ALeakNoticeNamesItsTopSitesAndTheBytesLiveFromEach) {
  detectors_.set_site_lookup([](const ProcessId &, AlertKind kind, std::uint64_t) {
    EXPECT_EQ(kind, AlertKind::memory_leak);
    std::vector<NoticeSite> sites{
        {"grow", "train.py", "train.py:51", 51, "grow (train.py:51)", 96 * kMiB, "driver"},
        {"cache", "train.py", "train.py:30", 30, "cache (train.py:30)", 3 * kMiB, "driver"},
        {"leak_here", "/opt/app/trainer", "trainer+0x10", 0, "leak_here (trainer+0x10)", kMiB,
         "driver"}};
    return sites;
  });
  const auto notices = steady_leak();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_TRUE(notices[0].summary.ends_with(
      " at grow (train.py:51) (96.00 MiB live from there; also 3.00 MiB from cache (train.py:30), "
      "1.00 MiB from leak_here (trainer+0x10))"))
      << notices[0].summary;
  EXPECT_EQ(notices[0].sites.size(), 3u);
  const auto entry = journal_entry(notices[0]);
  std::map<std::string, std::string> fields(entry.fields.begin(), entry.fields.end());
  EXPECT_EQ(fields.at("TARGET_CODE_FUNC"), "grow");
  EXPECT_EQ(fields.at("TARGET_CODE_LINE"), "51");
  EXPECT_EQ(fields.at("LEAK_SITES"), "grow (train.py:51)=100663296; cache (train.py:30)=3145728; "
                                     "leak_here (trainer+0x10)=1048576");
  const auto alerts = nlohmann::json::parse(alerts_json(detectors_, ClockOffset{}));
  const auto &sites = alerts["recent"][0]["sites"];
  ASSERT_EQ(sites.size(), 3u);
  EXPECT_EQ(sites[0]["line"], 51);
  EXPECT_EQ(sites[0]["live_bytes"], 96 * kMiB);
  EXPECT_EQ(sites[2]["location"], "trainer+0x10");
  EXPECT_FALSE(sites[2].contains("line")) << "a native frame has no line";
}

TEST_F(DetectorSetTest, TheAllocatorViewAloneMakesALeakSuspected) {
  // Flat in the driver view: one allocation, then nothing.
  state_.apply(memory_call(NT_API_MEM_ALLOC, 0, 0x7f0000000000, 64 * kMiB));
  scan(1);
  EXPECT_FALSE(detectors_.findings().at(kId).leak.suspected);
  EXPECT_TRUE(detectors_.take_notices().empty());
  detectors_.set_site_lookup([](const ProcessId &, AlertKind, std::uint64_t) {
    return std::vector<NoticeSite>{
        {"keep", "train.py", "train.py:9", 9, "keep (train.py:9)", 40 * kMiB, "allocator"}};
  });
  detectors_.set_allocator_leaks({{kId, 20.0 * kMiB}});
  scan(kSecond);
  const auto &leak = detectors_.findings().at(kId).leak;
  EXPECT_TRUE(leak.suspected);
  EXPECT_TRUE(leak.allocator_view);
  auto notices = detectors_.take_notices();
  ASSERT_EQ(notices.size(), 1u) << "one notice: the condition's own";
  EXPECT_NE(notices[0].summary.find("(allocator view)"), std::string::npos) << notices[0].summary;
  EXPECT_NE(notices[0].summary.find(" at keep (train.py:9)"), std::string::npos);
  std::map<std::string, std::string> fields(notices[0].fields.begin(), notices[0].fields.end());
  EXPECT_EQ(fields.at("LEAK_VIEW"), "allocator");
  EXPECT_EQ(fields.at("LEAK_SITES_VIEW"), "allocator");
  EXPECT_EQ(fields.at("GROWTH_BYTES_PER_SECOND"), std::to_string(20 * kMiB));
  const auto alerts = nlohmann::json::parse(alerts_json(detectors_, ClockOffset{}));
  EXPECT_EQ(alerts["recent"][0]["sites"][0]["view"], "allocator");

  // The view's verdict gone (closed): the driver view alone decides again.
  detectors_.set_allocator_leaks({});
  scan(2 * kSecond);
  EXPECT_FALSE(detectors_.findings().at(kId).leak.suspected);
}

TEST_F(DetectorSetTest, ADriverLeakIsNotifiedOnceMoreWhenTheAllocatorViewConfirmsIt) {
  ASSERT_EQ(steady_leak().size(), 1u);
  detectors_.set_allocator_leaks({{kId, 10.0 * kMiB}});
  scan(11 * kSecond);
  auto notices = detectors_.take_notices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].summary.find("(allocator view)"), std::string::npos) << notices[0].summary;
  scan(12 * kSecond);
  EXPECT_TRUE(detectors_.take_notices().empty()) << "once per confirmation";
}

TEST_F(DetectorSetTest, TheAllocatorViewsConfirmationIsNotifiedEvenWhenTheConditionCoolsDown) {
  ASSERT_EQ(steady_leak().size(), 1u);
  // The driver view's growth stops: its condition ends, and its gate holds it in cooldown.
  for (std::uint64_t t = 10 * kSecond; t < 20 * kSecond; t += kSecond / 5)
    scan(t);
  ASSERT_FALSE(detectors_.findings().at(kId).leak.suspected);
  ASSERT_TRUE(detectors_.take_notices().empty());
  detectors_.set_allocator_leaks({{kId, 10.0 * kMiB}});
  scan(20 * kSecond);
  auto notices = detectors_.take_notices();
  ASSERT_EQ(notices.size(), 1u) << "the condition is in cooldown; the confirmation is not";
  EXPECT_NE(notices[0].summary.find("(allocator view)"), std::string::npos);
  // The view closes and a later one confirms again within the cooldown (60 s): no new notice.
  detectors_.set_allocator_leaks({});
  scan(21 * kSecond);
  detectors_.set_allocator_leaks({{kId, 10.0 * kMiB}});
  scan(22 * kSecond);
  EXPECT_TRUE(detectors_.take_notices().empty());
}

TEST_F(DetectorSetTest, DeviceFreeMemoryGivesTheLeakItsTimeUntilFull) {
  std::uint64_t address = 0x7f0000000000;
  for (std::uint64_t t = 0; t < 10 * kSecond; t += kSecond / 5) {
    state_.apply(memory_call(NT_API_MEM_ALLOC, t, address, 2 * kMiB));
    address += 2 * kMiB;
    // 1000 MiB free when the process held nothing.
    detectors_.scan(state_, state_.take_memory_changes(), {{kId, 0}}, t + 1,
                    {{kId, DeviceHeadroom{1000 * kMiB, 0}}});
  }
  const auto &leak = detectors_.findings().at(kId).leak;
  ASSERT_TRUE(leak.suspected);
  ASSERT_TRUE(leak.seconds_until_full.has_value()) << "device free memory was passed";
  // 1000 MiB free at the start, 100 MiB of it taken since, growing by about 10 MiB/s.
  EXPECT_NEAR(*leak.seconds_until_full, 90, 30);
}

TEST_F(DetectorSetTest, SawtoothStaysSilent) {
  for (std::uint64_t t = 0; t < 20 * kSecond; t += kSecond / 5) {
    state_.apply(memory_call(NT_API_MEM_ALLOC, t, 0x7f0000000000, 64 * kMiB));
    state_.apply(memory_call(NT_API_MEM_FREE, t + kSecond / 10, 0x7f0000000000, 0));
    scan(t + kSecond / 10 + 1);
  }
  EXPECT_TRUE(detectors_.take_notices().empty());
  EXPECT_FALSE(detectors_.findings().at(kId).leak.suspected);
  EXPECT_TRUE(detectors_.active().empty());
}

TEST_F(DetectorSetTest, EveryFailedAllocationIsCountedButNotifiedOncePerCooldown) {
  state_.apply(memory_call(NT_API_MEM_ALLOC, 1, 0x1000, 8 * kMiB));
  for (int i = 0; i < 3; ++i)
    state_.apply(memory_call(NT_API_MEM_ALLOC, 2 + i, 0, 16 * kMiB, 2));
  scan(kSecond);
  const auto notices = detectors_.take_notices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].kind, AlertKind::oom);
  EXPECT_EQ(notices[0].time_ns, 2u); // the failure's own time
  const auto &findings = detectors_.findings().at(kId);
  EXPECT_EQ(findings.ooms[static_cast<std::size_t>(OomCause::capacity)], 3u);
  EXPECT_EQ(detectors_.gate().suppressed(AlertKind::oom), 2u);
  const auto entry = journal_entry(notices[0]);
  EXPECT_EQ(entry.message_id, "300aaf922eb2453baeec2d829451f171");
  EXPECT_EQ(entry.priority, 3);
  std::map<std::string, std::string> fields(entry.fields.begin(), entry.fields.end());
  EXPECT_EQ(fields.at("REQUESTED_BYTES"), std::to_string(16 * kMiB));
  EXPECT_EQ(fields.at("GPU_BYTES_IN_USE"), std::to_string(8 * kMiB));
  EXPECT_EQ(fields.at("OOM_CAUSE"), "capacity");
  EXPECT_EQ(fields.at("CUDA_ERROR"), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(fields.count("DEVICE_FREE_BYTES"), 0u); // unknown without NVML
}

TEST_F(DetectorSetTest, ANoticeNamesTheSiteTheLookupGives) {
  std::vector<std::pair<AlertKind, std::uint64_t>> asked;
  detectors_.set_site_lookup([&](const ProcessId &id, AlertKind kind, std::uint64_t time_ns) {
    EXPECT_EQ(id, kId);
    asked.emplace_back(kind, time_ns);
    return std::vector<NoticeSite>{
        {"oom_here", "/opt/app/trainer", "trainer+0x1234", 0, "oom_here (trainer+0x1234)", 0, ""}};
  });
  state_.apply(memory_call(NT_API_MEM_ALLOC, 7, 0, 16 * kMiB, 2));
  scan(kSecond);
  const auto notices = detectors_.take_notices();
  ASSERT_EQ(notices.size(), 1u);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0], std::pair(AlertKind::oom, std::uint64_t{7})) << "the failure's own time";
  EXPECT_TRUE(notices[0].summary.ends_with(" at oom_here (trainer+0x1234)")) << notices[0].summary;
  ASSERT_EQ(notices[0].sites.size(), 1u);
  const auto entry = journal_entry(notices[0]);
  EXPECT_NE(entry.message.find("at oom_here (trainer+0x1234)"), std::string::npos);
  std::map<std::string, std::string> fields(entry.fields.begin(), entry.fields.end());
  EXPECT_EQ(fields.at("TARGET_CODE_FUNC"), "oom_here");
  EXPECT_EQ(fields.at("TARGET_CODE_MODULE"), "/opt/app/trainer");
  EXPECT_EQ(fields.at("TARGET_CODE_LOCATION"), "trainer+0x1234");
  EXPECT_EQ(fields.count("TARGET_CODE_LINE"), 0u);
  EXPECT_EQ(fields.count("LEAK_SITES"), 0u) << "an OOM names one site";
  // No site known: the notice stays as it was.
  detectors_.set_site_lookup(
      [](const ProcessId &, AlertKind, std::uint64_t) { return std::vector<NoticeSite>{}; });
  state_.apply(memory_call(NT_API_MEM_ALLOC, 8, 0, 16 * kMiB, 2));
  scan(100 * kSecond);
  for (const auto &notice : detectors_.take_notices()) {
    EXPECT_EQ(notice.summary.find(" at "), std::string::npos);
    for (const auto &[name, value] : notice.fields)
      EXPECT_FALSE(name.starts_with("TARGET_CODE")) << name;
  }
}

TEST_F(DetectorSetTest, LeakSampleAddressesAreTheUnfreedSamples) {
  state_.apply(memory_call(NT_API_MEM_ALLOC, 1, 0x1000, 2 * kMiB));
  state_.apply(memory_call(NT_API_MEM_ALLOC, 2, 0x2000, 2 * kMiB));
  state_.apply(memory_call(NT_API_MEM_FREE, 3, 0x1000, 0));
  scan(kSecond);
  EXPECT_EQ(detectors_.leak_sample_addresses(kId), std::vector<std::uint64_t>{0x2000});
  EXPECT_TRUE(detectors_.leak_sample_addresses({1, 1}).empty());
}

TEST_F(DetectorSetTest, FragmentationOomRaisesTheFragmentationConditionForOneStormWindow) {
  for (std::uint64_t i = 0; i < 40; ++i)
    state_.apply(memory_call(NT_API_MEM_ALLOC, 1 + i, 0x100000 + i * 2 * kMiB, 2 * kMiB));
  state_.apply(memory_call(NT_API_MEM_ALLOC, 100, 0, 32 * kMiB, 2));
  scan(kSecond);
  auto notices = detectors_.take_notices();
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_EQ(notices[0].kind, AlertKind::oom);
  EXPECT_EQ(notices[1].kind, AlertKind::fragmentation);
  EXPECT_EQ(detectors_.findings().at(kId).ooms[static_cast<std::size_t>(OomCause::fragmentation)],
            1u);
  // Still active within the storm window (60 s by default), cleared after it.
  scan(30 * kSecond);
  EXPECT_EQ(detectors_.active().size(), 1u);
  scan(61 * kSecond);
  EXPECT_TRUE(detectors_.active().empty());
}

TEST_F(DetectorSetTest, AFailureIsJudgedByTheDeviceFreeMemoryWhenItHappened) {
  // Read at the previous scan: 100 MiB free while the process held nothing. It then took
  // 80 MiB in one block, and 32 MiB more failed: 20 MiB were left, a capacity OOM.
  state_.apply(memory_call(NT_API_MEM_ALLOC, 1, 0x100000, 80 * kMiB));
  state_.apply(memory_call(NT_API_MEM_ALLOC, 2, 0, 32 * kMiB, 2));
  detectors_.scan(state_, state_.take_memory_changes(), {{kId, 0}}, kSecond,
                  {{kId, DeviceHeadroom{100 * kMiB, 0}}});
  const auto &ooms = detectors_.findings().at(kId).ooms;
  EXPECT_EQ(ooms[static_cast<std::size_t>(OomCause::capacity)], 1u);
  EXPECT_EQ(ooms[static_cast<std::size_t>(OomCause::fragmentation)], 0u);
  ASSERT_TRUE(detectors_.findings().at(kId).last_oom);
  EXPECT_EQ(detectors_.findings().at(kId).last_oom->device_free_bytes, 20 * kMiB);

  // With 1 GiB free the device had room: the driver could not place it (fragmentation).
  state_.apply(memory_call(NT_API_MEM_ALLOC, 3, 0, 32 * kMiB, 2));
  detectors_.scan(state_, state_.take_memory_changes(), {{kId, 0}}, 2 * kSecond,
                  {{kId, DeviceHeadroom{1024 * kMiB, 80 * kMiB}}});
  EXPECT_EQ(ooms[static_cast<std::size_t>(OomCause::fragmentation)], 1u);
}

TEST_F(DetectorSetTest, StuckCallIsAHangUntilItReturns) {
  state_.set_inflight_calls({{kPid, kPid, kStartTicks * kNsPerTick, NT_API_CTX_SYNCHRONIZE, 0}},
                            6 * kSecond);
  scan(6 * kSecond);
  auto notices = detectors_.take_notices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].kind, AlertKind::hang);
  std::map<std::string, std::string> fields(notices[0].fields.begin(), notices[0].fields.end());
  EXPECT_EQ(fields.at("HANG_REASON"), "call_in_progress");
  EXPECT_EQ(fields.at("CUDA_API"), "cuCtxSynchronize");
  EXPECT_EQ(fields.at("STALLED_SECONDS"), "6");
  EXPECT_EQ(journal_entry(notices[0]).message_id, "532415b45116440fa5459ceab6100463");
  state_.set_inflight_calls({}, 7 * kSecond);
  scan(7 * kSecond);
  EXPECT_FALSE(detectors_.findings().at(kId).hang.suspected);
  EXPECT_TRUE(detectors_.active().empty());
}

TEST_F(DetectorSetTest, ForgetDropsTheProcess) {
  state_.apply(memory_call(NT_API_MEM_ALLOC, 1, 0x1000, kMiB));
  scan(kSecond);
  ASSERT_EQ(detectors_.findings().size(), 1u);
  detectors_.forget({kId});
  EXPECT_TRUE(detectors_.findings().empty());
  EXPECT_TRUE(detectors_.active().empty());
}

TEST(AlertJournal, ExitHoldingMemoryIsInformation) {
  const auto entry = exit_journal_entry({kId, "train.py", 3 * kMiB});
  EXPECT_EQ(entry.message_id, kExitWithMemoryMessageId);
  EXPECT_EQ(entry.priority, 6);
  std::map<std::string, std::string> fields(entry.fields.begin(), entry.fields.end());
  EXPECT_EQ(fields.at("GPU_BYTES_IN_USE"), std::to_string(3 * kMiB));
  EXPECT_EQ(fields.count("ALERT_KIND"), 0u);
}

TEST(AlertJournal, EveryMessageIdIsExplainedInTheCatalog) {
  std::ifstream file(NEUTRACER_SOURCE_DIR "/systemd/neutracerd.catalog");
  ASSERT_TRUE(file.good());
  std::stringstream text;
  text << file.rdbuf();
  for (const auto kind :
       {AlertKind::memory_leak, AlertKind::fragmentation, AlertKind::oom, AlertKind::hang}) {
    const std::string id(alert_message_id(kind));
    EXPECT_EQ(id.size(), 32u);
    EXPECT_NE(text.str().find("-- " + id + "\n"), std::string::npos) << id;
  }
  EXPECT_NE(text.str().find("-- " + std::string(kExitWithMemoryMessageId) + "\n"),
            std::string::npos);
}

TEST_F(DetectorSetTest, MetricsAndJsonShowFindingsAndAlerts) {
  state_.apply(memory_call(NT_API_MEM_ALLOC, 1, 0x1000, 8 * kMiB));
  state_.apply(memory_call(NT_API_MEM_ALLOC, 2, 0, 16 * kMiB, 2));
  scan(kSecond);
  AlertDelivery delivery{1, 2, 5 * kMiB};
  std::map<std::string, const MetricFamily *> by_name;
  const auto families = detector_families(detectors_, delivery);
  for (const auto &f : families)
    by_name[f.name] = &f;
  ASSERT_TRUE(by_name.count("neutracer_cuda_oom_events_total"));
  const auto &ooms = *by_name.at("neutracer_cuda_oom_events_total");
  ASSERT_EQ(ooms.samples.size(), 2u);
  EXPECT_EQ(ooms.samples[0].labels,
            (Labels{{"pid", "4242"}, {"comm", "train.py"}, {"cause", "capacity"}}));
  EXPECT_EQ(ooms.samples[0].value, 1);
  EXPECT_EQ(ooms.samples[1].value, 0);
  EXPECT_EQ(by_name.at("neutracer_alerts_total")->samples[2].labels, (Labels{{"alert", "oom"}}));
  EXPECT_EQ(by_name.at("neutracer_alerts_total")->samples[2].value, 1);
  EXPECT_EQ(by_name.at("neutracer_journal_write_errors_total")->samples[0].value, 1);
  EXPECT_EQ(by_name.at("neutracer_cuda_exits_holding_memory_total")->samples[0].value, 2);
  // No device free memory known: no time-until-full series.
  EXPECT_TRUE(by_name.at("neutracer_cuda_memory_seconds_until_full")->samples.empty());
  for (const auto &f : families)
    EXPECT_TRUE(f.name.starts_with("neutracer_")) << f.name;
  // The daemon writes them straight into text: the same text as the families rendered.
  std::string straight;
  TextSink sink(straight);
  write_detector_metrics(detectors_, delivery, sink);
  std::string rendered;
  render_text(families, rendered);
  EXPECT_EQ(straight, rendered);

  const auto processes = nlohmann::json::parse(processes_json(state_, detectors_));
  ASSERT_EQ(processes["processes"].size(), 1u);
  const auto &p = processes["processes"][0];
  EXPECT_EQ(p["pid"], 4242);
  EXPECT_EQ(p["comm"], "train.py");
  EXPECT_EQ(p["gpu_bytes_in_use"], 8 * kMiB);
  EXPECT_EQ(p["failed_allocations"], 1);
  EXPECT_EQ(p["memory"]["device"]["used_bytes"], 8 * kMiB);
  EXPECT_EQ(p["detectors"]["oom"]["capacity"], 1);
  EXPECT_TRUE(p["active_alerts"].empty());

  const ClockOffset clock{1000.0, 10 * kSecond};
  EXPECT_DOUBLE_EQ(clock.to_unix(4 * kSecond), 994.0);
  const auto alerts = nlohmann::json::parse(alerts_json(detectors_, clock));
  EXPECT_TRUE(alerts["active"].empty());
  ASSERT_EQ(alerts["recent"].size(), 1u);
  EXPECT_EQ(alerts["recent"][0]["alert"], "oom");
  EXPECT_EQ(alerts["recent"][0]["fields"]["OOM_CAUSE"], "capacity");
  EXPECT_NEAR(alerts["recent"][0]["time"].get<double>(), 990.0, 1e-6);
}

} // namespace
} // namespace neutracer
