// SPDX-License-Identifier: Apache-2.0
#include "config/config_keys.h"

#include "common/launch_counting.h"
#include "common/text.h"
#include "config/value_checks.h"
#include "config/yaml_values.h"
#include "http/basic_auth.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdio>
#include <limits>
#include <type_traits>
#include <utility>

namespace neutracer {
namespace {

using std::chrono::milliseconds;

constexpr auto any_value = [](const auto &) -> Problem { return std::nullopt; };

// How a value of one type is read, parsed from a flag and written. `quoted`: whether messages
// quote the value as given (numbers are shown bare).
template <typename T> struct Value;

template <> struct Value<std::string> {
  static constexpr bool quoted = true;
  static Problem read(const YAML::Node &node, std::string &out) { return read_string(node, out); }
  static Problem parse(const std::string &text, std::string &out) {
    out = text;
    return std::nullopt;
  }
  static std::string show(const std::string &value) { return value; }
  static std::string yaml(const std::string &value) { return yaml_scalar(value); }
};

template <> struct Value<milliseconds> {
  static constexpr bool quoted = true;
  static Problem read(const YAML::Node &node, milliseconds &out) {
    return read_duration(node, out);
  }
  static Problem parse(const std::string &text, milliseconds &out) {
    const auto parsed = parse_duration(text);
    if (!parsed)
      return "invalid duration '" + text +
             "': expected a positive number with unit ms, s, m or h (e.g. 500ms, 2s, 1.5m)";
    out = *parsed;
    return std::nullopt;
  }
  static std::string show(milliseconds value) { return format_duration(value); }
  static std::string yaml(milliseconds value) { return format_duration(value); }
};

template <> struct Value<std::uint64_t> {
  static constexpr bool quoted = false;
  static Problem read(const YAML::Node &node, std::uint64_t &out) { return read_uint(node, out); }
  static Problem parse(const std::string &text, std::uint64_t &out) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (text.empty() || !all_digits(text) || error != std::errc() ||
        end != text.data() + text.size())
      return "expected a non-negative decimal integer, got '" + text + "'";
    return std::nullopt;
  }
  static std::string show(std::uint64_t value) { return std::to_string(value); }
  static std::string yaml(std::uint64_t value) { return std::to_string(value); }
};

template <> struct Value<double> {
  static constexpr bool quoted = false;
  static Problem read(const YAML::Node &node, double &out) { return read_double(node, out); }
  static Problem parse(const std::string &text, double &out) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (text.empty() || error != std::errc() || end != text.data() + text.size())
      return "expected a number, got '" + text + "'";
    return std::nullopt;
  }
  static std::string show(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
  }
  static std::string yaml(double value) { return show(value); }
};

template <> struct Value<bool> {
  static constexpr bool quoted = false;
  static Problem read(const YAML::Node &node, bool &out) { return read_bool(node, out); }
  static Problem parse(const std::string &text, bool &out) {
    if (text != "true" && text != "false")
      return "expected true or false, got '" + text + "'";
    out = text == "true";
    return std::nullopt;
  }
  static std::string show(bool value) { return value ? "true" : "false"; }
  static std::string yaml(bool value) { return show(value); }
};

std::string launch_counting_names() {
  std::string names;
  for (std::size_t i = 0; i < kLaunchCountingModes.size(); ++i) {
    if (i > 0)
      names += i + 1 == kLaunchCountingModes.size() ? " or " : ", ";
    names += launch_counting_name(kLaunchCountingModes[i]);
  }
  return names;
}

template <> struct Value<LaunchCounting> {
  static constexpr bool quoted = true;
  static Problem read(const YAML::Node &node, LaunchCounting &out) {
    std::string text;
    if (auto problem = read_string(node, text))
      return problem;
    return parse(text, out);
  }
  static Problem parse(const std::string &text, LaunchCounting &out) {
    const auto mode = parse_launch_counting(text);
    if (!mode)
      return "invalid value '" + text + "': must be " + launch_counting_names();
    out = *mode;
    return std::nullopt;
  }
  static std::string show(LaunchCounting value) { return std::string(launch_counting_name(value)); }
  static std::string yaml(LaunchCounting value) { return show(value); }
};

