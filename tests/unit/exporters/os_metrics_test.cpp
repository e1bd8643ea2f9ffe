// SPDX-License-Identifier: Apache-2.0
#include "exporters/cuda_metrics.h"
#include "exporters/metric_builders.h"
#include "exporters/os_metrics.h"
#include "exposition/exposition.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "exposition/text_sink.h"
#include "golden_file.h"
#include "metric_lookup.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace neutracer {
namespace {

constexpr const char *kContainer =
    "3f4e9c1d2b7a8e6f5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e";

ProcessOsSample proc_sample() {
  ProcessOsSample s;
  s.start_ticks = 4242;
  s.user_cpu_seconds = 12.5;
  s.system_cpu_seconds = 0.75;
  s.threads = 24;
  s.resident_bytes = 2147483648;
  s.virtual_bytes = 34359738368;
  s.minor_faults = 100000;
  s.major_faults = 12;
  s.voluntary_ctxt_switches = 5000;
  s.involuntary_ctxt_switches = 250;
  s.io = ProcIoCounters{1, 2, 3, 4, 1048576, 4194304, 0};
  return s;
}

OsCounters bpf_counters() {
  OsCounters c;
  c.oncpu_ns = 12'250'000'000;
  c.offcpu_ns = 180'500'000'000;
  c.runqueue_wait_ns = 125'000'000;
  c.migrations = 321;
  c.numa_migrations = 7;
  c.io_read_bytes = 8388608;
  c.io_write_bytes = 16777216;
  c.io_read_ops = 16;
  c.io_write_ops = 6;
  c.io_latency_slots[6] = 3;                     // [64, 128) us
  c.io_latency_slots[9] = 17;                    // [512, 1024) us
  c.io_latency_slots[13] = 1;                    // [8.192, 16.384) ms
  c.io_latency_slots[kOsIoLatencySlots - 1] = 1; // beyond the last bound (>= 8.388608 s)
  c.io_latency_sum_ns = 9'500'000'000;
  c.net_tx_bytes = 1048576;
  c.net_rx_bytes = 2097152;
  c.net_tx_packets = 38;
  c.net_rx_packets = 35;
  c.tcp_connections = 2;
  return c;
}

// Three processes: both sources (in a named Docker container), /proc only (io unreadable), BPF
// only (in a Slurm job). Labels as the daemon makes them (process_labels).
std::vector<OsProcessView> deterministic_views() {
  std::vector<OsProcessView> views;
  views.push_back({process_labels({1001, 4242}, "python3",
                                  ContainerInfo{{kContainer, "docker", ""}, {}, "trainer"}),
                   proc_sample(), bpf_counters()});
  auto no_io = proc_sample();
  no_io.io.reset();
  no_io.voluntary_ctxt_switches.reset();
  no_io.involuntary_ctxt_switches.reset();
  views.push_back({{{"pid", "77"}, {"comm", "say \"hi\" \\"}}, no_io, std::nullopt});
  OsCounters only = {};
  only.oncpu_ns = 1;
  views.push_back({process_labels({5, 9}, "trainer", ContainerInfo{{"", "", "", "4242"}, {}}),
                   std::nullopt, only});
  return views;
}

OsTracerStats tracer_stats() {
  OsTracerStats stats;
  stats.traced_map_full = 1;
  stats.counters_map_full = 2;
  stats.threads_map_full = 3;
  stats.io_map_full = 4;
  stats.sockets_map_full = 5;
  stats.network = OsTracerStats::NetworkSource::tracepoints;
  stats.block_io_start = true;
  return stats;
}

std::string render(const std::vector<MetricFamily> &families) {
  std::ostringstream out;
  render_text(families, out);
  return out.str();
}

using test::family;
using test::label;

// Checks rendered text against the text format's rules: every sample belongs to a family
// announced by HELP and TYPE before it, names are announced once, lines parse, and each histogram
// series has non-decreasing cumulative buckets ending in le="+Inf" equal to its _count.
// Returns the number of histogram series checked.
std::size_t expect_valid_exposition(const std::string &text) {
  static const std::regex sample_line(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? )"
      R"((-?[0-9.e+-]+|\+Inf|-Inf|NaN))");
  std::map<std::string, std::string> types; // family -> type
  std::set<std::string> helped;
  std::map<std::string, std::pair<double, double>> buckets; // series -> (last le, last count)
  std::map<std::string, double> inf_counts;
  std::istringstream in(text);
  std::string line;
  std::size_t histograms = 0;
  while (std::getline(in, line)) {
    EXPECT_FALSE(line.empty()) << "empty line";
    if (line.empty())
      continue;
    if (line.starts_with("# HELP ")) {
      const auto name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(helped.insert(name).second) << "HELP twice for " << name;
      continue;
    }
    if (line.starts_with("# TYPE ")) {
      const auto rest = line.substr(7);
      const auto name = rest.substr(0, rest.find(' '));
      EXPECT_TRUE(helped.contains(name)) << "TYPE before HELP for " << name;
      EXPECT_TRUE(types.emplace(name, rest.substr(rest.find(' ') + 1)).second)
          << "TYPE twice for " << name;
      continue;
    }
    std::smatch match;
    EXPECT_TRUE(std::regex_match(line, match, sample_line)) << "bad line: " << line;
    if (match.empty())
      continue;
    std::string name = match[1];
    std::string family_name = name;
    for (const char *suffix : {"_bucket", "_sum", "_count"})
      if (name.ends_with(suffix) && types.contains(name.substr(0, name.size() - strlen(suffix))))
        family_name = name.substr(0, name.size() - strlen(suffix));
    EXPECT_TRUE(types.contains(family_name)) << "sample before TYPE: " << line;
    const double value = std::stod(match[5].str() == "+Inf" ? "inf" : match[5].str());
    if (types[family_name] == "histogram" && name.ends_with("_bucket")) {
      const auto le_at = line.find("le=\"");
      EXPECT_NE(le_at, std::string::npos) << line;
      if (le_at == std::string::npos)
        continue;
      const auto le_text = line.substr(le_at + 4, line.find('"', le_at + 4) - le_at - 4);
      const double le = le_text == "+Inf" ? INFINITY : std::stod(le_text);
      const auto series = line.substr(0, le_at);
      auto [it, fresh] = buckets.emplace(series, std::pair{le, value});
      if (!fresh) {
        EXPECT_GT(le, it->second.first) << line;
        EXPECT_GE(value, it->second.second) << "not cumulative: " << line;
        it->second = {le, value};
      }
      if (le_text == "+Inf")
        inf_counts[series] = value;
    }
    if (types[family_name] == "histogram" && name.ends_with("_count")) {
      // _count{labels} pairs with the _bucket{labels,le=...} series prefix.
      const auto brace = line.find('{');
      const auto series = brace == std::string::npos
                              ? family_name + "_bucket{"
                              : family_name + "_bucket{" +
                                    line.substr(brace + 1, line.rfind('}') - brace - 1) + ",";
      EXPECT_TRUE(inf_counts.contains(series)) << "no +Inf bucket before " << line;
      EXPECT_EQ(inf_counts[series], value) << line;
      ++histograms;
    }
  }
  return histograms;
}

