// SPDX-License-Identifier: Apache-2.0
#include "config/value_checks.h"

#include <arpa/inet.h>

#include "common/text.h"
#include "config/config.h" // format_duration
#include "http/civetweb_listen.h"

#include <array>
#include <string_view>
#include <variant>

namespace neutracer {

using std::chrono::milliseconds;

namespace {

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

Problem check_range(std::uint64_t value, std::uint64_t min, std::uint64_t max) {
  if (value < min || value > max)
    return "must be between " + std::to_string(min) + " and " + std::to_string(max);
  return std::nullopt;
}

} // namespace

Problem check_duration_range(milliseconds value, milliseconds min, milliseconds max) {
  if (value < min || value > max)
    return "must be between " + format_duration(min) + " and " + format_duration(max);
  return std::nullopt;
}

Problem check_max_kernels(std::uint64_t value) {
  return check_range(value, kMinMaxKernels, kMaxMaxKernels);
}

Problem check_launch_map_entries(std::uint64_t value) {
  return check_range(value, kMinLaunchMapEntries, kMaxLaunchMapEntries);
}

Problem check_ring_buffer_bytes(std::uint64_t value) {
  // The BPF ring buffer map requires a power-of-two multiple of the page size.
  if (value < kMinRingBufferBytes || value > kMaxRingBufferBytes || (value & (value - 1)) != 0)
    return "must be a power of two between " + std::to_string(kMinRingBufferBytes) + " and " +
           std::to_string(kMaxRingBufferBytes);
  return std::nullopt;
}

Problem check_throughput_window(milliseconds value) {
  return check_duration_range(value, kMinThroughputWindow, kMaxThroughputWindow);
}

Problem check_launch_max_rate(std::uint64_t value) { return check_range(value, 1, 10'000'000); }

Problem check_launch_sample_period(milliseconds value) {
  return check_duration_range(value, milliseconds(100), milliseconds(60'000));
}

Problem check_launch_sample_fraction(double value) {
  if (value == 0 || (value >= 0.001 && value <= 0.9))
    return std::nullopt;
  return "must be 0 (from launch_max_rate) or between 0.001 and 0.9";
}

// The kernel's default kernel.perf_event_max_stack (NT_STACK_MAX_DEPTH): a stack map cannot
// hold more frames.
constexpr std::uint64_t kMaxStackDepth = 127;

Problem check_stack_depth(std::uint64_t value) { return check_range(value, 1, kMaxStackDepth); }
Problem check_launch_sample_every(std::uint64_t value) {
  if (value == 0)
    return std::nullopt;
  if (auto problem = check_range(value, 1, 1u << 30))
    return *problem + " (or 0 for no launch sites)";
  return std::nullopt;
}
Problem check_sites_per_process(std::uint64_t value) { return check_range(value, 1, 65536); }
Problem check_max_sites(std::uint64_t value) { return check_range(value, 1, 1u << 20); }
Problem check_stack_map_entries(std::uint64_t value) { return check_range(value, 64, 1u << 20); }

// Fields checked only by range; each table row reads, checks and names one value.
constexpr milliseconds kMinDetectorDuration{1000};
constexpr milliseconds kMaxDetectorDuration{24 * 3600 * 1000};

Problem check_detector_duration(milliseconds value) {
  return check_duration_range(value, kMinDetectorDuration, kMaxDetectorDuration);
}
Problem check_allocator_max_views(std::uint64_t value) { return check_range(value, 1, 64); }
Problem check_allocator_sample_bytes(std::uint64_t value) {
  return check_range(value, 4096, 1ull << 30);
}

Problem check_leak_windows(std::uint64_t value) { return check_range(value, 2, 1000); }
Problem check_fast_leak_windows(std::uint64_t value) {
  if (value == 0)
    return std::nullopt; // off
  return check_range(value, 2, 1000);
}
Problem check_min_growth(std::uint64_t value) { return check_range(value, 1ull << 20, 1ull << 50); }
Problem check_probability(double value) {
  if (!(value > 0.5 && value < 1.0))
    return "must be above 0.5 and below 1";
  return std::nullopt;
}
Problem check_storm_retries(std::uint64_t value) { return check_range(value, 1, 1000000); }
Problem check_alert_cooldown(milliseconds value) {
  return check_duration_range(value, milliseconds(1), kMaxDetectorDuration);
}
Problem check_alerts_per_minute(std::uint64_t value) { return check_range(value, 1, 100000); }

Problem check_kubernetes_log_dir(const std::string &log_dir) {
  if (!log_dir.empty() && log_dir[0] != '/')
    return "must be an absolute path (starting with '/'), or empty to disable";
  return std::nullopt;
}

// Each request may hold a civetweb worker thread.
Problem check_max_concurrent_requests(std::uint64_t value) { return check_range(value, 1, 64); }

// One civetweb worker thread each, about 20 KiB of memory: 4096 is about 80 MiB.
Problem check_max_connections(std::uint64_t value) { return check_range(value, 16, 4096); }

Problem check_nvml_library(const std::string &library) {
  if (library.empty())
    return "must not be empty (set nvml.enabled: false to turn NVML off)";
  return std::nullopt;
}

Problem check_kmsg_path(const std::string &path) {
  if (path.empty() || path[0] != '/')
    return "must be an absolute path (starting with '/'); set gpu_health.read_kernel_log: "
           "false to stop reading the kernel log";
  return std::nullopt;
}

Problem check_xid_journal_per_minute(std::uint64_t per_minute) {
  if (per_minute < 1 || per_minute > 10000)
    return "must be between 1 and 10000";
  return std::nullopt;
}

namespace {

// HOST:PORT with a literal address or localhost; an empty host (":9100") where allowed.
Problem host_port_problem(const std::string &listen, bool empty_host_allowed,
                          const char *kExample) {
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
    if (host.empty() && !empty_host_allowed)
      return std::string("missing host; ") + kExample;
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
  return std::nullopt;
}

} // namespace

Problem check_listen_address(const std::string &listen) {
  if (auto problem = host_port_problem(
          listen, true, "expected HOST:PORT, :PORT or [IPv6]:PORT, e.g. 127.0.0.1:10492"))
    return problem;
  // Valid, but can this server listen there? (--check-config must say so, not the start.)
  const auto listening_port = civetweb_listening_port(listen, civetweb_has_ipv6());
  if (const auto *refusal = std::get_if<ListenRefusal>(&listening_port))
    return refusal->reason;
  return std::nullopt;
}

Problem check_ras_address(const std::string &address) {
  return host_port_problem(address, false,
                           "expected HOST:PORT or [IPv6]:PORT, e.g. localhost:28028");
}

Problem check_scan_interval(milliseconds interval) {
  return check_duration_range(interval, kMinScanInterval, kMaxScanInterval);
}

Problem check_log_level(const std::string &level) {
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

Problem check_log_format(const std::string &format) {
  if (format == "logfmt" || format == "json")
    return std::nullopt;
  return "must be logfmt or json";
}

Problem check_proc_root(const std::string &proc_root) {
  if (proc_root.empty())
    return "must not be empty";
  if (proc_root[0] != '/')
    return "must be an absolute path (starting with '/')";
  return std::nullopt;
}

} // namespace neutracer
