// SPDX-License-Identifier: Apache-2.0
#pragma once
// The daemon's settings: defaults, YAML file, command-line overrides, validation.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/launch_counting.h"

namespace neutracer {

inline constexpr const char *kDefaultConfigPath = "/etc/neutracerd/neutracerd.yaml";

struct Config {
  // HOST:PORT (IPv4 literal or "localhost"), :PORT (every interface) or [IPv6]:PORT.
  std::string listen = "127.0.0.1:10492";
  std::chrono::milliseconds scan_interval{2000};
  std::string log_level = "info"; // trace, debug, info, warn, error, critical, off
  // Lines on stderr: "logfmt" or "json". Under systemd the journal gets each record natively.
  std::string log_format = "logfmt";
  std::string proc_root = "/proc";

  struct Cuda {
    // Kernels beyond this many per process are summed into kernel="[other]".
    std::uint32_t max_kernels_per_process = 50;
    // Capacity of the in-kernel launch counter map ((process, function) pairs).
    std::uint32_t launch_map_entries = 65536;
    // Ring buffer for rare events (allocations, copies, syncs, names); power of two, >= 4096.
    std::uint32_t ring_buffer_bytes = 4u << 20;
    // Time constant of the smoothed transfer throughput gauge.
    std::chrono::milliseconds throughput_window{10000};
    // Launch counting: exact (every launch), adaptive (per-process probes, duty-cycled above
    // launch_max_rate: totals are estimates) or off.
    LaunchCounting launch_counting = LaunchCounting::exact;
    // Adaptive: launches per second and process counted at most (above it, windows).
    std::uint32_t launch_max_rate = 1000;
    // Adaptive: one counting window per process per period.
    std::chrono::milliseconds launch_sample_period{1000};
    // Adaptive: a sampled process is counted for this share of each period whatever its rate
    // (tests/bench/gpu/paired.py alternates probes on and off this way); 0: from launch_max_rate.
    double launch_sample_fraction = 0;
    // Adaptive: (fnmatch pattern on comm, exe path or container id, mode); first match wins.
    std::vector<std::pair<std::string, LaunchCounting>> launch_rules;

    bool operator==(const Cuda &) const = default;
  } cuda;

  struct Detectors {
    // Leak: the per-window minimum of GPU memory in use must rise through `leak_windows`
    // windows of `leak_window` by at least `leak_min_growth_bytes`, and the rule of
    // succession over high-water-mark samples must reach `leak_probability`.
    std::chrono::milliseconds leak_window{60000};
    std::uint32_t leak_windows = 5;
    std::uint64_t leak_min_growth_bytes = 256ull << 20;
    double leak_probability = 0.75;
    // The fast trend: the same over `leak_fast_windows` windows of `leak_fast_window` (0
    // windows: off), steady and made of repeated allocation sizes (detectors/leak_detector.h).
    std::chrono::milliseconds leak_fast_window{2000};
    std::uint32_t leak_fast_windows = 5;
    std::uint64_t leak_fast_min_growth_bytes = 128ull << 20;
    // A high-water-mark sample is taken each time use passes the last mark by this much.
    std::uint64_t leak_sample_step_bytes = 16ull << 20;
    // Hang: a CUDA call running this long, or launches stopped this long while the
    // process spins on a CPU and holds GPU memory.
    std::chrono::milliseconds hang_call_threshold{60000};
    std::chrono::milliseconds hang_stalled_launches{120000};
    // Fragmentation: this many allocator retries (failed allocation, frees, success)
    // within `retry_storm_window` raise the alert.
    std::uint32_t retry_storm_retries = 3;
    std::chrono::milliseconds retry_storm_window{60000};

    bool operator==(const Detectors &) const = default;
  } detectors;

  struct Alerts {
    // A condition that clears and returns within this time is not announced again.
    std::chrono::milliseconds cooldown{600000};
    // Notifications above this rate, over all processes and kinds, are counted, not sent.
    std::uint32_t max_per_minute = 30;
    // Also write each alert to the systemd journal.
    bool journal = true;

    bool operator==(const Alerts &) const = default;
  } alerts;

  struct Web {
    // HTTP basic authentication: user name -> bcrypt hash ("$2y$..."); empty: none.
    std::map<std::string, std::string> basic_auth_users;
    // Requests the HTTP server handles at once; more get 503 at once.
    std::uint32_t max_concurrent_requests = 4;
    // Connections the HTTP server serves at once, one worker thread each (HttpServerOptions):
    // clients that idle or send slowly up to this many cannot delay a scrape.
    std::uint32_t max_connections = 256;

    bool operator==(const Web &) const = default;
  } web;

  struct Metrics {
    // Per-process histograms (CUDA sync waits, block IO latency); off keeps their sums.
    bool process_histograms = true;

    bool operator==(const Metrics &) const = default;
  } metrics;

  struct Kubernetes {
    // Where the kubelet writes containers/ and pods/ (log names give pod, namespace and
    // container names); empty disables the lookup.
    std::string log_dir = "/var/log";

    bool operator==(const Kubernetes &) const = default;
  } kubernetes;

