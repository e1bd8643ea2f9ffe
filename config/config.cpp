// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <arpa/inet.h>

#include "common/text.h"
#include "config/yaml_document.h"

#include <yaml-cpp/yaml.h>

#include "http/basic_auth.h"
#include "http/civetweb_listen.h"

#include <array>
#include <cstdint>
#include <exception>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace neutracer {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kMinScanInterval{100};
constexpr milliseconds kMaxScanInterval{3600 * 1000};
constexpr milliseconds kMinThroughputWindow{1000};
constexpr milliseconds kMaxThroughputWindow{3600 * 1000};
constexpr std::uint32_t kMinMaxKernels = 1;
constexpr std::uint32_t kMaxMaxKernels = 10000;
constexpr std::uint32_t kMinLaunchMapEntries = 1024;
constexpr std::uint32_t kMaxLaunchMapEntries = 4194304;
constexpr std::uint32_t kMinRingBufferBytes = 4096;
constexpr std::uint32_t kMaxRingBufferBytes = 1073741824;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

constexpr std::array<std::string_view, 7> kLogLevels = {"trace", "debug",    "info", "warn",
                                                        "error", "critical", "off"};

// A dotted quad with decimal octets. Leading zeros are refused because some parsers
// (inet_aton) read them as octal, so "010.0.0.1" would not mean what it appears to.
bool is_ipv4_literal(std::string_view host) {
  int parts = 0;
  while (true) {
    std::size_t dot = host.find('.');
    std::string_view part = host.substr(0, dot);
    if (!all_digits(part) || part.size() > 3 || (part.size() > 1 && part[0] == '0'))
      return false;
    int value = 0;
    for (char c : part)
      value = value * 10 + (c - '0');
    if (value > 255)
      return false;
    ++parts;
    if (dot == std::string_view::npos)
      break;
    host.remove_prefix(dot + 1);
  }
  return parts == 4;
}

std::optional<std::string> check_range(std::uint64_t value, std::uint64_t min, std::uint64_t max) {
  if (value < min || value > max)
    return "must be between " + std::to_string(min) + " and " + std::to_string(max);
  return std::nullopt;
}

std::optional<std::string> check_max_kernels(std::uint64_t value) {
  return check_range(value, kMinMaxKernels, kMaxMaxKernels);
}

std::optional<std::string> check_launch_map_entries(std::uint64_t value) {
  return check_range(value, kMinLaunchMapEntries, kMaxLaunchMapEntries);
}

std::optional<std::string> check_ring_buffer_bytes(std::uint64_t value) {
  // The BPF ring buffer map requires a power-of-two multiple of the page size.
  if (value < kMinRingBufferBytes || value > kMaxRingBufferBytes || (value & (value - 1)) != 0)
    return "must be a power of two between " + std::to_string(kMinRingBufferBytes) + " and " +
           std::to_string(kMaxRingBufferBytes);
  return std::nullopt;
}

std::optional<std::string> check_duration_range(milliseconds value, milliseconds min,
                                                milliseconds max) {
  if (value < min || value > max)
    return "must be between " + format_duration(min) + " and " + format_duration(max);
  return std::nullopt;
}

std::optional<std::string> check_throughput_window(milliseconds value) {
  return check_duration_range(value, kMinThroughputWindow, kMaxThroughputWindow);
}

std::optional<std::string> check_launch_counting(const std::string &value) {
  if (value == "exact" || value == "adaptive" || value == "off")
    return std::nullopt;
  return "must be exact, adaptive or off";
}

std::optional<std::string> check_launch_max_rate(std::uint64_t value) {
  return check_range(value, 1, 10'000'000);
}