// Golden test. After an intentional change run with NEUTRACER_UPDATE_GOLDEN=1, review the diff
// and run `promtool check metrics < tests/fixtures/golden/os_metrics.prom` (it must print
// nothing).
TEST(OsMetrics, MatchesGoldenFile) {
  auto families = os_families(deterministic_views());
  families.push_back(os_network_source_family(tracer_stats()));
  test::expect_matches_golden(NEUTRACER_FIXTURES_DIR "/golden/os_metrics.prom", render(families));
}

// The daemon writes these series straight into text: the same text, byte for byte.
TEST(OsMetrics, TextWrittenStraightMatchesTheFamiliesRendered) {
  for (const bool histograms : {true, false}) {
    std::string straight;
    TextSink sink(straight);
    write_os_metrics(deterministic_views(), SeriesSettings{histograms}, sink);
    EXPECT_EQ(straight, render(os_families(deterministic_views(), SeriesSettings{histograms})));
    EXPECT_EQ(straight.find("neutracer_process_io_latency_seconds_bucket") != std::string::npos,
              histograms);
  }
}

TEST(OsMetrics, RenderedTextIsValidExposition) {
  auto families = os_families(deterministic_views());
  families.push_back(os_network_source_family(tracer_stats()));
  EXPECT_EQ(expect_valid_exposition(render(families)), 1u); // the process with block IO
}

