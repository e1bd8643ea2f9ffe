// SPDX-License-Identifier: Apache-2.0
#pragma once
// The daemon's open file limit (RLIMIT_NOFILE), and telling "out of descriptors" from other
// failures: EMFILE/ENFILE say nothing about the file or process being opened.
#include <cerrno>
#include <cstdint>

namespace neutracer {

inline bool is_out_of_descriptors(int error) { return error == EMFILE || error == ENFILE; }

struct OpenFileLimit {
  std::uint64_t soft = 0; // RLIM_INFINITY when unlimited
  std::uint64_t hard = 0;
};

OpenFileLimit open_file_limit();

// Whether this process cannot open one more file now. For failures whose errno was lost on the
// way (libbpf's fallback to tracefs uprobes reports the fallback's error, not EMFILE).
bool out_of_descriptors_now();

} // namespace neutracer