std::optional<std::string> check_launch_sample_period(milliseconds value) {
  return check_duration_range(value, milliseconds(100), milliseconds(60'000));
}

std::optional<std::string> check_launch_sample_fraction(double value) {
  if (value == 0 || (value >= 0.001 && value <= 0.9))
    return std::nullopt;
  return "must be 0 (from launch_max_rate) or between 0.001 and 0.9";
}

// The kernel's default kernel.perf_event_max_stack (NT_STACK_MAX_DEPTH): a stack map cannot
// hold more frames.
constexpr std::uint64_t kMaxStackDepth = 127;

std::optional<std::string> check_stack_depth(std::uint64_t value) {
  return check_range(value, 1, kMaxStackDepth);
}
std::optional<std::string> check_launch_sample_every(std::uint64_t value) {
  if (value == 0)
    return std::nullopt;
  if (auto problem = check_range(value, 1, 1u << 30))
    return *problem + " (or 0 for no launch sites)";
  return std::nullopt;
}
std::optional<std::string> check_sites_per_process(std::uint64_t value) {
  return check_range(value, 1, 65536);
}
std::optional<std::string> check_max_sites(std::uint64_t value) {
  return check_range(value, 1, 1u << 20);
}
std::optional<std::string> check_stack_map_entries(std::uint64_t value) {
  return check_range(value, 64, 1u << 20);
}

// Fields checked only by range; each table row reads, checks and names one value.
constexpr milliseconds kMinDetectorDuration{1000};
constexpr milliseconds kMaxDetectorDuration{24 * 3600 * 1000};

std::optional<std::string> check_detector_duration(milliseconds value) {
  return check_duration_range(value, kMinDetectorDuration, kMaxDetectorDuration);
}
std::optional<std::string> check_leak_windows(std::uint64_t value) {
  return check_range(value, 2, 1000);
}
std::optional<std::string> check_fast_leak_windows(std::uint64_t value) {
  if (value == 0)
    return std::nullopt; // off
  return check_range(value, 2, 1000);
}
std::optional<std::string> check_min_growth(std::uint64_t value) {
  return check_range(value, 1ull << 20, 1ull << 50);
}
std::optional<std::string> check_probability(double value) {
  if (!(value > 0.5 && value < 1.0))
    return "must be above 0.5 and below 1";
  return std::nullopt;
}
std::optional<std::string> check_storm_retries(std::uint64_t value) {
  return check_range(value, 1, 1000000);
}
std::optional<std::string> check_alert_cooldown(milliseconds value) {
  return check_duration_range(value, milliseconds(1), kMaxDetectorDuration);
}
std::optional<std::string> check_alerts_per_minute(std::uint64_t value) {
  return check_range(value, 1, 100000);
}

std::optional<std::string> check_kubernetes_log_dir(const std::string &log_dir) {
  if (!log_dir.empty() && log_dir[0] != '/')
    return "must be an absolute path (starting with '/'), or empty to disable";
  return std::nullopt;
}

// Each request may hold a civetweb worker thread.
std::optional<std::string> check_max_concurrent_requests(std::uint64_t value) {
  return check_range(value, 1, 64);
}

// One civetweb worker thread each, about 20 KiB of memory: 4096 is about 80 MiB.
std::optional<std::string> check_max_connections(std::uint64_t value) {
  return check_range(value, 16, 4096);
}

// Workers beyond the admitted requests answer refusals (503, 429, 401, 400) meanwhile.
constexpr std::uint32_t kSpareConnections = 8;

std::string invalid_value(std::string_view key, std::string_view value, std::string_view problem) {
  return std::string(key) + ": invalid value '" + std::string(value) + "': " + std::string(problem);
}

// ---- YAML reading -------------------------------------------------------------------------

// "FILE:LINE: " with the 1-based line, or "FILE: " when yaml-cpp has no position.
std::string location(const std::string &source, const YAML::Mark &mark) {
  if (mark.is_null() || mark.line < 0)
    return source + ": ";
  return source + ":" + std::to_string(mark.line + 1) + ": ";
}

std::string describe_type(const YAML::Node &node) {
  switch (node.Type()) {
  case YAML::NodeType::Null:
    return "no value";
  case YAML::NodeType::Sequence:
    return "a list";
  case YAML::NodeType::Map:
    return "a mapping";
  case YAML::NodeType::Scalar:
    return "'" + node.Scalar() + "'";
  default:
    return "an undefined node";
  }
}

// Each reader returns a problem description (the caller adds file, line and key) or nullopt.
using FieldReader = std::optional<std::string> (*)(const YAML::Node &value, Config &config);

std::optional<std::string> read_string(const YAML::Node &node, std::string &out) {
  if (!node.IsScalar())
    return "expected a string, got " + describe_type(node);
  out = node.Scalar();
  return std::nullopt;
}

std::optional<std::string> read_duration(const YAML::Node &node, milliseconds &out) {
  if (!node.IsScalar())
    return "expected a duration such as 500ms, 2s, 1m or 1h, got " + describe_type(node);
  std::optional<milliseconds> parsed = parse_duration(node.Scalar());
  if (!parsed)
    return "invalid duration '" + node.Scalar() +
           "': expected a positive number with unit ms, s, m or h (e.g. 500ms, 2s, 1.5m)";
  out = *parsed;
  return std::nullopt;
}

// Reads a plain decimal integer. Quoted scalars are refused: the file is typed, and silently
// accepting "50" would hide a quoting mistake elsewhere.
std::optional<std::string> read_uint(const YAML::Node &node, std::uint64_t &out) {
  if (!node.IsScalar())
    return "expected a non-negative integer, got " + describe_type(node);
  const std::string &text = node.Scalar();
  if (node.Tag() == "!")
    return "expected a non-negative integer, got the quoted string '" + text + "'";
  if (!text.empty() && text[0] == '-' && all_digits(std::string_view(text).substr(1)))
    return "must not be negative, got " + text;
  if (!all_digits(text))
    return "expected a non-negative decimal integer, got '" + text + "'";
  std::uint64_t value = 0;
  for (char c : text) {
    if (value > (std::numeric_limits<std::uint64_t>::max() - 9) / 10)
      return "value " + text + " is too large";
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  out = value;
  return std::nullopt;
}

// Reads an unsigned field and applies its range check before narrowing to 32 bits.
std::optional<std::string> read_u32_field(const YAML::Node &node, std::uint32_t &out,
                                          std::optional<std::string> (*check)(std::uint64_t)) {
  std::uint64_t value = 0;
  if (auto problem = read_uint(node, value))
    return problem;
  if (auto problem = check(value))
    return "invalid value " + node.Scalar() + ": " + *problem;
  out = static_cast<std::uint32_t>(value);
  return std::nullopt;
}

std::optional<std::string>
read_checked_string(const YAML::Node &node, std::string &out,
                    std::optional<std::string> (*check)(const std::string &)) {
  std::string value;
  if (auto problem = read_string(node, value))
    return problem;
  if (auto problem = check(value))
    return "invalid value '" + value + "': " + *problem;
  out = value;
  return std::nullopt;
}

std::optional<std::string>
read_checked_duration(const YAML::Node &node, milliseconds &out,
                      std::optional<std::string> (*check)(milliseconds)) {
  milliseconds value{};
  if (auto problem = read_duration(node, value))
    return problem;
  if (auto problem = check(value))
    return "invalid value '" + node.Scalar() + "': " + *problem;
  out = value;
  return std::nullopt;
}

std::optional<std::string> read_u64_field(const YAML::Node &node, std::uint64_t &out,
                                          std::optional<std::string> (*check)(std::uint64_t)) {
  std::uint64_t value = 0;
  if (auto problem = read_uint(node, value))
    return problem;
  if (auto problem = check(value))
    return "invalid value " + node.Scalar() + ": " + *problem;
  out = value;
  return std::nullopt;
}

std::optional<std::string> read_double_field(const YAML::Node &node, double &out,
                                             std::optional<std::string> (*check)(double)) {
  if (!node.IsScalar() || node.Tag() == "!")
    return "expected a number, got " + describe_type(node);
  const std::string &text = node.Scalar();
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    return "expected a number, got '" + text + "'";
  if (auto problem = check(value))
    return "invalid value " + text + ": " + *problem;
  out = value;
  return std::nullopt;
}

std::optional<std::string> read_bool(const YAML::Node &node, bool &out) {
  if (node.IsScalar() && node.Tag() != "!") {
    if (node.Scalar() == "true") {
      out = true;
      return std::nullopt;
    }
    if (node.Scalar() == "false") {
      out = false;
      return std::nullopt;
    }
  }
  return "expected true or false, got " + describe_type(node);
}

// A list of {match: PATTERN, counting: exact|adaptive|off}.
std::optional<std::string>
read_launch_rules(const YAML::Node &node, std::vector<std::pair<std::string, std::string>> &out) {
  if (!node.IsSequence())
    return "expected a list of {match: PATTERN, counting: MODE}, got " + describe_type(node);
  std::vector<std::pair<std::string, std::string>> rules;
  for (const auto &entry : node) {
    const auto index = "rule " + std::to_string(rules.size() + 1) + ": ";
    if (!entry.IsMap() || entry.size() != 2 || !entry["match"] || !entry["counting"])
      return index + "expected exactly the keys match and counting";
    std::string pattern, mode;
    if (auto problem = read_string(entry["match"], pattern))
      return index + "match: " + *problem;
    if (pattern.empty())
      return index + "match must not be empty";
    if (auto problem = read_string(entry["counting"], mode))
      return index + "counting: " + *problem;
    if (auto problem = check_launch_counting(mode))
      return index + "counting '" + mode + "' " + *problem;
    rules.emplace_back(pattern, mode);
  }
  out = std::move(rules);
  return std::nullopt;
}

struct Field {
  const char *name;
  FieldReader read;                  // for scalar keys
  const std::vector<Field> *section; // for nested mappings (read is then nullptr)
};

const std::vector<Field> kCudaFields = {
    {"max_kernels_per_process",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.cuda.max_kernels_per_process, check_max_kernels);
     },
     nullptr},
    {"launch_map_entries",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.cuda.launch_map_entries, check_launch_map_entries);
     },
     nullptr},
    {"ring_buffer_bytes",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.cuda.ring_buffer_bytes, check_ring_buffer_bytes);
     },
     nullptr},
    {"throughput_window",
     [](const YAML::Node &v, Config &c) {
       return read_checked_duration(v, c.cuda.throughput_window, check_throughput_window);
     },
     nullptr},
    {"launch_counting",
     [](const YAML::Node &v, Config &c) {
       return read_checked_string(v, c.cuda.launch_counting, check_launch_counting);
     },
     nullptr},
    {"launch_max_rate",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.cuda.launch_max_rate, check_launch_max_rate);
     },
     nullptr},
    {"launch_sample_period",
     [](const YAML::Node &v, Config &c) {
       return read_checked_duration(v, c.cuda.launch_sample_period, check_launch_sample_period);
     },
     nullptr},
    {"launch_sample_fraction",
     [](const YAML::Node &v, Config &c) {
       return read_double_field(v, c.cuda.launch_sample_fraction, check_launch_sample_fraction);
     },
     nullptr},
    {"launch_rules",
     [](const YAML::Node &v, Config &c) { return read_launch_rules(v, c.cuda.launch_rules); },
     nullptr},
};

