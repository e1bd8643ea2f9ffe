// SPDX-License-Identifier: Apache-2.0
#pragma once
// The checks of single configuration values, one per kind of key. Each returns the problem
// without key or location (e.g. "must be between 100ms and 1h"), or nullopt when the value is
// acceptable. Pure, but for check_listen_address, which asks civetweb whether it can listen.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "config/problem.h"

namespace neutracer {

// A duration from `min` to `max`, both included.
Problem check_duration_range(std::chrono::milliseconds value, std::chrono::milliseconds min,
                             std::chrono::milliseconds max);
// That check for one range, as a key's check.
inline auto duration_within(std::chrono::milliseconds min, std::chrono::milliseconds max) {
  return
      [min, max](std::chrono::milliseconds value) { return check_duration_range(value, min, max); };
}

// Connections beyond the admitted requests, kept to answer refusals (503, 429, 401, 400).
inline constexpr std::uint32_t kSpareConnections = 8;

Problem check_max_kernels(std::uint64_t value);
Problem check_launch_map_entries(std::uint64_t value);
Problem check_ring_buffer_bytes(std::uint64_t value);
Problem check_throughput_window(std::chrono::milliseconds value);
Problem check_launch_max_rate(std::uint64_t value);
Problem check_launch_sample_period(std::chrono::milliseconds value);
Problem check_launch_sample_fraction(double value);
// At most the kernel's default kernel.perf_event_max_stack (127).
Problem check_stack_depth(std::uint64_t value);
Problem check_launch_sample_every(std::uint64_t value);
Problem check_sites_per_process(std::uint64_t value);
Problem check_max_sites(std::uint64_t value);
Problem check_stack_map_entries(std::uint64_t value);
Problem check_detector_duration(std::chrono::milliseconds value);
Problem check_leak_windows(std::uint64_t value);
Problem check_fast_leak_windows(std::uint64_t value);
Problem check_min_growth(std::uint64_t value);
Problem check_probability(double value);
Problem check_storm_retries(std::uint64_t value);
Problem check_alert_cooldown(std::chrono::milliseconds value);
Problem check_alerts_per_minute(std::uint64_t value);
Problem check_allocator_max_views(std::uint64_t value);
Problem check_allocator_sample_bytes(std::uint64_t value);
Problem check_kubernetes_log_dir(const std::string &log_dir);
Problem check_max_concurrent_requests(std::uint64_t value);
Problem check_max_connections(std::uint64_t value);
Problem check_nvml_library(const std::string &library);
Problem check_kmsg_path(const std::string &path);
Problem check_xid_journal_per_minute(std::uint64_t per_minute);
// Syntax, and whether civetweb can listen there (IPv6 needs a civetweb built with it).
Problem check_listen_address(const std::string &listen);
// nccl.ras_address: HOST:PORT or [IPv6]:PORT, a literal address or localhost.
Problem check_ras_address(const std::string &address);
Problem check_scan_interval(std::chrono::milliseconds interval);
Problem check_log_level(const std::string &level);
Problem check_log_format(const std::string &format);
Problem check_proc_root(const std::string &proc_root);

} // namespace neutracer
