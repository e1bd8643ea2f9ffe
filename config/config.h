#pragma once
// The daemon's settings: defaults, YAML file, command-line overrides, validation.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace neutracer {

inline constexpr const char *kDefaultConfigPath = "/etc/neutracerd/neutracerd.yaml";

struct Config {
  std::string listen = "127.0.0.1:10492"; // HOST:PORT, IPv4 literal or "localhost"
  std::chrono::milliseconds scan_interval{2000};
  std::string log_level = "info"; // trace, debug, info, warn, error, critical, off
  std::string proc_root = "/proc";

  struct Cuda {
    // Kernels beyond this many per process are summed into kernel="[other]".
    std::uint32_t max_kernels_per_process = 50;
    // Capacity of the in-kernel launch counter map ((process, function) pairs).
    std::uint32_t launch_map_entries = 65536;
    // Ring buffer for rare events (allocations, copies, syncs, names); power of two, >= 4096.
    std::uint32_t ring_buffer_bytes = 8u << 20;
    // Time constant of the smoothed transfer throughput gauge.
    std::chrono::milliseconds throughput_window{10000};

    bool operator==(const Cuda &) const = default;
  } cuda;

  // Lets callers (tests, a future reload) compare whole configurations.
  bool operator==(const Config &) const = default;
};

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

// Per-field checks shared by the YAML parser, validate_config and the command line. Each
// returns the problem (without location or field name, e.g. "must be between 100ms and 1h")
// or nullopt when the value is acceptable.
std::optional<std::string> check_listen_address(const std::string &listen);
std::optional<std::string> check_scan_interval(std::chrono::milliseconds interval);
std::optional<std::string> check_log_level(const std::string &level);
std::optional<std::string> check_proc_root(const std::string &proc_root);

// Parses YAML text into a Config starting from the defaults. `source_name` prefixes
// errors (a file path). Every key is validated: unknown keys, wrong types and
// out-of-range values are errors.
struct ConfigResult {
  std::optional<Config> config;
  std::optional<ConfigError> error;
};
ConfigResult parse_config_yaml(const std::string &text, const std::string &source_name);

// Checks cross-field rules and values that can be checked without side effects
// (listen address syntax, ranges). Returns the first problem found.
std::optional<ConfigError> validate_config(const Config &config);

} // namespace neutracer