const std::vector<Field> kLeakFields = {
    {"window",
     [](const YAML::Node &v, Config &c) {
       return read_checked_duration(v, c.detectors.leak_window, check_detector_duration);
     },
     nullptr},
    {"windows",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.detectors.leak_windows, check_leak_windows);
     },
     nullptr},
    {"min_growth_bytes",
     [](const YAML::Node &v, Config &c) {
       return read_u64_field(v, c.detectors.leak_min_growth_bytes, check_min_growth);
     },
     nullptr},
    {"fast_window",
     [](const YAML::Node &v, Config &c) {
       return read_checked_duration(v, c.detectors.leak_fast_window, check_detector_duration);
     },
     nullptr},
    {"fast_windows",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.detectors.leak_fast_windows, check_fast_leak_windows);
     },
     nullptr},
    {"fast_min_growth_bytes",
     [](const YAML::Node &v, Config &c) {
       return read_u64_field(v, c.detectors.leak_fast_min_growth_bytes, check_min_growth);
     },
     nullptr},
    {"sample_step_bytes",
     [](const YAML::Node &v, Config &c) {
       return read_u64_field(v, c.detectors.leak_sample_step_bytes, check_min_growth);
     },
     nullptr},
    {"probability",
     [](const YAML::Node &v, Config &c) {
       return read_double_field(v, c.detectors.leak_probability, check_probability);
     },
     nullptr},
};

