// SPDX-License-Identifier: Apache-2.0
#pragma once
// Pure parsers for /proc text. No I/O here: the same functions serve fixtures and live reads.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace neutracer {

// One line of /proc/<pid>/maps that maps a file.
struct MapsEntry {
  std::uint64_t start = 0; // address range; names the mapping in /proc/<pid>/map_files
  std::uint64_t end = 0;
  std::uint64_t offset = 0; // file offset of the mapping's first byte
  std::uint64_t dev = 0;    // makedev(major, minor) of the mapped file
  std::uint64_t inode = 0;
  std::string path;     // as the process sees it (inside its mount namespace)
  bool deleted = false; // the file was replaced or removed after mapping
  bool executable = false; // its permissions include x
};

// Parses a maps line; nullopt for anonymous mappings and malformed lines.
std::optional<MapsEntry> parse_maps_line(std::string_view line);

// True for the CUDA driver library: libcuda.so, libcuda.so.1, libcuda.so.580.95.05.
bool is_cuda_driver_library(std::string_view path);
// True for NCCL: libnccl.so, libnccl.so.2, libnccl.so.2.28.9 (wheels, venvs, containers alike).
bool is_nccl_library(std::string_view path);

// The fields of /proc/<pid>/stat the daemon reads, for discovery, OS metrics and its own
// process_* metrics (proc(5) field numbers).
struct ProcStat {
  std::string comm;               // 2
  char state = '?';               // 3
  std::uint64_t minor_faults = 0; // 10 minflt
  std::uint64_t major_faults = 0; // 12 majflt
  std::uint64_t utime_ticks = 0;  // 14
  std::uint64_t stime_ticks = 0;  // 15
  std::uint64_t num_threads = 0;  // 20
  std::uint64_t start_ticks = 0;  // 22 starttime: clock ticks after boot
  // 23 and 24, absent from a line cut after field 22; rss is signed in the kernel, and a
  // negative value reads as absent.
  std::optional<std::uint64_t> vsize_bytes;
  std::optional<std::uint64_t> rss_pages;
};

// Parses /proc/<pid>/stat through field 22 at least. comm may hold spaces and parentheses:
// fields are counted after the last ')'.
std::optional<ProcStat> parse_proc_stat(std::string_view text);

} // namespace neutracer
