// SPDX-License-Identifier: Apache-2.0
// The two sinks exporters write to: text written as it comes, and MetricFamily values. Either
// way the same exposition comes out.
#include "exposition/metric_sink.h"

#include <gtest/gtest.h>
#include <stdexcept>
#include <string>
#include <vector>

#include "exposition/text_sink.h"

namespace neutracer {
namespace {

constexpr double kBounds[] = {0.1, 1};
constexpr std::uint64_t kCounts[] = {2, 3};

// One family of each kind, a process's labels shared and one label of the sample's own.
void write_some(MetricSink &sink) {
  const Labels process{{"pid", "7"}, {"comm", "a\"b"}};
  sink.family("t_total", "Help with \\ and\nnewline.", MetricType::counter);
  sink.sample(process, {{"kernel", "k\n1"}}, 3);
  sink.sample({}, {}, 0.5);
  sink.family("t_seconds", "h", MetricType::histogram);
  sink.histogram(process, {{"api", "sync"}}, {kBounds, kCounts, 1.25, 6});
  sink.family("t_empty", "h", MetricType::gauge);
}

TEST(MetricSink, TextWrittenStraightMatchesTheCollectedFamiliesRendered) {
  FamilySink families;
  write_some(families);
  const auto collected = families.take();
  ASSERT_EQ(collected.size(), 3u);
  EXPECT_EQ(collected[0].samples[0].labels,
            (Labels{{"pid", "7"}, {"comm", "a\"b"}, {"kernel", "k\n1"}}));
  EXPECT_EQ(collected[1].histograms[0].bucket_counts, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_TRUE(collected[2].samples.empty());

  std::string straight;
  TextSink text(straight);
  write_some(text);
  std::string rendered;
  render_text(collected, rendered);
  EXPECT_EQ(straight, rendered);
  EXPECT_EQ(straight, "# HELP t_total Help with \\\\ and\\nnewline.\n"
                      "# TYPE t_total counter\n"
                      "t_total{pid=\"7\",comm=\"a\\\"b\",kernel=\"k\\n1\"} 3\n"
                      "t_total 0.5\n"
                      "# HELP t_seconds h\n"
                      "# TYPE t_seconds histogram\n"
                      "t_seconds_bucket{pid=\"7\",comm=\"a\\\"b\",api=\"sync\",le=\"0.1\"} 2\n"
                      "t_seconds_bucket{pid=\"7\",comm=\"a\\\"b\",api=\"sync\",le=\"1\"} 5\n"
                      "t_seconds_bucket{pid=\"7\",comm=\"a\\\"b\",api=\"sync\",le=\"+Inf\"} 6\n"
                      "t_seconds_sum{pid=\"7\",comm=\"a\\\"b\",api=\"sync\"} 1.25\n"
                      "t_seconds_count{pid=\"7\",comm=\"a\\\"b\",api=\"sync\"} 6\n"
                      "# HELP t_empty h\n"
                      "# TYPE t_empty gauge\n");
}

TEST(MetricSink, FamilySinkRefusesASampleBeforeAnyFamily) {
  FamilySink sink;
  EXPECT_THROW(sink.sample({}, {}, 1), std::logic_error);
  EXPECT_THROW(sink.histogram({}, {}, {kBounds, kCounts, 0, 0}), std::logic_error);
}

} // namespace
} // namespace neutracer