const std::vector<Field> kHangFields = {
    {"call_threshold",
     [](const YAML::Node &v, Config &c) {
       return read_checked_duration(v, c.detectors.hang_call_threshold, check_detector_duration);
     },
     nullptr},
    {"stalled_launches",
     [](const YAML::Node &v, Config &c) {
       return read_checked_duration(v, c.detectors.hang_stalled_launches, check_detector_duration);
     },
     nullptr},
};

const std::vector<Field> kFragmentationFields = {
    {"retry_storm_retries",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.detectors.retry_storm_retries, check_storm_retries);
     },
     nullptr},
    {"retry_storm_window",
     [](const YAML::Node &v, Config &c) {
       return read_checked_duration(v, c.detectors.retry_storm_window, check_detector_duration);
     },
     nullptr},
};

const std::vector<Field> kDetectorFields = {
    {"leak", nullptr, &kLeakFields},
    {"hang", nullptr, &kHangFields},
    {"fragmentation", nullptr, &kFragmentationFields},
};

const std::vector<Field> kAlertFields = {
    {"cooldown",
     [](const YAML::Node &v, Config &c) {
       return read_checked_duration(v, c.alerts.cooldown, check_alert_cooldown);
     },
     nullptr},
    {"max_per_minute",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.alerts.max_per_minute, check_alerts_per_minute);
     },
     nullptr},
    {"journal", [](const YAML::Node &v, Config &c) { return read_bool(v, c.alerts.journal); },
     nullptr},
};

const std::vector<Field> kMetricsFields = {
    {"process_histograms",
     [](const YAML::Node &v, Config &c) { return read_bool(v, c.metrics.process_histograms); },
     nullptr},
};

const std::vector<Field> kKubernetesFields = {
    {"log_dir",
     [](const YAML::Node &v, Config &c) {
       return read_checked_string(v, c.kubernetes.log_dir, check_kubernetes_log_dir);
     },
     nullptr},
};

std::optional<std::string> read_basic_auth_users(const YAML::Node &node,
                                                 std::map<std::string, std::string> &out) {
  if (!node.IsMap())
    return "expected a mapping of user names to bcrypt hashes, got " + describe_type(node);
  std::map<std::string, std::string> users;
  for (const auto &entry : node) {
    if (!entry.first.IsScalar())
      return "user names must be strings, got " + describe_type(entry.first);
    const std::string &user = entry.first.Scalar();
    if (auto problem = basic_auth_user_problem(user))
      return "user '" + user + "': " + *problem;
    // Not describe_type(): a scalar here may be a plaintext password pasted by mistake.
    if (!entry.second.IsScalar())
      return "user '" + user + "': expected a bcrypt hash string";
    if (auto problem = bcrypt_hash_problem(entry.second.Scalar()))
      return "user '" + user + "': the password hash " + *problem;
    if (!users.emplace(user, entry.second.Scalar()).second)
      return "duplicate user '" + user + "'";
  }
  out = std::move(users);
  return std::nullopt;
}

// Debian 12's civetweb crashes after a TLS handshake (README "Securing the endpoint"), so TLS
// settings are refused by name rather than reported as unknown keys.
std::optional<std::string> refuse_tls(const YAML::Node &, Config &) {
  return "TLS is not supported: Debian 12's civetweb crashes after a TLS handshake. Keep "
         "neutracerd on a loopback address and terminate TLS in a reverse proxy; see the "
         "README section \"Securing the endpoint\" and deploy/nginx/neutracerd.conf";
}

const std::vector<Field> kWebFields = {
    {"basic_auth_users",
     [](const YAML::Node &v, Config &c) {
       return read_basic_auth_users(v, c.web.basic_auth_users);
     },
     nullptr},
    {"max_concurrent_requests",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.web.max_concurrent_requests, check_max_concurrent_requests);
     },
     nullptr},
    {"max_connections",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.web.max_connections, check_max_connections);
     },
     nullptr},
    {"tls_cert_file", refuse_tls, nullptr},
    {"tls_key_file", refuse_tls, nullptr},
    {"tls_server_config", refuse_tls, nullptr}, // exporter-toolkit's name for the same
};

std::optional<std::string> check_nvml_library(const std::string &library) {
  if (library.empty())
    return "must not be empty (set nvml.enabled: false to turn NVML off)";
  return std::nullopt;
}

