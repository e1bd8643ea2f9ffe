// SPDX-License-Identifier: Apache-2.0
#include "exposition/exposition.h"

#include <gtest/gtest.h>

#include "golden_file.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>

namespace neutracer {
namespace {

std::string render(const std::vector<MetricFamily> &families) {
  std::ostringstream out;
  render_text(families, out);
  return out.str();
}

MetricFamily gauge(std::string name, std::vector<Sample> samples) {
  MetricFamily family;
  family.name = std::move(name);
  family.help = "h";
  family.type = MetricType::gauge;
  family.samples = std::move(samples);
  return family;
}

// The text after the space of a single unlabeled sample line.
std::string value_text(double value) {
  const std::string text = render({gauge("m", {Sample{{}, value}})});
  const std::string prefix = "# HELP m h\n# TYPE m gauge\nm ";
  EXPECT_EQ(text.substr(0, prefix.size()), prefix);
  EXPECT_EQ(text.back(), '\n');
  return text.substr(prefix.size(), text.size() - prefix.size() - 1);
}

// Every family type, labels needing escapes, special values, an empty family and two histogram
// series. Names follow Prometheus conventions so the golden file passes `promtool check metrics`.
std::vector<MetricFamily> golden_families() {
  std::vector<MetricFamily> families;

  MetricFamily launches;
  launches.name = "neutracer_kernel_launches_total";
  launches.help = "Kernel launches observed, by device and kernel.";
  launches.type = MetricType::counter;
  launches.samples = {
      Sample{{{"device", "0"}, {"kernel", "vectorAdd_kernel"}}, 42},
      Sample{{{"device", "1"}, {"kernel", "say \"hi\" C:\\tmp\nnext"}}, 7},
  };
  families.push_back(launches);

  MetricFamily dropped;
  dropped.name = "neutracer_dropped_events_total";
  dropped.help = "Events dropped because the ring buffer was full.";
  dropped.type = MetricType::counter;
  families.push_back(dropped);

  MetricFamily temperature;
  temperature.name = "neutracer_gpu_temperature_celsius";
  temperature.help = "GPU temperature; HELP escapes a backslash \\ and a newline\nlike this.";
  temperature.type = MetricType::gauge;
  temperature.samples = {
      Sample{{{"device", "0"}}, 61.5},
      Sample{{{"device", "1"}}, std::numeric_limits<double>::quiet_NaN()},
      Sample{{{"device", "2"}}, std::numeric_limits<double>::infinity()},
      Sample{{{"device", "3"}}, -std::numeric_limits<double>::infinity()},
  };
  families.push_back(temperature);

  MetricFamily buffer;
  buffer.name = "neutracer_ring_buffer_bytes";
  buffer.help = "Ring buffer size in bytes.";
  buffer.type = MetricType::gauge;
  buffer.samples = {Sample{{}, 16777216}};
  families.push_back(buffer);

  MetricFamily duration;
  duration.name = "neutracer_kernel_duration_seconds";
  duration.help = "Kernel execution time in seconds.";
  duration.type = MetricType::histogram;
  duration.histograms = {
      HistogramSample{{{"device", "0"}}, {0.005, 0.05, 0.5, 1}, {1, 2, 0, 3}, 2.125, 7},
      HistogramSample{{{"device", "1"}}, {0.005, 0.05, 0.5, 1}, {0, 0, 0, 0}, 0, 0},
  };
  families.push_back(duration);

  MetricFamily legacy;
  legacy.name = "neutracer_legacy_ratio";
  legacy.help = "An untyped sample.";
  legacy.type = MetricType::untyped;
  legacy.samples = {Sample{{}, 0.25}};
  families.push_back(legacy);

  return families;
}

// Golden test. To regenerate the golden file after an intentional format change, run the tests
// with NEUTRACER_UPDATE_GOLDEN=1 in the environment; the file is then rewritten instead of
// compared. Review the diff and run `promtool check metrics < <file>` before committing.
TEST(RenderText, MatchesGoldenFile) {
  const std::string path = NEUTRACER_FIXTURES_DIR "/golden/exposition.prom";
  const std::string rendered = render(golden_families());

  neutracer::test::expect_matches_golden(path, rendered);
}

TEST(RenderText, HelpAndTypeLines) {
  MetricFamily family;
  family.name = "x_total";
  family.help = "Counts x.";
  family.type = MetricType::counter;
  family.samples = {Sample{{}, 1}};
  EXPECT_EQ(render({family}), "# HELP x_total Counts x.\n# TYPE x_total counter\nx_total 1\n");

  family.type = MetricType::untyped;
  EXPECT_EQ(render({family}), "# HELP x_total Counts x.\n# TYPE x_total untyped\nx_total 1\n");
}

TEST(RenderText, EscapesHelpText) {
  MetricFamily family = gauge("m", {});
  family.help = "a\\b\nc \"quoted\"";
  // Quotes are not escaped in HELP, only in label values.
  EXPECT_EQ(render({family}), "# HELP m a\\\\b\\nc \"quoted\"\n# TYPE m gauge\n");
}

TEST(RenderText, EscapesLabelValues) {
  const auto text =
      render({gauge("m", {Sample{{{"a", "x\\y"}, {"b", "say \"hi\""}, {"c", "1\n2"}}, 1}})});
  EXPECT_EQ(text,
            "# HELP m h\n# TYPE m gauge\nm{a=\"x\\\\y\",b=\"say \\\"hi\\\"\",c=\"1\\n2\"} 1\n");
}

TEST(RenderText, LabelsAndNoBraces) {
  EXPECT_EQ(render({gauge("m", {Sample{{}, 3}, Sample{{{"a", "x"}, {"b", "y"}}, 4},
                                Sample{{{"empty", ""}}, 5}})}),
            "# HELP m h\n# TYPE m gauge\nm 3\nm{a=\"x\",b=\"y\"} 4\nm{empty=\"\"} 5\n");
}

TEST(RenderText, FormatsIntegralValuesWithoutDecimalPoint) {
  EXPECT_EQ(value_text(42), "42");
  EXPECT_EQ(value_text(-3), "-3");
  EXPECT_EQ(value_text(0), "0");
  EXPECT_EQ(value_text(-0.0), "0");
  EXPECT_EQ(value_text(1e15), "1000000000000000");
  EXPECT_EQ(value_text(9007199254740993.0), "9007199254740992");         // 2^53 + 1 rounds to 2^53.
  EXPECT_EQ(value_text(-9223372036854775808.0), "-9223372036854775808"); // -2^63 fits.
}

TEST(RenderText, FormatsOtherFiniteValuesShortestRoundTrip) {
  EXPECT_EQ(value_text(0.1), "0.1");
  EXPECT_EQ(value_text(1.5), "1.5");
  EXPECT_EQ(value_text(-2.25), "-2.25");
  EXPECT_EQ(value_text(1e-9), "1e-09");
  EXPECT_EQ(value_text(0.1 + 0.2), "0.30000000000000004");
  // %g style, as Go's client writes values and le labels (strconv 'g', -1): fixed notation for
  // exponents -4..5, so le="0.0001" names the same bucket on every exporter.
  EXPECT_EQ(value_text(0.0001), "0.0001");
  EXPECT_EQ(value_text(5e-4), "0.0005");
  EXPECT_EQ(value_text(6.4e-05), "6.4e-05");
  EXPECT_EQ(value_text(123456789.5), "1.234567895e+08");
  // 2^63 is integral but outside int64, so it goes through to_chars.
  EXPECT_EQ(value_text(9223372036854775808.0), "9.223372036854776e+18");
  EXPECT_EQ(value_text(1e20), "1e+20");
  EXPECT_EQ(value_text(1e300), "1e+300");
  EXPECT_EQ(std::stod(value_text(123456.789)), 123456.789);
}

TEST(RenderText, FormatsSpecialValues) {
  EXPECT_EQ(value_text(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(value_text(-std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(value_text(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(value_text(-std::numeric_limits<double>::infinity()), "-Inf");
}

TEST(RenderText, IgnoresStreamFormatFlags) {
  std::ostringstream out;
  out << std::hex << std::showpos << std::showpoint;
  render_text({gauge("m", {Sample{{}, 255}})}, out);
  EXPECT_EQ(out.str(), "# HELP m h\n# TYPE m gauge\nm 255\n");
}

TEST(RenderText, HistogramIsCumulative) {
  MetricFamily family;
  family.name = "d_seconds";
  family.help = "Durations.";
  family.type = MetricType::histogram;
  family.histograms = {HistogramSample{{{"k", "v"}}, {0.005, 0.1, 1, 2.5}, {3, 0, 2, 1}, 4.5, 10}};
  EXPECT_EQ(render({family}), "# HELP d_seconds Durations.\n"
                              "# TYPE d_seconds histogram\n"
                              "d_seconds_bucket{k=\"v\",le=\"0.005\"} 3\n"
                              "d_seconds_bucket{k=\"v\",le=\"0.1\"} 3\n"
                              "d_seconds_bucket{k=\"v\",le=\"1\"} 5\n"
                              "d_seconds_bucket{k=\"v\",le=\"2.5\"} 6\n"
                              "d_seconds_bucket{k=\"v\",le=\"+Inf\"} 10\n"
                              "d_seconds_sum{k=\"v\"} 4.5\n"
                              "d_seconds_count{k=\"v\"} 10\n");
}

TEST(RenderText, HistogramWithoutLabelsAndExplicitInfBound) {
  MetricFamily family;
  family.name = "d_seconds";
  family.help = "Durations.";
  family.type = MetricType::histogram;
  // A caller-supplied +Inf bound must not produce a second le="+Inf" line.
  family.histograms = {
      HistogramSample{{}, {1, std::numeric_limits<double>::infinity()}, {2, 5}, 0.5, 7}};
  EXPECT_EQ(render({family}), "# HELP d_seconds Durations.\n"
                              "# TYPE d_seconds histogram\n"
                              "d_seconds_bucket{le=\"1\"} 2\n"
                              "d_seconds_bucket{le=\"+Inf\"} 7\n"
                              "d_seconds_sum 0.5\n"
                              "d_seconds_count 7\n");
}

TEST(RenderText, HistogramToleratesShortBucketCounts) {
  MetricFamily family;
  family.name = "d_seconds";
  family.help = "Durations.";
  family.type = MetricType::histogram;
  family.histograms = {HistogramSample{{}, {1, 2}, {4}, 3, 4}};
  EXPECT_EQ(render({family}), "# HELP d_seconds Durations.\n"
                              "# TYPE d_seconds histogram\n"
                              "d_seconds_bucket{le=\"1\"} 4\n"
                              "d_seconds_bucket{le=\"2\"} 4\n"
                              "d_seconds_bucket{le=\"+Inf\"} 4\n"
                              "d_seconds_sum 3\n"
                              "d_seconds_count 4\n");
}

TEST(RenderText, EmptyFamiliesStillPrintHelpAndType) {
  MetricFamily histogram;
  histogram.name = "h_seconds";
  histogram.help = "Empty histogram.";
  histogram.type = MetricType::histogram;
  EXPECT_EQ(render({gauge("m", {}), histogram}),
            "# HELP m h\n# TYPE m gauge\n"
            "# HELP h_seconds Empty histogram.\n# TYPE h_seconds histogram\n");
  EXPECT_EQ(render({}), "");
}

TEST(RenderText, ContentType) {
  EXPECT_STREQ(kTextContentType, "text/plain; version=0.0.4; charset=utf-8");
}

} // namespace
} // namespace neutracer