  struct Nvml {
    // Read GPU device metrics through NVML when its library can be loaded.
    bool enabled = true;
    // dlopen name or path of NVML; a bare name is searched like any shared library.
    std::string library = "libnvidia-ml.so.1";

    bool operator==(const Nvml &) const = default;
  } nvml;

  struct GpuHealth {
    // Read the driver's Xid reports from the kernel log.
    bool read_kernel_log = true;
    // The kernel log: /dev/kmsg, or a stand-in in its record format (a regular file that is
    // appended to, or a FIFO), for tests.
    std::string kmsg_path = "/dev/kmsg";
    // Xid journal entries written at most this often; the counters have every report.
    std::uint32_t xid_journal_per_minute = 30;

    bool operator==(const GpuHealth &) const = default;
  } gpu_health;

  struct Stacks {
    // Record where CUDA calls come from: native call stacks (frame pointers) of allocations,
    // failed allocations, synchronisations and sampled launches, named from ELF symbols.
    bool enabled = true;
    // Frames kept per stack (the kernel walks at most kernel.perf_event_max_stack, 127).
    std::uint32_t max_depth = 64;
    // About 1 in this many kernel launches records its stack (random gaps, this on average);
    // 0: no launch sites.
    std::uint32_t launch_sample_every = 1000;
    // Call sites kept per process and over all processes; calls beyond them count in an
    // over-limit site.
    std::uint32_t max_sites_per_process = 256;
    std::uint32_t max_sites = 16384;
    // Distinct stacks the kernel's stack map holds at once (rounded up to a power of two); a
    // stack whose hash lands on a taken slot is lost (counted).
    std::uint32_t map_entries = 8192;

    bool operator==(const Stacks &) const = default;
  } stacks;

  struct Allocator {
    // Open PyTorch's allocator view (docs/allocator-view.md) on processes whose GPU memory keeps
    // rising, and when asked through the API; false: never.
    bool enabled = true;
    // How long a view stays open (its probes attached to that one process).
    std::chrono::milliseconds view_duration{120'000};
    // After a view closed without a verdict, growth may open it again only after this.
    std::chrono::milliseconds cooldown{300'000};
    // Processes with a view open at once.
    std::uint32_t max_views = 4;
    // A tensor block of this many bytes or more is always sampled, a smaller one with
    // probability bytes / this.
    std::uint64_t sample_bytes = 1u << 20;

    bool operator==(const Allocator &) const = default;
  } allocator;

  struct Nccl {
    // Probe libnccl's collectives and communicator calls in traced processes (docs/nccl.md).
    bool enabled = true;
    // A collective hang: ranks on this node disagree on how many collectives they called, and
    // none called one for this long.
    std::chrono::milliseconds hang_after{30'000};
    // The straggler is judged over the collectives of this window.
    std::chrono::milliseconds straggler_window{30'000};
    // Ranks within this median wait per collective are in step: no straggler is named.
    std::chrono::milliseconds straggler_min_wait{5};
    // NCCL's RAS service, asked for the whole job's status every ras_interval. Off by default:
    // each query runs a collective of NCCL's own across the job (docs/nccl.md, "RAS").
    bool ras_enabled = false;
    std::chrono::milliseconds ras_interval{60'000};
    std::string ras_address = "localhost:28028";
    std::chrono::milliseconds ras_timeout{15'000};

    bool operator==(const Nccl &) const = default;
  } nccl;

  // Lets callers (tests, a future reload) compare whole configurations.
  bool operator==(const Config &) const = default;
};

// A duration key as the seconds the collectors' settings hold.
inline double in_seconds(std::chrono::milliseconds duration) {
  return std::chrono::duration<double>(duration).count();
}

// A configuration problem; `what` is the whole message shown to the user
// (e.g. "/etc/neutracerd/neutracerd.yaml:3: unknown key 'listn'").
struct ConfigError {
  std::string what;
};

// Parses a duration such as "2s", "500ms", "1m", "1.5s". Returns nullopt when malformed.
std::optional<std::chrono::milliseconds> parse_duration(const std::string &text);

// Formats a duration in the largest unit that represents it exactly ("2s", "1500ms", "1m"),
// so that parse_duration(format_duration(d)) == d for d > 0.
std::string format_duration(std::chrono::milliseconds duration);

// Parses YAML text into a Config starting from the defaults. `source_name` prefixes
// errors (a file path). Every key is validated: unknown keys, wrong types and
// out-of-range values are errors.
struct ConfigResult {
  std::optional<Config> config;
  std::optional<ConfigError> error;
};
ConfigResult parse_config_yaml(const std::string &text, const std::string &source_name);

// Checks every key (config_keys.h) and the rules between keys, without side effects but for
// asking civetweb whether it can listen on the address. Returns the first problem found.
std::optional<ConfigError> validate_config(const Config &config);

// Settings that are valid but keep a feature from working reliably (e.g. a straggler window of
// fewer than four scans: a slow rank may be named late or never), each as a sentence with the
// fix; empty when none.
std::vector<std::string> config_warnings(const Config &config);

} // namespace neutracer