// A row for a key holding one value. `access` is a generic lambda returning the field of a
// Config (const or not); `check` takes the value (a 32-bit field's as 64 bits, so that a value
// too large for it is refused by its range, not cut to fit).
template <typename Access, typename Check>
ConfigKey key(std::string_view name, Access access, Check check, std::string_view help,
              std::optional<KeyFlag> flag = std::nullopt) {
  using T = std::remove_cvref_t<decltype(access(std::declval<Config &>()))>;
  using Wide = std::conditional_t<std::is_same_v<T, std::uint32_t>, std::uint64_t, T>;
  using V = Value<Wide>;
  ConfigKey row;
  row.name = name;
  row.help = help;
  row.flag = flag;
  row.read_yaml = [access, check](const YAML::Node &node, Config &config) -> Problem {
    Wide value = access(config);
    if (auto problem = V::read(node, value))
      return problem;
    if (auto problem = check(value)) {
      const std::string &text = node.Scalar();
      return "invalid value " + (V::quoted ? "'" + text + "'" : text) + ": " + *problem;
    }
    access(config) = static_cast<T>(value);
    return std::nullopt;
  };
  row.read_text = [access](const std::string &text, Config &config) -> Problem {
    Wide value{};
    if (auto problem = V::parse(text, value))
      return problem;
    if constexpr (!std::is_same_v<T, Wide>)
      if (value > std::numeric_limits<T>::max())
        return "value " + text + " is too large";
    access(config) = static_cast<T>(value);
    return std::nullopt;
  };
  row.check = [access, check](const Config &config) -> Problem {
    return check(static_cast<Wide>(access(config)));
  };
  row.show = [access](const Config &config) { return V::show(access(config)); };
  row.yaml = [access](const Config &config) { return V::yaml(access(config)); };
  return row;
}

// A row for a key holding a list or a mapping, which no flag sets: `read` parses the YAML into
// the field `access` returns, `check` finds what is wrong with the field's value however it was
// set, and `yaml` writes the value, which is also how messages show it.
template <typename Access, typename Read, typename Check, typename Yaml>
ConfigKey collection_key(std::string_view name, Access access, Read read, Check check, Yaml yaml,
                         std::string_view help) {
  ConfigKey row;
  row.name = name;
  row.help = help;
  row.scalar = false;
  row.read_yaml = [access, read](const YAML::Node &node, Config &config) -> Problem {
    return read(node, access(config));
  };
  row.check = [access, check](const Config &config) -> Problem { return check(access(config)); };
  row.yaml = [access, yaml](const Config &config) { return yaml(access(config)); };
  row.show = row.yaml;
  return row;
}

// cuda.launch_rules: a list of {match: PATTERN, counting: MODE}.
Problem read_launch_rules(const YAML::Node &node,
                          std::vector<std::pair<std::string, LaunchCounting>> &out) {
  if (!node.IsSequence())
    return "expected a list of {match: PATTERN, counting: MODE}, got " + describe_type(node);
  std::vector<std::pair<std::string, LaunchCounting>> rules;
  for (const auto &entry : node) {
    const auto index = "rule " + std::to_string(rules.size() + 1) + ": ";
    if (!entry.IsMap() || entry.size() != 2 || !entry["match"] || !entry["counting"])
      return index + "expected exactly the keys match and counting";
    std::string pattern, mode_name;
    if (auto problem = read_string(entry["match"], pattern))
      return index + "match: " + *problem;
    if (pattern.empty())
      return index + "match must not be empty";
    if (auto problem = read_string(entry["counting"], mode_name))
      return index + "counting: " + *problem;
    const auto mode = parse_launch_counting(mode_name);
    if (!mode)
      return index + "counting '" + mode_name + "' must be " + launch_counting_names();
    rules.emplace_back(pattern, *mode);
  }
  out = std::move(rules);
  return std::nullopt;
}

Problem check_launch_rules(const std::vector<std::pair<std::string, LaunchCounting>> &rules) {
  for (const auto &rule : rules)
    if (rule.first.empty())
      return "a rule's match must not be empty";
  return std::nullopt;
}