const std::vector<Field> kNvmlFields = {
    {"enabled", [](const YAML::Node &v, Config &c) { return read_bool(v, c.nvml.enabled); },
     nullptr},
    {"library",
     [](const YAML::Node &v, Config &c) {
       return read_checked_string(v, c.nvml.library, check_nvml_library);
     },
     nullptr},
};

std::optional<std::string> check_kmsg_path(const std::string &path) {
  if (path.empty() || path[0] != '/')
    return "must be an absolute path (starting with '/'); set gpu_health.read_kernel_log: "
           "false to stop reading the kernel log";
  return std::nullopt;
}

std::optional<std::string> check_xid_journal_per_minute(std::uint64_t per_minute) {
  if (per_minute < 1 || per_minute > 10000)
    return "must be between 1 and 10000";
  return std::nullopt;
}

const std::vector<Field> kGpuHealthFields = {
    {"read_kernel_log",
     [](const YAML::Node &v, Config &c) { return read_bool(v, c.gpu_health.read_kernel_log); },
     nullptr},
    {"kmsg_path",
     [](const YAML::Node &v, Config &c) {
       return read_checked_string(v, c.gpu_health.kmsg_path, check_kmsg_path);
     },
     nullptr},
    {"xid_journal_per_minute",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.gpu_health.xid_journal_per_minute, check_xid_journal_per_minute);
     },
     nullptr},
};

const std::vector<Field> kStacksFields = {
    {"enabled", [](const YAML::Node &v, Config &c) { return read_bool(v, c.stacks.enabled); },
     nullptr},
    {"max_depth",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.stacks.max_depth, check_stack_depth);
     },
     nullptr},
    {"launch_sample_every",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.stacks.launch_sample_every, check_launch_sample_every);
     },
     nullptr},
    {"max_sites_per_process",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.stacks.max_sites_per_process, check_sites_per_process);
     },
     nullptr},
    {"max_sites",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.stacks.max_sites, check_max_sites);
     },
     nullptr},
    {"map_entries",
     [](const YAML::Node &v, Config &c) {
       return read_u32_field(v, c.stacks.map_entries, check_stack_map_entries);
     },
     nullptr},
};

const std::vector<Field> kTopFields = {
    {"listen",
     [](const YAML::Node &v, Config &c) {
       return read_checked_string(v, c.listen, check_listen_address);
     },
     nullptr},
    {"scan_interval",
     [](const YAML::Node &v, Config &c) {
       return read_checked_duration(v, c.scan_interval, check_scan_interval);
     },
     nullptr},
    {"log_level",
     [](const YAML::Node &v, Config &c) {
       return read_checked_string(v, c.log_level, check_log_level);
     },
     nullptr},
    {"log_format",
     [](const YAML::Node &v, Config &c) {
       return read_checked_string(v, c.log_format, check_log_format);
     },
     nullptr},
    {"proc_root",
     [](const YAML::Node &v, Config &c) {
       return read_checked_string(v, c.proc_root, check_proc_root);
     },
     nullptr},
    {"cuda", nullptr, &kCudaFields},
    {"detectors", nullptr, &kDetectorFields},
    {"alerts", nullptr, &kAlertFields},
    {"web", nullptr, &kWebFields},
    {"metrics", nullptr, &kMetricsFields},
    {"kubernetes", nullptr, &kKubernetesFields},
    {"nvml", nullptr, &kNvmlFields},
    {"gpu_health", nullptr, &kGpuHealthFields},
    {"stacks", nullptr, &kStacksFields},
};

std::string known_keys(const std::vector<Field> &fields, const std::string &prefix) {
  std::string out;
  for (const Field &field : fields) {
    if (!out.empty())
      out += ", ";
    out += prefix + field.name;
  }
  return out;
}

// Applies one mapping's keys to `config`; returns the first problem as a full message.
std::optional<std::string> apply_mapping(const YAML::Node &map, const std::vector<Field> &fields,
                                         const std::string &prefix, const std::string &source,
                                         Config &config) {
  std::set<std::string> seen;
  for (const auto &entry : map) {
    const YAML::Node &key = entry.first;
    const YAML::Node &value = entry.second;
    // Value marks of empty values point past the key, so errors cite the key's line.
    const std::string where = location(source, key.Mark());
    if (!key.IsScalar())
      return where + "keys must be plain strings, got " + describe_type(key) +
             (prefix.empty() ? "" : " in '" + prefix.substr(0, prefix.size() - 1) + "'");
    const std::string path = prefix + key.Scalar();
    // yaml-cpp keeps duplicate keys; refusing them avoids a silent "last one wins".
    if (!seen.insert(key.Scalar()).second)
      return where + "duplicate key '" + path + "'";

    const Field *field = nullptr;
    for (const Field &candidate : fields)
      if (key.Scalar() == candidate.name)
        field = &candidate;
    if (field == nullptr)
      return where + "unknown key '" + path + "' (known keys: " + known_keys(fields, prefix) + ")";

    if (field->section != nullptr) {
      // An empty section ("cuda:" with every key commented out) means its defaults.
      if (value.IsNull())
        continue;
      if (!value.IsMap())
        return where + path + ": expected a mapping of keys to values, got " + describe_type(value);
      if (auto problem = apply_mapping(value, *field->section, path + ".", source, config))
        return problem;
      continue;
    }
    if (value.IsNull())
      return where + path + ": missing value";
    if (auto problem = field->read(value, config))
      return where + path + ": " + *problem;
  }
  return std::nullopt;
}

