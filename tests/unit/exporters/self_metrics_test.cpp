// SPDX-License-Identifier: Apache-2.0
#include "exporters/self_metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

namespace neutracer {
namespace {

// A real /proc/self/stat line with the comm replaced by one containing spaces and ") ", which
// breaks any parser that splits on the first ')'.
constexpr const char *kStat =
    "4625 (evil) (comm) x) R 4623 4623 3319 0 -1 4194304 96 0 0 0 250 150 0 0 20 0 7 0 40399 "
    "3133440 343 18446744073709551615 94852901609472 94852901629353 140733125825328 0 0 0 0 0 0 0 "
    "0 0 17 0 0 0 0 0 0 94852901645360 94852901646976 94853255163904 140733125827210 "
    "140733125827230 140733125827230 140733125828587 0\n";

constexpr const char *kLimits =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max open files            1024                 524288               files     \n"
    "Max locked memory         8388608              8388608              bytes     \n";

const MetricFamily *find_family(const std::vector<MetricFamily> &families,
                                const std::string &name) {
  for (const auto &family : families) {
    if (family.name == name) {
      return &family;
    }
  }
  return nullptr;
}

TEST(ParseSelfStat, ParsesFieldsAfterLastParen) {
  const auto stats = parse_self_stat(kStat, 100, 4096, 1700000000);
  ASSERT_TRUE(stats.has_value());
  EXPECT_DOUBLE_EQ(stats->cpu_seconds, 4.0); // (250 + 150) ticks / 100
  EXPECT_DOUBLE_EQ(stats->threads, 7);
  EXPECT_DOUBLE_EQ(stats->start_time_seconds, 1700000000 + 403.99);
  EXPECT_DOUBLE_EQ(stats->virtual_bytes, 3133440);
  EXPECT_DOUBLE_EQ(stats->resident_bytes, 343.0 * 4096);
  EXPECT_EQ(stats->open_fds, 0);
  EXPECT_EQ(stats->max_fds, 0);
}

TEST(ParseSelfStat, RejectsMalformedInput) {
  EXPECT_FALSE(parse_self_stat("", 100, 4096, 0));
  EXPECT_FALSE(parse_self_stat("123 no parens R 1 2 3", 100, 4096, 0));
  EXPECT_FALSE(parse_self_stat("123 (x) R 1 2 3 4 5", 100, 4096, 0)); // Truncated.
  const std::string bad_utime =
      std::string(kStat).replace(std::string(kStat).find(" 250 "), 5, " abc ");
  EXPECT_FALSE(parse_self_stat(bad_utime, 100, 4096, 0));
  EXPECT_FALSE(parse_self_stat(kStat, 0, 4096, 0));
  EXPECT_FALSE(parse_self_stat(kStat, 100, -1, 0));
}

TEST(ParseBootTime, FindsBtimeLine) {
  EXPECT_EQ(parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1795362379\nprocesses 9\n"), 1795362379);
  EXPECT_EQ(parse_boot_time("btime 42"), 42); // No trailing newline.
  EXPECT_FALSE(parse_boot_time("cpu 1 2 3\nbtimex 5\n"));
  EXPECT_FALSE(parse_boot_time(""));
}

TEST(ParseMaxOpenFiles, ReturnsSoftLimit) {
  EXPECT_EQ(parse_max_open_files(kLimits), 1024);
  EXPECT_FALSE(parse_max_open_files(
      "Max open files            unlimited            unlimited            files\n"));
  EXPECT_FALSE(parse_max_open_files("Max cpu time unlimited unlimited seconds\n"));
  EXPECT_FALSE(parse_max_open_files(""));
}

TEST(SelfProcessFamilies, ReadsRealProc) {
  const auto families = self_process_families("/proc");
  const auto *rss = find_family(families, "process_resident_memory_bytes");
  ASSERT_NE(rss, nullptr);
  ASSERT_EQ(rss->samples.size(), 1u);
  EXPECT_GT(rss->samples[0].value, 0);

  const auto *fds = find_family(families, "process_open_fds");
  ASSERT_NE(fds, nullptr);
  ASSERT_EQ(fds->samples.size(), 1u);
  EXPECT_GE(fds->samples[0].value, 3);

  const auto *cpu = find_family(families, "process_cpu_seconds_total");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->type, MetricType::counter);
  for (const char *name : {"process_virtual_memory_bytes", "process_max_fds",
                           "process_start_time_seconds", "process_threads"}) {
    const auto *family = find_family(families, name);
    ASSERT_NE(family, nullptr) << name;
    EXPECT_EQ(family->type, MetricType::gauge) << name;
  }
  const auto *start = find_family(families, "process_start_time_seconds");
  EXPECT_GT(start->samples[0].value, 1e9); // An epoch timestamp, not seconds since boot.
}

TEST(SelfProcessFamilies, MissingFilesOmitFamiliesWithoutThrowing) {
  EXPECT_TRUE(self_process_families("/nonexistent/neutracer-proc").empty());

  // A fake proc root with only self/stat: stat-derived families except start time (no btime).
  const auto root = std::filesystem::temp_directory_path() /
                    ("neutracer_self_metrics_" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "self");
  std::ofstream(root / "self" / "stat") << kStat;
  const auto families = self_process_families(root.string());
  std::filesystem::remove_all(root);

  EXPECT_NE(find_family(families, "process_cpu_seconds_total"), nullptr);
  EXPECT_NE(find_family(families, "process_threads"), nullptr);
  EXPECT_EQ(find_family(families, "process_start_time_seconds"), nullptr);
  EXPECT_EQ(find_family(families, "process_open_fds"), nullptr);
  EXPECT_EQ(find_family(families, "process_max_fds"), nullptr);
}

} // namespace
} // namespace neutracer