TEST(OsMetrics, ValidatorRejectsBrokenText) {
  EXPECT_NONFATAL_FAILURE(expect_valid_exposition("# HELP h x\n# TYPE h histogram\n"
                                                  "h_bucket{le=\"1\"} 3\n"
                                                  "h_bucket{le=\"2\"} 2\n"
                                                  "h_bucket{le=\"+Inf\"} 3\nh_sum 1\nh_count 3\n"),
                          "not cumulative");
  EXPECT_NONFATAL_FAILURE(expect_valid_exposition("# HELP h x\n# TYPE h histogram\n"
                                                  "h_bucket{le=\"+Inf\"} 3\nh_sum 1\nh_count 4\n"),
                          "h_count 4");
  EXPECT_NONFATAL_FAILURE(expect_valid_exposition("m 1\n"), "sample before TYPE");
  EXPECT_NONFATAL_FAILURE(expect_valid_exposition("# HELP m x\n# TYPE m gauge\nm{a=b} 1\n"),
                          "bad line");
}

TEST(OsMetrics, PublicFamilyNamesAndTypes) {
  const auto families = os_families(deterministic_views());
  const std::map<std::string, MetricType> expected = {
      {"neutracer_process_cpu_seconds_total", MetricType::counter},
      {"neutracer_process_oncpu_seconds_total", MetricType::counter},
      {"neutracer_process_offcpu_seconds_total", MetricType::counter},
      {"neutracer_process_runqueue_wait_seconds_total", MetricType::counter},
      {"neutracer_process_cpu_migrations_total", MetricType::counter},
      {"neutracer_process_numa_migrations_total", MetricType::counter},
      {"neutracer_process_context_switches_total", MetricType::counter},
      {"neutracer_process_threads", MetricType::gauge},
      {"neutracer_process_resident_memory_bytes", MetricType::gauge},
      {"neutracer_process_virtual_memory_bytes", MetricType::gauge},
      {"neutracer_process_page_faults_total", MetricType::counter},
      {"neutracer_process_io_bytes_total", MetricType::counter},
      {"neutracer_process_io_operations_total", MetricType::counter},
      {"neutracer_process_io_latency_seconds", MetricType::histogram},
      {"neutracer_process_proc_io_bytes_total", MetricType::counter},
      {"neutracer_process_network_bytes_total", MetricType::counter},
      {"neutracer_process_network_packets_total", MetricType::counter},
      {"neutracer_process_tcp_connections", MetricType::gauge},
  };
  std::map<std::string, MetricType> got;
  for (const auto &f : families) {
    EXPECT_TRUE(got.emplace(f.name, f.type).second) << "duplicate family " << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
    EXPECT_EQ(f.type == MetricType::counter, f.name.ends_with("_total")) << f.name;
  }
  EXPECT_EQ(got, expected);
}

TEST(OsMetrics, EmptyInputStillHasHelpAndType) {
  const auto families = os_families({});
  EXPECT_EQ(families.size(), 18u);
  for (const auto &f : families) {
    EXPECT_TRUE(f.samples.empty()) << f.name;
    EXPECT_TRUE(f.histograms.empty()) << f.name;
  }
  const auto text = render(families);
  EXPECT_NE(text.find("# TYPE neutracer_process_io_latency_seconds histogram\n"),
            std::string::npos);
}