ConfigResult fail(std::string message) { return ConfigResult{std::nullopt, ConfigError{message}}; }

} // namespace

std::optional<milliseconds> parse_duration(const std::string &text) {
  std::size_t i = 0;
  std::uint64_t whole = 0;
  std::size_t whole_digits = 0;
  for (; i < text.size() && is_digit(text[i]); ++i, ++whole_digits) {
    if (whole > (std::numeric_limits<std::uint64_t>::max() - 9) / 10)
      return std::nullopt;
    whole = whole * 10 + static_cast<std::uint64_t>(text[i] - '0');
  }
  if (whole_digits == 0)
    return std::nullopt;

  // Up to 9 fractional digits keeps fraction * unit well inside 64 bits.
  std::uint64_t fraction = 0;
  std::uint64_t fraction_scale = 1;
  if (i < text.size() && text[i] == '.') {
    ++i;
    std::size_t fraction_digits = 0;
    for (; i < text.size() && is_digit(text[i]); ++i, ++fraction_digits) {
      if (fraction_digits == 9)
        return std::nullopt;
      fraction = fraction * 10 + static_cast<std::uint64_t>(text[i] - '0');
      fraction_scale *= 10;
    }
    if (fraction_digits == 0)
      return std::nullopt;
  }

  const std::string_view unit = std::string_view(text).substr(i);
  std::uint64_t unit_ms = 0;
  if (unit == "ms")
    unit_ms = 1;
  else if (unit == "s")
    unit_ms = 1000;
  else if (unit == "m")
    unit_ms = 60 * 1000;
  else if (unit == "h")
    unit_ms = 3600 * 1000;
  else
    return std::nullopt;

  std::uint64_t total = 0;
  if (__builtin_mul_overflow(whole, unit_ms, &total))
    return std::nullopt;
  // Sub-millisecond remainders ("1.5ms") cannot be represented; refuse rather than round.
  const std::uint64_t fraction_ms = fraction * unit_ms;
  if (fraction_ms % fraction_scale != 0)
    return std::nullopt;
  if (__builtin_add_overflow(total, fraction_ms / fraction_scale, &total))
    return std::nullopt;
  if (total == 0 ||
      total > static_cast<std::uint64_t>(std::numeric_limits<milliseconds::rep>::max()))
    return std::nullopt;
  return milliseconds(static_cast<milliseconds::rep>(total));
}

std::string format_duration(milliseconds duration) {
  const auto count = duration.count();
  if (count > 0) {
    if (count % (3600 * 1000) == 0)
      return std::to_string(count / (3600 * 1000)) + "h";
    if (count % (60 * 1000) == 0)
      return std::to_string(count / (60 * 1000)) + "m";
    if (count % 1000 == 0)
      return std::to_string(count / 1000) + "s";
  }
  return std::to_string(count) + "ms";
}

std::optional<std::string> check_listen_address(const std::string &listen) {
  static constexpr const char *kExample =
      "expected HOST:PORT, :PORT or [IPv6]:PORT, e.g. 127.0.0.1:10492";
  if (listen.empty())
    return std::string("empty address; ") + kExample;
  std::string host;
  std::string port;
  if (listen[0] == '[') {
    const std::size_t close = listen.find(']');
    if (close == std::string::npos)
      return std::string("'[' without ']'; ") + kExample;
    host = listen.substr(1, close - 1);
    if (close + 1 >= listen.size() || listen[close + 1] != ':')
      return std::string("missing port after ']'; ") + kExample;
    port = listen.substr(close + 2);
    in6_addr address{};
    if (host.empty() || inet_pton(AF_INET6, host.c_str(), &address) != 1)
      return "'" + host + "' is not an IPv6 address";
  } else {
    if (listen.find(':') != listen.rfind(':'))
      return "an IPv6 address needs brackets: [" + listen.substr(0, listen.rfind(':')) + "]" +
             listen.substr(listen.rfind(':'));
    const std::size_t colon = listen.rfind(':');
    if (colon == std::string::npos)
      return std::string("missing port; ") + kExample;
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
    // An empty host (":9100", as Prometheus exporters write it) listens on every interface.
    if (!host.empty() && host != "localhost" && !is_ipv4_literal(host))
      return "host '" + host + "' must be an IPv4 address such as 127.0.0.1, 'localhost' or an " +
             "IPv6 address in brackets";
  }
  if (port.empty())
    return std::string("missing port; ") + kExample;
  if (!all_digits(port) || port.size() > 5)
    return "port '" + port + "' must be a number between 1 and 65535";
  const int port_number = std::stoi(port);
  if (port_number < 1 || port_number > 65535)
    return "port " + port + " is out of range; must be between 1 and 65535";
  // Valid, but can this server listen there? (--check-config must say so, not the start.)
  const auto listening_port = civetweb_listening_port(listen, civetweb_has_ipv6());
  if (const auto *refusal = std::get_if<ListenRefusal>(&listening_port))
    return refusal->reason;
  return std::nullopt;
}

