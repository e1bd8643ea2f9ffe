// SPDX-License-Identifier: Apache-2.0
#pragma once
// Keeps probes on the driver files that traced processes map: attaches to new ones, says what
// each attach found, and detaches from a file no process has mapped for a while (a driver
// upgrade leaves the old inode behind; a job restarting its processes keeps its probes).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cuda/cuda_discovery.h"
#include "cuda/cuda_tracing.h"

namespace neutracer {

struct AttachCounts {
  std::uint64_t errors = 0;          // attachments that failed, since start
  std::uint64_t missing_symbols = 0; // probed symbols absent from the attached files
  // Launch and cuKernelGetFunction entries whose first instruction the kernel single-steps.
  std::uint64_t single_stepped_hot_entries = 0;
};

class LibraryAttacher {
public:
  explicit LibraryAttacher(CudaTracing &tracer) : tracer_(tracer) {}

  // One scan's libraries. Returns whether an attach ran out of file descriptors.
  bool update(const DiscoveryResult &discovery);
  const AttachCounts &counts() const { return counts_; }

private:
  void report_hot_entries(const std::string &path,
                          const std::vector<AttachSummary::HotEntry> &entries);
  void detach_unused(const DiscoveryResult &discovery);
  void note_failure(const CudaLibrary &library, const std::string &error);

  CudaTracing &tracer_;
  AttachCounts counts_;
  std::map<LibraryId, int> unused_scans_; // attached libraries no process maps, by scans unused
  // Libraries whose attach failed outright (unreadable symbols, probes refused): tried again
  // after 1, 2, 4, ... up to kMaxRetryScans scans, warned about once.
  struct Failing {
    std::uint64_t next_scan = 0;
    std::uint64_t delay = 1;
  };
  std::map<LibraryId, Failing> failing_;
  std::uint64_t scan_ = 0;
};

} // namespace neutracer