TEST(OsMetrics, LabelsAndValues) {
  const auto families = os_families(deterministic_views());
  const auto &cpu = family(families, "neutracer_process_cpu_seconds_total");
  ASSERT_EQ(cpu.samples.size(), 4u); // user+system for the two processes with /proc samples
  EXPECT_EQ(cpu.samples[0].labels, (Labels{{"pid", "1001"},
                                           {"comm", "python3"},
                                           {"container", "trainer"},
                                           {"container_id", kContainer},
                                           {"mode", "user"}}));
  EXPECT_EQ(cpu.samples[0].value, 12.5);
  EXPECT_EQ(label(cpu.samples[1].labels, "mode"), "system");
  EXPECT_EQ(cpu.samples[1].value, 0.75);
  EXPECT_EQ(label(cpu.samples[2].labels, "pid"), "77");

  const auto &oncpu = family(families, "neutracer_process_oncpu_seconds_total");
  ASSERT_EQ(oncpu.samples.size(), 2u); // 1001 and 5 have BPF counters
  EXPECT_EQ(oncpu.samples[0].value, 12.25);
  EXPECT_EQ(oncpu.samples[1].value, 1e-9);
  EXPECT_EQ(label(oncpu.samples[1].labels, "container"), "<absent>");
  EXPECT_EQ(label(oncpu.samples[1].labels, "container_id"), "<absent>");
  EXPECT_EQ(label(oncpu.samples[1].labels, "slurm_job"), "4242");

  EXPECT_EQ(family(families, "neutracer_process_offcpu_seconds_total").samples[0].value, 180.5);
  EXPECT_EQ(family(families, "neutracer_process_runqueue_wait_seconds_total").samples[0].value,
            0.125);
  EXPECT_EQ(family(families, "neutracer_process_cpu_migrations_total").samples[0].value, 321);
  EXPECT_EQ(family(families, "neutracer_process_numa_migrations_total").samples[0].value, 7);
  EXPECT_EQ(family(families, "neutracer_process_threads").samples[0].value, 24);
  EXPECT_EQ(family(families, "neutracer_process_resident_memory_bytes").samples[0].value,
            2147483648.0);
  EXPECT_EQ(family(families, "neutracer_process_virtual_memory_bytes").samples[0].value,
            34359738368.0);

  const auto &faults = family(families, "neutracer_process_page_faults_total");
  EXPECT_EQ(label(faults.samples[0].labels, "type"), "major");
  EXPECT_EQ(faults.samples[0].value, 12);
  EXPECT_EQ(label(faults.samples[1].labels, "type"), "minor");
  EXPECT_EQ(faults.samples[1].value, 100000);

  const auto &switches = family(families, "neutracer_process_context_switches_total");
  ASSERT_EQ(switches.samples.size(), 2u); // 77 has no status counts
  EXPECT_EQ(label(switches.samples[1].labels, "type"), "involuntary");
  EXPECT_EQ(switches.samples[1].value, 250);

  const auto &io = family(families, "neutracer_process_io_bytes_total");
  ASSERT_EQ(io.samples.size(), 4u);
  EXPECT_EQ(label(io.samples[0].labels, "direction"), "read");
  EXPECT_EQ(io.samples[0].value, 8388608);
  EXPECT_EQ(label(io.samples[1].labels, "direction"), "write");
  EXPECT_EQ(io.samples[1].value, 16777216);
  const auto &ops = family(families, "neutracer_process_io_operations_total");
  EXPECT_EQ(ops.samples[0].value, 16);
  EXPECT_EQ(ops.samples[1].value, 6);

  const auto &proc_io = family(families, "neutracer_process_proc_io_bytes_total");
  ASSERT_EQ(proc_io.samples.size(), 2u); // 77's io was unreadable
  EXPECT_EQ(proc_io.samples[0].value, 1048576);
  EXPECT_EQ(proc_io.samples[1].value, 4194304);

  const auto &net = family(families, "neutracer_process_network_bytes_total");
  EXPECT_EQ(label(net.samples[0].labels, "direction"), "sent");
  EXPECT_EQ(net.samples[0].value, 1048576);
  EXPECT_EQ(label(net.samples[1].labels, "direction"), "received");
  EXPECT_EQ(net.samples[1].value, 2097152);
  const auto &packets = family(families, "neutracer_process_network_packets_total");
  EXPECT_EQ(packets.samples[0].value, 38);
  EXPECT_EQ(packets.samples[1].value, 35);
  EXPECT_EQ(family(families, "neutracer_process_tcp_connections").samples[0].value, 2);
}

