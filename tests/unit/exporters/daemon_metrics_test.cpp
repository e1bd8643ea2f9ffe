// SPDX-License-Identifier: Apache-2.0
#include "exporters/daemon_metrics.h"

#include <gtest/gtest.h>

#include "exposition/text_sink.h"
#include "golden_file.h"

namespace neutracer {
namespace {

LoopStatus status() {
  LoopStatus status;
  status.scans = 42;
  status.scan_seconds = 0.0625;
  status.collectors = {{"cuda", true, 0.03125}, {"nvml", false, 0.5}};
  status.sources = {{"cuda_tracer", true}, {"nvml", false}, {"kernel_log", true}};
  return status;
}

// Golden test. After an intentional change run with NEUTRACER_UPDATE_GOLDEN=1, review the diff
// and run `promtool check metrics < tests/fixtures/golden/daemon_metrics.prom`.
TEST(DaemonMetrics, MatchesGoldenFile) {
  std::string text;
  TextSink sink(text);
  write_daemon_metrics({"1.2.3-test", "c560c51a1b2c-dirty", "GNU 12.2.0", "v1.1"}, status(), sink);
  test::expect_matches_golden(NEUTRACER_FIXTURES_DIR "/golden/daemon_metrics.prom", text);
}

TEST(DaemonMetrics, OneSeriesPerCollectorAndSource) {
  FamilySink sink;
  write_daemon_metrics({}, status(), sink);
  const auto families = sink.take();
  const auto find = [&](const std::string &name) -> const MetricFamily & {
    for (const auto &f : families)
      if (f.name == name)
        return f;
    throw std::runtime_error("no family " + name);
  };
  const auto &success = find("neutracer_collector_success");
  ASSERT_EQ(success.samples.size(), 2u);
  EXPECT_EQ(success.samples[0].labels, (Labels{{"collector", "cuda"}}));
  EXPECT_EQ(success.samples[0].value, 1);
  EXPECT_EQ(success.samples[1].value, 0);
  const auto &duration = find("neutracer_collector_duration_seconds");
  EXPECT_EQ(duration.samples[1].labels, (Labels{{"collector", "nvml"}}));
  EXPECT_EQ(duration.samples[1].value, 0.5);
  const auto &up = find("neutracer_collector_up");
  ASSERT_EQ(up.samples.size(), 3u);
  EXPECT_EQ(up.samples[2].labels, (Labels{{"collector", "kernel_log"}}));
  EXPECT_EQ(up.samples[1].value, 0);
  EXPECT_EQ(find("neutracer_scans_total").samples.at(0).value, 42);
}

} // namespace
} // namespace neutracer
