// SPDX-License-Identifier: Apache-2.0
#include "exporters/self_metrics.h"

#include "common/proc_parsers.h"

#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace neutracer {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && is_space(s.front())) {
    s.remove_prefix(1);
  }
  return s;
}

// Splits off the next whitespace-delimited token, advancing `s` past it.
std::string_view next_token(std::string_view &s) {
  s = trim_left(s);
  std::size_t n = 0;
  while (n < s.size() && !is_space(s[n])) {
    ++n;
  }
  const std::string_view token = s.substr(0, n);
  s.remove_prefix(n);
  return token;
}

// Whole-token integer parse; /proc counters are integral and some (rsslim) exceed int64, hence
// separate signed/unsigned attempts.
std::optional<double> parse_integer(std::string_view token) {
  if (token.empty()) {
    return std::nullopt;
  }
  const char *end = token.data() + token.size();
  std::uint64_t unsigned_value = 0;
  if (auto [ptr, ec] = std::from_chars(token.data(), end, unsigned_value);
      ec == std::errc{} && ptr == end) {
    return static_cast<double>(unsigned_value);
  }
  std::int64_t signed_value = 0;
  if (auto [ptr, ec] = std::from_chars(token.data(), end, signed_value);
      ec == std::errc{} && ptr == end) {
    return static_cast<double>(signed_value);
  }
  return std::nullopt;
}

// Calls `fn(line)` for each line until it returns true.
template <typename Fn> void for_each_line(std::string_view text, Fn fn) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    if (fn(line)) {
      return;
    }
    if (nl == std::string_view::npos) {
      return;
    }
    text.remove_prefix(nl + 1);
  }
}

// /proc files report st_size 0, so read through the stream buffer rather than by size.
std::optional<std::string> read_file(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    return std::nullopt;
  }
  return std::move(buffer).str();
}

std::optional<double> count_dir_entries(const std::filesystem::path &dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    return std::nullopt;
  }
  // Counts the iterator's own descriptor too, matching client_golang's behaviour.
  double count = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) {
      return std::nullopt;
    }
    ++count;
  }
  if (ec) {
    return std::nullopt;
  }
  return count;
}

MetricFamily gauge_family(std::string name, std::string help, double value,
                          MetricType type = MetricType::gauge) {
  MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  family.samples.push_back(Sample{{}, value});
  return family;
}

} // namespace

std::optional<SelfProcessStats> parse_self_stat(std::string_view stat_text, long ticks_per_second,
                                                long page_size, double boot_time_seconds) {
  if (ticks_per_second <= 0 || page_size <= 0)
    return std::nullopt;
  const auto stat = parse_proc_stat(stat_text);
  if (!stat || !stat->vsize_bytes || !stat->rss_pages)
    return std::nullopt;
  const double ticks = static_cast<double>(ticks_per_second);
  SelfProcessStats stats;
  stats.cpu_seconds = static_cast<double>(stat->utime_ticks + stat->stime_ticks) / ticks;
  stats.threads = static_cast<double>(stat->num_threads);
  stats.start_time_seconds = boot_time_seconds + static_cast<double>(stat->start_ticks) / ticks;
  stats.virtual_bytes = static_cast<double>(*stat->vsize_bytes);
  stats.resident_bytes = static_cast<double>(*stat->rss_pages) * static_cast<double>(page_size);
  return stats;
}

std::optional<double> parse_boot_time(std::string_view proc_stat_text) {
  std::optional<double> result;
  for_each_line(proc_stat_text, [&](std::string_view line) {
    std::string_view rest = line;
    if (next_token(rest) != "btime") {
      return false;
    }
    result = parse_integer(next_token(rest));
    return true;
  });
  return result;
}

std::optional<double> parse_max_open_files(std::string_view limits_text) {
  constexpr std::string_view kPrefix = "Max open files";
  std::optional<double> result;
  for_each_line(limits_text, [&](std::string_view line) {
    if (line.substr(0, kPrefix.size()) != kPrefix) {
      return false;
    }
    std::string_view rest = line.substr(kPrefix.size());
    // "unlimited" fails the integer parse and yields nullopt, which omits the metric.
    result = parse_integer(next_token(rest));
    return true;
  });
  return result;
}

std::vector<MetricFamily> self_process_families(const std::string &proc_root) {
  const std::filesystem::path root(proc_root);
  std::vector<MetricFamily> families;

  std::optional<double> boot_time;
  if (const auto text = read_file(root / "stat")) {
    boot_time = parse_boot_time(*text);
  }
  std::optional<SelfProcessStats> stats;
  if (const auto text = read_file(root / "self" / "stat")) {
    stats =
        parse_self_stat(*text, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE), boot_time.value_or(0));
  }
  const std::optional<double> open_fds = count_dir_entries(root / "self" / "fd");
  std::optional<double> max_fds;
  if (const auto text = read_file(root / "self" / "limits")) {
    max_fds = parse_max_open_files(*text);
  }

  if (stats) {
    families.push_back(gauge_family("process_cpu_seconds_total",
                                    "Total user and system CPU time spent in seconds.",
                                    stats->cpu_seconds, MetricType::counter));
    families.push_back(gauge_family("process_resident_memory_bytes",
                                    "Resident memory size in bytes.", stats->resident_bytes));
    families.push_back(gauge_family("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                                    stats->virtual_bytes));
  }
  if (open_fds) {
    families.push_back(
        gauge_family("process_open_fds", "Number of open file descriptors.", *open_fds));
  }
  if (max_fds) {
    families.push_back(
        gauge_family("process_max_fds", "Maximum number of open file descriptors.", *max_fds));
  }
  // Without btime the start time would be relative to boot, not the epoch: omit it.
  if (stats && boot_time) {
    families.push_back(gauge_family("process_start_time_seconds",
                                    "Start time of the process since unix epoch in seconds.",
                                    stats->start_time_seconds));
  }
  if (stats) {
    families.push_back(
        gauge_family("process_threads", "Number of OS threads in the process.", stats->threads));
  }
  return families;
}

} // namespace neutracer