TEST(OsMetrics, LatencyHistogram) {
  const auto families = os_families(deterministic_views());
  const auto &latency = family(families, "neutracer_process_io_latency_seconds");
  // Only the process that did block IO: the other's 26 series would all read 0.
  ASSERT_EQ(latency.histograms.size(), 1u);
  const auto &h = latency.histograms[0];
  ASSERT_EQ(h.upper_bounds.size(), kOsIoLatencySlots - 1);
  EXPECT_EQ(h.upper_bounds.front(), 2e-6);
  EXPECT_EQ(h.upper_bounds[6], 128e-6);
  EXPECT_EQ(h.upper_bounds.back(), 8.388608);
  EXPECT_EQ(h.count, 22u); // the overflow slot counts only here (and in +Inf)
  EXPECT_EQ(h.sum, 9.5);

  const auto text = render(families);
  const std::string series = "neutracer_process_io_latency_seconds_bucket{pid=\"1001\",comm="
                             "\"python3\",container=\"trainer\","
                             "container_id=\"" +
                             std::string(kContainer) + "\",le=\"";
  const auto bucket = [&](const std::string &le) {
    const auto at = text.find(series + le + "\"} ");
    EXPECT_NE(at, std::string::npos) << le;
    if (at == std::string::npos)
      return -1.0;
    return std::stod(text.substr(at + series.size() + le.size() + 3));
  };
  EXPECT_EQ(bucket("6.4e-05"), 0);
  EXPECT_EQ(bucket("0.000128"), 3);
  EXPECT_EQ(bucket("0.001024"), 20);
  EXPECT_EQ(bucket("0.016384"), 21);
  EXPECT_EQ(bucket("8.388608"), 21);
  EXPECT_EQ(bucket("+Inf"), 22);
}

TEST(OsMetrics, LatencyHistogramOffKeepsTheIoCounters) {
  const auto families = os_families(deterministic_views(), SeriesSettings{false});
  EXPECT_TRUE(family(families, "neutracer_process_io_latency_seconds").histograms.empty());
  EXPECT_FALSE(family(families, "neutracer_process_io_operations_total").samples.empty());
}

TEST(OsMetrics, NegativeConnectionSumShowsZero) {
  auto views = deterministic_views();
  views[0].bpf->tcp_connections = -1;
  const auto families = os_families(views);
  EXPECT_EQ(family(families, "neutracer_process_tcp_connections").samples[0].value, 0);
}

TEST(OsMetrics, NetworkSource) {
  auto stats = tracer_stats();
  stats.network = OsTracerStats::NetworkSource::none;
  const auto source = os_network_source_family(stats);
  std::map<std::string, double> by_source;
  for (const auto &sample : source.samples)
    by_source[label(sample.labels, "source")] = sample.value;
  EXPECT_EQ(by_source,
            (std::map<std::string, double>{{"tracepoint", 0}, {"fallback", 0}, {"none", 1}}));
}

TEST(OsMetrics, LatencyBounds) {
  EXPECT_EQ(os_io_latency_upper_bound_seconds(0), 2e-6);
  EXPECT_EQ(os_io_latency_upper_bound_seconds(9), 1.024e-3);
  EXPECT_EQ(os_io_latency_upper_bound_seconds(22), 8.388608);
}

} // namespace
} // namespace neutracer
