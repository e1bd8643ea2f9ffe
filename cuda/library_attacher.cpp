// SPDX-License-Identifier: Apache-2.0
#include "cuda/library_attacher.h"

#include <algorithm>
#include <set>
#include <spdlog/spdlog.h>

namespace neutracer {
namespace {

// Scans a library may stay unmapped before its probes are removed.
constexpr int kDetachAfterUnusedScans = 10;
// The longest wait, in scans, between attempts on a library whose attach failed.
constexpr std::uint64_t kMaxRetryScans = 64;

} // namespace

bool LibraryAttacher::update(const DiscoveryResult &discovery) {
  bool out_of_descriptors = false;
  ++scan_;
  std::set<LibraryId> mapped;
  for (const auto &library : discovery.libraries) {
    mapped.insert(library.id);
    if (tracer_.is_attached(library.id))
      continue;
    const auto failing = failing_.find(library.id);
    if (failing != failing_.end() && scan_ < failing->second.next_scan)
      continue;
    const auto summary = tracer_.attach(library);
    if (!summary.retry) // not a failure: the process we opened the file through exited
      counts_.errors += summary.errors;
    counts_.missing_symbols += summary.missing_symbols;
    out_of_descriptors |= summary.out_of_descriptors;
    if (summary.out_of_descriptors) // the scan's fd limit error says it
      continue;
    if (summary.retry)
      spdlog::info("{} vanished while attaching ({}); retrying at the next scan", library.path,
                   summary.first_error);
    else if (summary.errors && !tracer_.is_attached(library.id))
      note_failure(library, summary.first_error);
    else if (summary.errors)
      spdlog::warn("attached {} probes to {} with {} errors; first: {}", summary.probes,
                   library.path, summary.errors, summary.first_error);
    else
      spdlog::info("attached {} probes to {} ({} symbols not in this driver)", summary.probes,
                   library.path, summary.missing_symbols);
    if (tracer_.is_attached(library.id))
      failing_.erase(library.id);
    report_hot_entries(library.path, summary.hot_entries);
  }
  if (!discovery.hit_fd_limit()) // an unread process may map it still
    std::erase_if(failing_, [&](const auto &entry) { return !mapped.contains(entry.first); });
  // A scan that could not read every process cannot tell that no process maps a file.
  if (!discovery.hit_fd_limit())
    detach_unused(discovery);
  return out_of_descriptors;
}

void LibraryAttacher::note_failure(const CudaLibrary &library, const std::string &error) {
  const auto [failing, first] = failing_.try_emplace(library.id);
  if (first) {
    spdlog::warn("cannot attach probes to {}: {}; trying again after 1, 2, 4 ... {} scans",
                 library.path, error, kMaxRetryScans);
  } else {
    spdlog::debug("cannot attach probes to {}: {}", library.path, error);
    failing->second.delay = std::min(failing->second.delay * 2, kMaxRetryScans);
  }
  failing->second.next_scan = scan_ + failing->second.delay;
}

// A hot entry the kernel single-steps costs every launch a second trap: said at attach, and
// counted in neutracer_probe_entries_single_stepped.
void LibraryAttacher::report_hot_entries(const std::string &path,
                                         const std::vector<AttachSummary::HotEntry> &entries) {
  for (const auto &entry : entries) {
    if (entry.instruction.emulated) {
      spdlog::debug("{}: {} starts with {}, which the kernel emulates: one trap per call", path,
                    entry.symbol, entry.instruction.text);
      continue;
    }
    ++counts_.single_stepped_hot_entries;
    spdlog::warn("{}: {} starts with {}, which the kernel single-steps: each probed call costs "
                 "a second trap (several microseconds on virtual machines) on top of the first",
                 path, entry.symbol, entry.instruction.text);
  }
}

void LibraryAttacher::detach_unused(const DiscoveryResult &discovery) {
  std::set<LibraryId> in_use;
  for (const auto &process : discovery.processes)
    in_use.insert(process.libraries.begin(), process.libraries.end());
  for (const auto &id : tracer_.attached()) {
    if (in_use.contains(id)) {
      unused_scans_.erase(id);
      continue;
    }
    if (++unused_scans_[id] < kDetachAfterUnusedScans)
      continue;
    spdlog::info("detaching from library dev={} inode={}: no process maps it", id.dev, id.inode);
    tracer_.detach(id);
    unused_scans_.erase(id);
  }
}

} // namespace neutracer