std::string launch_rules_yaml(const std::vector<std::pair<std::string, LaunchCounting>> &rules) {
  std::string list;
  for (const auto &[pattern, mode] : rules)
    list += std::string(list.empty() ? "" : ", ") + "{match: " + yaml_scalar(pattern) +
            ", counting: " + std::string(launch_counting_name(mode)) + "}";
  return "[" + list + "]";
}

// web.basic_auth_users: user name -> bcrypt hash.
Problem read_basic_auth_users(const YAML::Node &node, std::map<std::string, std::string> &out) {
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

Problem check_basic_auth_users(const std::map<std::string, std::string> &users) {
  for (const auto &[user, hash] : users) {
    if (auto problem = basic_auth_user_problem(user))
      return "user '" + user + "': " + *problem;
    if (auto problem = bcrypt_hash_problem(hash))
      return "user '" + user + "': the password hash " + *problem;
  }
  return std::nullopt;
}

// Never the hashes: the value is shown in docs and messages.
std::string basic_auth_users_yaml(const std::map<std::string, std::string> &users) {
  std::string text;
  for (const auto &[user, hash] : users)
    text += std::string(text.empty() ? "" : ", ") + yaml_scalar(user) + ": \"...\"";
  return "{" + text + "}";
}

std::vector<ConfigKey> make_keys() {
  std::vector<ConfigKey> keys;
  const auto add = [&keys](ConfigKey row) { keys.push_back(std::move(row)); };

  add(key(
      "listen", [](auto &c) -> auto & { return c.listen; }, check_listen_address,
      "Address of the HTTP server that serves /metrics, as HOST:PORT. HOST is an IPv4 address or "
      "\"localhost\"; \":PORT\" (or 0.0.0.0:PORT) listens on all IPv4 interfaces. "
      "\"[IPv6]:PORT\" needs a civetweb built with IPv6, which Debian 12's is not. PORT "
      "1..65535.",
      KeyFlag{"--listen", "--web.listen-address", "HOST:PORT",
              "address for /metrics: IPv4, localhost, :PORT for every interface, [IPv6]:PORT "
              "where civetweb has IPv6"}));
  add(key(
      "scan_interval", [](auto &c) -> auto & { return c.scan_interval; }, check_scan_interval,
      "How often to scan for new and exited GPU processes. Range 100ms..1h.",
      KeyFlag{"--scan-interval", "", "DURATION", "how often to scan for processes, 100ms..1h"}));
  add(key(
      "log_level", [](auto &c) -> auto & { return c.log_level; }, check_log_level,
      "Log verbosity: trace, debug, info, warn, error, critical or off.",
      KeyFlag{"--log-level", "--log.level", "LEVEL",
              "trace, debug, info, warn, error, critical, off"}));
  add(key(
      "log_format", [](auto &c) -> auto & { return c.log_format; }, check_log_format,
      "Log lines on stderr: logfmt or json. Under systemd the journal gets each record natively, "
      "with its level as PRIORITY, whatever this says.",
      KeyFlag{"--log-format", "--log.format", "FORMAT",
              "logfmt or json lines on stderr; under systemd the journal gets each record with "
              "its priority"}));
  add(key(
      "proc_root", [](auto &c) -> auto & { return c.proc_root; }, check_proc_root,
      "Where procfs is mounted. Only tests and containers that mount the host's /proc elsewhere "
      "(e.g. /host/proc) need to change this. Must be an absolute path to a readable process "
      "tree; anything else is a configuration error.",
      KeyFlag{"--proc-root", "", "PATH", "procfs mount to read, for tests and containers"}));

  add(key(
      "cuda.max_kernels_per_process",
      [](auto &c) -> auto & { return c.cuda.max_kernels_per_process; }, check_max_kernels,
      "Distinct kernel names reported per process; further kernels are summed into "
      "kernel=\"[other]\" to bound the number of series. Range 1..10000. The names kept per "
      "process (for labels and /api/v1/kernels) are bounded apart: 1024, or this if higher."));
  add(key(
      "cuda.launch_map_entries", [](auto &c) -> auto & { return c.cuda.launch_map_entries; },
      check_launch_map_entries,
      "Capacity of the in-kernel launch counter map, in (process, kernel function) pairs; size "
      "it above the number of distinct kernels all traced processes launch. Range "
      "1024..4194304."));
  add(key(
      "cuda.ring_buffer_bytes", [](auto &c) -> auto & { return c.cuda.ring_buffer_bytes; },
      check_ring_buffer_bytes,
      "Size in bytes of the ring buffer carrying rare events (allocations, copies, "
      "synchronizations, kernel names) to the daemon; the default is 4 MiB. A power of two in "
      "4096..1073741824."));
  add(key(
      "cuda.throughput_window", [](auto &c) -> auto & { return c.cuda.throughput_window; },
      check_throughput_window,
      "Time constant of the smoothed host<->device transfer throughput gauge. Range 1s..1h."));
  add(key(
      "cuda.launch_counting", [](auto &c) -> auto & { return c.cuda.launch_counting; }, any_value,
      "How kernel launches are counted. Each counted launch costs the launching thread one "
      "kernel trap (about 1 us on an H100 host); allocations, copies, syncs and errors are "
      "always counted exactly.\n"
      "  exact:    every launch of every process (probes attached system-wide), the default.\n"
      "  adaptive: per process: exact while it launches at most launch_max_rate kernels per\n"
      "            second; above that its launch probes are attached for a window of each\n"
      "            launch_sample_period and the totals are scaled estimates, exported as\n"
      "            neutracer_cuda_kernel_launches_estimated_total with their error bound in\n"
      "            neutracer_cuda_launch_estimate_relative_error.\n"
      "  off:      no launch counts."));
  add(key(
      "cuda.launch_max_rate", [](auto &c) -> auto & { return c.cuda.launch_max_rate; },
      check_launch_max_rate,
      "adaptive: launches per second and process counted at most. Range 1..10000000."));
  add(key(
      "cuda.launch_sample_period", [](auto &c) -> auto & { return c.cuda.launch_sample_period; },
      check_launch_sample_period,
      "adaptive: one counting window per process per period. Range 100ms..1m."));
  add(key(
      "cuda.launch_sample_fraction",
      [](auto &c) -> auto & { return c.cuda.launch_sample_fraction; }, check_launch_sample_fraction,
      "adaptive: count every sampled process for this share of each period, whatever its rate "
      "(0: from launch_max_rate). Range 0.001..0.9; the paired cost benchmark uses 0.5."));
  add(collection_key(
      "cuda.launch_rules", [](auto &c) -> auto & { return c.cuda.launch_rules; }, read_launch_rules,
      check_launch_rules, launch_rules_yaml,
      "Per-process modes, whatever launch_counting says for the rest. `match` is an fnmatch(3) "
      "pattern tried against the comm, the executable path and the container id; the first rule "
      "that matches wins, the rest get launch_counting. A rule that samples or switches off some "
      "process moves every process's launch probes to per-process links, attached when the "
      "process is first seen (its first probed call or a scan): launches before that are not "
      "counted. Example: estimates for a fleet of small inference workers, none for a "
      "benchmark:\n"
      "  launch_rules:\n"
      "    - {match: \"/opt/serving/worker-*\", counting: adaptive}\n"
      "    - {match: \"latency-bench\", counting: off}"));

  add(key(
      "detectors.leak.window", [](auto &c) -> auto & { return c.detectors.leak_window; },
      check_detector_duration,
      "GPU memory is sampled as the minimum in use per window; a leak needs that minimum to rise "
      "through `windows` consecutive windows. Range 1s..24h."));
  add(key(
      "detectors.leak.windows", [](auto &c) -> auto & { return c.detectors.leak_windows; },
      check_leak_windows, "Consecutive windows the minimum must rise through. Range 2..1000."));
  add(key(
      "detectors.leak.min_growth_bytes",
      [](auto &c) -> auto & { return c.detectors.leak_min_growth_bytes; }, check_min_growth,
      "...by at least this many bytes in total (default 256 MiB). Range 1 MiB..1 PiB."));
  add(key(
      "detectors.leak.fast_window", [](auto &c) -> auto & { return c.detectors.leak_fast_window; },
      check_detector_duration,
      "The fast trend pages a fast leak in about 10 s: the same over `fast_windows` windows of "
      "`fast_window`, by at least `fast_min_growth_bytes` (128 MiB: 16 MiB/s), with steady rises "
      "(none over 3 times a later one) and mostly repeated allocation sizes. Range 1s..24h."));
  add(key(
      "detectors.leak.fast_windows",
      [](auto &c) -> auto & { return c.detectors.leak_fast_windows; }, check_fast_leak_windows,
      "Windows of the fast trend; 0 turns it off, else 2..1000."));
  add(key(
      "detectors.leak.fast_min_growth_bytes",
      [](auto &c) -> auto & { return c.detectors.leak_fast_min_growth_bytes; }, check_min_growth,
      "Growth the fast trend needs over its windows. Range 1 MiB..1 PiB."));
  add(key(
      "detectors.leak.sample_step_bytes",
      [](auto &c) -> auto & { return c.detectors.leak_sample_step_bytes; }, check_min_growth,
      "A high-water-mark sample is taken each time use passes the last mark by this many bytes "
      "(default 16 MiB): the oldest block still live since the last sample. Range 1 MiB..1 PiB."));
  add(key(
      "detectors.leak.probability", [](auto &c) -> auto & { return c.detectors.leak_probability; },
      check_probability,
      "...and Laplace's rule of succession over high-water-mark samples ((unfreed+1) / "
      "(sampled+2)) must reach this probability. Above 0.5 and below 1."));
  add(key(
      "detectors.hang.call_threshold",
      [](auto &c) -> auto & { return c.detectors.hang_call_threshold; }, check_detector_duration,
      "A CUDA call (synchronize, blocking copy, ...) still running after this long is a hang. "
      "Range 1s..24h."));
  add(key(
      "detectors.hang.stalled_launches",
      [](auto &c) -> auto & { return c.detectors.hang_stalled_launches; }, check_detector_duration,
      "Or: launches stopped this long while the process holds GPU memory and spins on a CPU. "
      "Range 1s..24h."));
  add(key(
      "detectors.fragmentation.retry_storm_retries",
      [](auto &c) -> auto & { return c.detectors.retry_storm_retries; }, check_storm_retries,
      "This many allocator retries (a failed allocation, frees, then success) within "
      "retry_storm_window raise the fragmentation alert. Range 1..1000000."));
  add(key(
      "detectors.fragmentation.retry_storm_window",
      [](auto &c) -> auto & { return c.detectors.retry_storm_window; }, check_detector_duration,
      "The window of retry_storm_retries. Range 1s..24h."));

  add(key(
      "alerts.cooldown", [](auto &c) -> auto & { return c.alerts.cooldown; }, check_alert_cooldown,
      "An alert for the same process and kind is not sent again within this time, even if its "
      "condition clears and returns. Range 1ms..24h."));
  add(key(
      "alerts.max_per_minute", [](auto &c) -> auto & { return c.alerts.max_per_minute; },
      check_alerts_per_minute,
      "At most this many alert notifications per minute over all processes; the rest are counted "
      "in neutracer_alerts_suppressed_total. Range 1..100000."));
  add(key(
      "alerts.journal", [](auto &c) -> auto & { return c.alerts.journal; }, any_value,
      "Write alerts to the systemd journal (MESSAGE_IDs in the shipped journal catalog)."));

  add(key(
      "metrics.process_histograms", [](auto &c) -> auto & { return c.metrics.process_histograms; },
      any_value,
      "Per-process histograms: CUDA sync wait durations (17 series per synchronising API) and "
      "block IO latency (26 series once the process did block IO). false keeps their sums and "
      "counts in neutracer_cuda_sync_wait_seconds_total and neutracer_process_io_* only."));

  add(key(
      "kubernetes.log_dir", [](auto &c) -> auto & { return c.kubernetes.log_dir; },
      check_kubernetes_log_dir,
      "Directory where the kubelet writes containers/<pod>_<namespace>_<container>-<id>.log and "
      "pods/<namespace>_<pod>_<uid>/; their names give the namespace, pod and container_name of "
      "traced processes in Kubernetes containers (listed only while a container is not yet "
      "known; a missing directory is normal off Kubernetes). An absolute path; \"\" disables the "
      "lookup."));

  add(key(
      "web.max_concurrent_requests",
      [](auto &c) -> auto & { return c.web.max_concurrent_requests; },
      check_max_concurrent_requests,
      "Requests handled at once; more are answered 503 at once rather than queued, and counted "
      "in neutracer_http_requests_rejected_total{reason=\"concurrency\"}. Range 1..64."));
  add(key(
      "web.max_connections", [](auto &c) -> auto & { return c.web.max_connections; },
      check_max_connections,
      "Connections served at once, one worker thread each (about 17 KiB, 37 KiB once used): this "
      "many clients may "
      "idle or send their request slowly (each is cut off after 10 s) while scrapes and /healthz "
      "still answer at once; more wait in the listen queue. Range 16..4096, at least "
      "max_concurrent_requests + 8."));
  add(collection_key(
      "web.basic_auth_users", [](auto &c) -> auto & { return c.web.basic_auth_users; },
      read_basic_auth_users, check_basic_auth_users, basic_auth_users_yaml,
      "HTTP basic authentication, as in Prometheus exporters' web config: user name -> bcrypt "
      "hash, made with `htpasswd -nBC 10 \"\" | tr -d ':\\n'` (package apache2-utils) or "
      "`mkpasswd -m bcrypt -R 10` (package whois). Other hash types are refused, and so are "
      "passwords longer than 72 bytes (bcrypt ignores what follows byte 72). /healthz stays "
      "open; everything else then needs a password. Empty (the default): no authentication. "
      "Example:\n"
      "  basic_auth_users:\n"
      "    prometheus: \"$2y$10$...\""));

  add(key(
      "nvml.enabled", [](auto &c) -> auto & { return c.nvml.enabled; }, any_value,
      "Sample NVML once per scan (true or false)."));
  add(key(
      "nvml.library", [](auto &c) -> auto & { return c.nvml.library; }, check_nvml_library,
      "Library to dlopen: a bare name is searched like any shared library (ld.so.cache, the "
      "driver's install directory), or give an absolute path. Must not be empty."));

  add(key(
      "gpu_health.read_kernel_log", [](auto &c) -> auto & { return c.gpu_health.read_kernel_log; },
      any_value,
      "Read Xid reports from the kernel log (true or false). Needs CAP_SYSLOG where "
      "kernel.dmesg_restrict is 1 (Debian's default), as the shipped unit grants."));
  add(key(
      "gpu_health.kmsg_path", [](auto &c) -> auto & { return c.gpu_health.kmsg_path; },
      check_kmsg_path,
      "The kernel log; another path only for tests (a file in /dev/kmsg's record format)."));
  add(key(
      "gpu_health.xid_journal_per_minute",
      [](auto &c) -> auto & { return c.gpu_health.xid_journal_per_minute; },
      check_xid_journal_per_minute,
      "Xid journal entries written at most this many a minute (1..10000); the counters have "
      "every report."));

  add(key(
      "stacks.enabled", [](auto &c) -> auto & { return c.stacks.enabled; }, any_value,
      "Take stacks at all (true or false). An allocation pays one stack walk (about 1 us), a "
      "synchronisation one at its start; see BENCHMARKS.md \"Call sites\"."));
  add(key(
      "stacks.max_depth", [](auto &c) -> auto & { return c.stacks.max_depth; }, check_stack_depth,
      "Frames kept per stack, 1..127 (the kernel walks at most kernel.perf_event_max_stack)."));
  add(key(
      "stacks.launch_sample_every", [](auto &c) -> auto & { return c.stacks.launch_sample_every; },
      check_launch_sample_every,
      "About 1 in this many kernel launches records its stack (random gaps averaging this); 0: "
      "no launch sites. Other launches pay a countdown of a few ns. 0..1073741824."));
  add(key(
      "stacks.max_sites_per_process",
      [](auto &c) -> auto & { return c.stacks.max_sites_per_process; }, check_sites_per_process,
      "Call sites kept per process (1..65536); calls from further stacks count in the process's "
      "over-limit site."));
  add(key(
      "stacks.max_sites", [](auto &c) -> auto & { return c.stacks.max_sites; }, check_max_sites,
      "Call sites kept over all processes (1..1048576, at least max_sites_per_process)."));
  add(key(
      "stacks.map_entries", [](auto &c) -> auto & { return c.stacks.map_entries; },
      check_stack_map_entries,
      "Distinct stacks the kernel's stack map holds at once (64..1048576, rounded up to a power "
      "of two; about 8 bytes per frame of max_depth each, 4 MiB at the defaults). Stacks whose "
      "hash lands on a taken slot are lost, counted in neutracer_stacks_lost_total."));

  add(key(
      "allocator.enabled", [](auto &c) -> auto & { return c.allocator.enabled; }, any_value,
      "Open PyTorch's allocator view on a process whose GPU memory keeps rising (and when asked "
      "at /api/v1/processes/<pid>/allocator): probes on its caching allocator's static "
      "tracepoints, for that process alone and for `view_duration`, so that a leak names the "
      "lines whose tensors stay live (true or false)."));
  add(key(
      "allocator.view_duration", [](auto &c) -> auto & { return c.allocator.view_duration; },
      duration_within(std::chrono::seconds(10), std::chrono::hours(1)),
      "How long a view stays open; its probes cost each tensor allocation and free about 2 us "
      "(BENCHMARKS.md \"Allocator view\"). Range 10s..1h."));
  add(key(
      "allocator.cooldown", [](auto &c) -> auto & { return c.allocator.cooldown; },
      duration_within(std::chrono::seconds(0), std::chrono::hours(24)),
      "After a view closed without finding live tensor bytes rising, growth may open it again "
      "only after this. Range 0s..24h."));
  add(key(
      "allocator.max_views", [](auto &c) -> auto & { return c.allocator.max_views; },
      check_allocator_max_views, "Processes with a view open at once (1..64)."));
  add(key(
      "allocator.sample_bytes", [](auto &c) -> auto & { return c.allocator.sample_bytes; },
      check_allocator_sample_bytes,
      "A tensor block of this many bytes or more is always recorded with its stack, a smaller "
      "one with probability bytes / sample_bytes (standing for sample_bytes). Range 4 KiB..1 "
      "GiB."));

  add(key(
      "nccl.enabled", [](auto &c) -> auto & { return c.nccl.enabled; }, any_value,
      "Probe NCCL (libnccl.so, wherever a traced process maps it) for collectives per "
      "communicator and rank, collective hangs and stragglers (true or false)."));
  add(key(
      "nccl.hang_after", [](auto &c) -> auto & { return c.nccl.hang_after; },
      duration_within(std::chrono::seconds(5), std::chrono::hours(1)),
      "A collective hang: a communicator's ranks on this node disagree on how many collectives "
      "they called, and none called one for this long. Range 5s..1h."));
  add(key(
      "nccl.straggler_window", [](auto &c) -> auto & { return c.nccl.straggler_window; },
      duration_within(std::chrono::seconds(5), std::chrono::minutes(30)),
      "The straggler (the rank the others wait for at collectives) is judged over the "
      "collectives of this window, which must hold four scans at least: its lateness must "
      "spread over half of it. Range 5s..30m."));
  add(key(
      "nccl.straggler_min_wait", [](auto &c) -> auto & { return c.nccl.straggler_min_wait; },
      duration_within(std::chrono::milliseconds(1), std::chrono::seconds(10)),
      "Ranks whose median wait per collective stays below this are in step: no straggler is "
      "named. Range 1ms..10s."));
  add(key(
      "nccl.ras_enabled", [](auto &c) -> auto & { return c.nccl.ras_enabled; }, any_value,
      "Ask NCCL's RAS service (NCCL 2.24 and later, in every process of a job) for the whole "
      "job's status every ras_interval while this node runs NCCL processes: its communicators, "
      "ranks missing or dead, errors and collective counts, as neutracer_nccl_ras_* series; "
      "and follow its event stream (NCCL 2.29 and later): processes declared dead as it "
      "happens. Off by default: each query runs a collective of NCCL's own across the job, and "
      "some "
      "NCCL releases crashed under repeated queries (docs/nccl.md, \"RAS\"). Turn it on for "
      "one node per job (true or false)."));
  add(key(
      "nccl.ras_interval", [](auto &c) -> auto & { return c.nccl.ras_interval; },
      duration_within(std::chrono::seconds(10), std::chrono::hours(1)),
      "How often to ask NCCL's RAS service when ras_enabled. Range 10s..1h."));
  add(key(
      "nccl.ras_address", [](auto &c) -> auto & { return c.nccl.ras_address; }, check_ras_address,
      "Where NCCL's RAS service listens: NCCL_RAS_ADDR of the job's processes, HOST:PORT or "
      "[IPv6]:PORT with a literal address or localhost (tried as ::1, then 127.0.0.1)."));
  add(key(
      "nccl.ras_timeout", [](auto &c) -> auto & { return c.nccl.ras_timeout; },
      duration_within(std::chrono::seconds(1), std::chrono::seconds(30)),
      "A RAS query not answered in full by then counts as no answer. NCCL's own collection "
      "takes up to about 10 s when ranks do not answer; the daemon's stop waits for a query "
      "under way. Range 1s..30s."));
  return keys;
}

std::vector<ConfigSection> make_sections() {
  return {
      {"", ""},
      {"cuda", "CUDA tracing: kernel launches, memory, transfers, synchronisations."},
      {"detectors",
       "Detectors. Tuned to stay silent on healthy PyTorch training and inference (the caching "
       "allocator's sawtooth and warm-up plateaus); see docs/alerts.md."},
      {"detectors.leak", ""},
      {"detectors.hang", ""},
      {"detectors.fragmentation", ""},
      {"alerts", "Alert notifications (metrics always carry every alert)."},
      {"metrics", "Which optional series /metrics carries; docs/metrics.md gives the budget."},
      {"kubernetes", "Pod, namespace and container names of traced processes."},
      {"web", "The HTTP endpoint; see docs/operations.md, \"Securing the endpoint\". TLS "
              "(tls_cert_file, tls_key_file, tls_server_config) is refused: Debian 12's "
              "civetweb crashes after a TLS handshake. Terminate TLS in a reverse proxy "
              "(deploy/nginx/)."},
      {"nvml", "GPU device metrics (neutracer_gpu_*, neutracer_nvml_*) from NVIDIA's NVML, "
               "loaded at run time. Without the library the daemon logs one info line and "
               "exports no NVML series."},
      {"gpu_health", "GPU health from the driver: the NVIDIA driver's Xid reports in the kernel "
                     "log, counted per GPU and per traced process, with journal entries. ECC, "
                     "row remapping, clock throttling and lost GPUs come from NVML (section "
                     "nvml)."},
      {"allocator", "PyTorch's allocator view (docs/allocator-view.md): which tensors stay "
                    "live, and from which lines, behind PyTorch's caching allocator."},
      {"nccl", "NCCL collectives of distributed jobs (docs/nccl.md): per communicator and rank, "
               "with collective hangs and stragglers among the ranks on this node."},
      {"stacks", "Call sites: where allocations, failed allocations, synchronisations and "
                 "sampled kernel launches come from, as native call stacks walked by the kernel "
                 "through frame pointers and named from the ELF symbols of the process's files. "
                 "Shown at /api/v1/processes/<pid>/sites, as a flame graph at /flame?pid=<pid>, "
                 "and in each alert's journal entry (TARGET_CODE_FUNC); never as metric "
                 "labels."},
  };
}

} // namespace

const std::vector<ConfigKey> &config_keys() {
  static const std::vector<ConfigKey> keys = make_keys();
  return keys;
}

const std::vector<ConfigSection> &config_sections() {
  static const std::vector<ConfigSection> sections = make_sections();
  return sections;
}

const ConfigKey *find_config_key(std::string_view name) {
  for (const ConfigKey &row : config_keys())
    if (row.name == name)
      return &row;
  return nullptr;
}

Problem refused_config_key(std::string_view name) {
  // Debian 12's civetweb crashes after a TLS handshake (docs/operations.md), so TLS settings
  // are refused by name rather than reported as unknown keys. tls_server_config is
  // exporter-toolkit's name for the same.
  if (name == "web.tls_cert_file" || name == "web.tls_key_file" || name == "web.tls_server_config")
    return "TLS is not supported: Debian 12's civetweb crashes after a TLS handshake. Keep "
           "neutracerd on a loopback address and terminate TLS in a reverse proxy; see the "
           "section \"Securing the endpoint\" of docs/operations.md and "
           "deploy/nginx/neutracerd.conf";
  return std::nullopt;
}

} // namespace neutracer