std::optional<std::string> check_scan_interval(milliseconds interval) {
  return check_duration_range(interval, kMinScanInterval, kMaxScanInterval);
}

std::optional<std::string> check_log_level(const std::string &level) {
  for (std::string_view known : kLogLevels)
    if (level == known)
      return std::nullopt;
  std::string list;
  for (std::string_view known : kLogLevels) {
    if (!list.empty())
      list += ", ";
    list += known;
  }
  return "must be one of " + list;
}

std::optional<std::string> check_log_format(const std::string &format) {
  if (format == "logfmt" || format == "json")
    return std::nullopt;
  return "must be logfmt or json";
}

std::optional<std::string> check_proc_root(const std::string &proc_root) {
  if (proc_root.empty())
    return "must not be empty";
  if (proc_root[0] != '/')
    return "must be an absolute path (starting with '/')";
  return std::nullopt;
}

ConfigResult parse_config_yaml(const std::string &text, const std::string &source_name) {
  try {
    const std::optional<YAML::Node> document = load_single_yaml_document(text);
    Config config;
    // No document at all: an empty or comment-only file means "all defaults".
    if (!document)
      return ConfigResult{config, std::nullopt};
    const YAML::Node &root = *document;
    if (root.IsNull())
      return ConfigResult{config, std::nullopt};
    if (!root.IsMap())
      return fail(location(source_name, root.Mark()) +
                  "top level must be a mapping of keys to values, got " + describe_type(root));
    if (auto problem = apply_mapping(root, kTopFields, "", source_name, config))
      return fail(*problem);
    return ConfigResult{config, std::nullopt};
  } catch (const YAML::ParserException &e) {
    return fail(location(source_name, e.mark) + "invalid YAML: " + e.msg);
  } catch (const YAML::Exception &e) {
    return fail(location(source_name, e.mark) + e.msg);
  } catch (const std::exception &e) {
    return fail(source_name + ": " + e.what());
  }
}

std::optional<ConfigError> validate_config(const Config &config) {
  try {
    if (auto problem = check_listen_address(config.listen))
      return ConfigError{invalid_value("listen", config.listen, *problem)};
    if (auto problem = check_scan_interval(config.scan_interval))
      return ConfigError{
          invalid_value("scan_interval", format_duration(config.scan_interval), *problem)};
    if (auto problem = check_log_level(config.log_level))
      return ConfigError{invalid_value("log_level", config.log_level, *problem)};
    if (auto problem = check_log_format(config.log_format))
      return ConfigError{invalid_value("log_format", config.log_format, *problem)};
    if (auto problem = check_proc_root(config.proc_root))
      return ConfigError{invalid_value("proc_root", config.proc_root, *problem)};
    const Config::Cuda &cuda = config.cuda;
    if (auto problem = check_max_kernels(cuda.max_kernels_per_process))
      return ConfigError{invalid_value("cuda.max_kernels_per_process",
                                       std::to_string(cuda.max_kernels_per_process), *problem)};
    if (auto problem = check_launch_map_entries(cuda.launch_map_entries))
      return ConfigError{invalid_value("cuda.launch_map_entries",
                                       std::to_string(cuda.launch_map_entries), *problem)};
    if (auto problem = check_ring_buffer_bytes(cuda.ring_buffer_bytes))
      return ConfigError{invalid_value("cuda.ring_buffer_bytes",
                                       std::to_string(cuda.ring_buffer_bytes), *problem)};
    if (auto problem = check_throughput_window(cuda.throughput_window))
      return ConfigError{invalid_value("cuda.throughput_window",
                                       format_duration(cuda.throughput_window), *problem)};
    if (auto problem = check_launch_counting(cuda.launch_counting))
      return ConfigError{invalid_value("cuda.launch_counting", cuda.launch_counting, *problem)};
    if (auto problem = check_launch_max_rate(cuda.launch_max_rate))
      return ConfigError{
          invalid_value("cuda.launch_max_rate", std::to_string(cuda.launch_max_rate), *problem)};
    if (auto problem = check_launch_sample_period(cuda.launch_sample_period))
      return ConfigError{invalid_value("cuda.launch_sample_period",
                                       format_duration(cuda.launch_sample_period), *problem)};
    if (auto problem = check_launch_sample_fraction(cuda.launch_sample_fraction))
      return ConfigError{invalid_value("cuda.launch_sample_fraction",
                                       std::to_string(cuda.launch_sample_fraction), *problem)};
    const Config::Detectors &d = config.detectors;
    for (const auto &[key, value] :
         {std::pair{"detectors.leak.window", d.leak_window},
          std::pair{"detectors.leak.fast_window", d.leak_fast_window},
          std::pair{"detectors.hang.call_threshold", d.hang_call_threshold},
          std::pair{"detectors.hang.stalled_launches", d.hang_stalled_launches},
          std::pair{"detectors.fragmentation.retry_storm_window", d.retry_storm_window}})
      if (auto problem = check_detector_duration(value))
        return ConfigError{invalid_value(key, format_duration(value), *problem)};
    if (auto problem = check_leak_windows(d.leak_windows))
      return ConfigError{
          invalid_value("detectors.leak.windows", std::to_string(d.leak_windows), *problem)};
    if (auto problem = check_fast_leak_windows(d.leak_fast_windows))
      return ConfigError{invalid_value("detectors.leak.fast_windows",
                                       std::to_string(d.leak_fast_windows), *problem)};
    if (auto problem = check_min_growth(d.leak_fast_min_growth_bytes))
      return ConfigError{invalid_value("detectors.leak.fast_min_growth_bytes",
                                       std::to_string(d.leak_fast_min_growth_bytes), *problem)};
    if (auto problem = check_min_growth(d.leak_min_growth_bytes))
      return ConfigError{invalid_value("detectors.leak.min_growth_bytes",
                                       std::to_string(d.leak_min_growth_bytes), *problem)};
    if (auto problem = check_min_growth(d.leak_sample_step_bytes))
      return ConfigError{invalid_value("detectors.leak.sample_step_bytes",
                                       std::to_string(d.leak_sample_step_bytes), *problem)};
    if (auto problem = check_probability(d.leak_probability))
      return ConfigError{invalid_value("detectors.leak.probability",
                                       std::to_string(d.leak_probability), *problem)};
    if (auto problem = check_storm_retries(d.retry_storm_retries))
      return ConfigError{invalid_value("detectors.fragmentation.retry_storm_retries",
                                       std::to_string(d.retry_storm_retries), *problem)};
    if (auto problem = check_alert_cooldown(config.alerts.cooldown))
      return ConfigError{
          invalid_value("alerts.cooldown", format_duration(config.alerts.cooldown), *problem)};
    if (auto problem = check_alerts_per_minute(config.alerts.max_per_minute))
      return ConfigError{invalid_value("alerts.max_per_minute",
                                       std::to_string(config.alerts.max_per_minute), *problem)};
    if (auto problem = check_max_concurrent_requests(config.web.max_concurrent_requests))
      return ConfigError{invalid_value("web.max_concurrent_requests",
                                       std::to_string(config.web.max_concurrent_requests),
                                       *problem)};
    if (auto problem = check_max_connections(config.web.max_connections))
      return ConfigError{invalid_value("web.max_connections",
                                       std::to_string(config.web.max_connections), *problem)};
    if (config.web.max_connections < config.web.max_concurrent_requests + kSpareConnections)
      return ConfigError{invalid_value(
          "web.max_connections", std::to_string(config.web.max_connections),
          "must be at least web.max_concurrent_requests + " + std::to_string(kSpareConnections) +
              " (" + std::to_string(config.web.max_concurrent_requests + kSpareConnections) +
              "): the spare connections answer refusals while the admitted requests run")};
    for (const auto &[user, hash] : config.web.basic_auth_users) {
      if (auto problem = basic_auth_user_problem(user))
        return ConfigError{"web.basic_auth_users: user '" + user + "': " + *problem};
      if (auto problem = bcrypt_hash_problem(hash))
        return ConfigError{"web.basic_auth_users: user '" + user + "': the password hash " +
                           *problem};
    }
    if (auto problem = check_kubernetes_log_dir(config.kubernetes.log_dir))
      return ConfigError{invalid_value("kubernetes.log_dir", config.kubernetes.log_dir, *problem)};
    if (auto problem = check_nvml_library(config.nvml.library))
      return ConfigError{invalid_value("nvml.library", config.nvml.library, *problem)};
    if (auto problem = check_kmsg_path(config.gpu_health.kmsg_path))
      return ConfigError{
          invalid_value("gpu_health.kmsg_path", config.gpu_health.kmsg_path, *problem)};
    if (auto problem = check_xid_journal_per_minute(config.gpu_health.xid_journal_per_minute))
      return ConfigError{invalid_value("gpu_health.xid_journal_per_minute",
                                       std::to_string(config.gpu_health.xid_journal_per_minute),
                                       *problem)};
    const Config::Stacks &stacks = config.stacks;
    struct Checked {
      const char *key;
      std::uint32_t value;
      std::optional<std::string> (*check)(std::uint64_t);
    };
    for (const Checked &field :
         {Checked{"stacks.max_depth", stacks.max_depth, check_stack_depth},
          Checked{"stacks.launch_sample_every", stacks.launch_sample_every,
                  check_launch_sample_every},
          Checked{"stacks.max_sites_per_process", stacks.max_sites_per_process,
                  check_sites_per_process},
          Checked{"stacks.max_sites", stacks.max_sites, check_max_sites},
          Checked{"stacks.map_entries", stacks.map_entries, check_stack_map_entries}})
      if (auto problem = field.check(field.value))
        return ConfigError{invalid_value(field.key, std::to_string(field.value), *problem)};
    if (stacks.max_sites < stacks.max_sites_per_process)
      return ConfigError{invalid_value("stacks.max_sites", std::to_string(stacks.max_sites),
                                       "must be at least stacks.max_sites_per_process (" +
                                           std::to_string(stacks.max_sites_per_process) + ")")};
    return std::nullopt;
  } catch (const std::exception &e) {
    return ConfigError{std::string("configuration check failed: ") + e.what()};
  }
}

} // namespace neutracer
