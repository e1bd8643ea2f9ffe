// SPDX-License-Identifier: Apache-2.0
#include "gpuhealth/nvml_health_watch.h"

#include <string>

#include "gpuhealth/gpu_health_journal.h"

namespace neutracer {

std::vector<JournalEntry> NvmlHealthWatch::update(const NvmlSnapshot &snapshot) {
  std::vector<JournalEntry> out;
  for (const unsigned index : snapshot.lost_unopened) {
    auto &last = last_[index];
    if (!last.lost)
      out.push_back(gpu_lost_journal_entry({std::to_string(index), "", ""}));
    last.lost = true;
  }
  for (const auto &sample : snapshot.devices) {
    const auto &d = sample.device;
    const GpuIdentity gpu{std::to_string(d.index), d.uuid, d.pci_bus_id};
    auto &last = last_[d.index];
    if (sample.lost && !last.lost)
      out.push_back(gpu_lost_journal_entry(gpu));
    last.lost = sample.lost;
    if (sample.lost)
      continue; // nothing else was read; the last values stand
    for (const auto &ecc : sample.ecc_errors) {
      if (ecc.type != NvmlEccType::uncorrected || ecc.counter != NvmlEccCounter::volatile_count)
        continue;
      if (last.uncorrected_volatile && ecc.count > *last.uncorrected_volatile)
        out.push_back(
            ecc_uncorrected_journal_entry(gpu, ecc.count - *last.uncorrected_volatile, ecc.count));
      last.uncorrected_volatile = ecc.count;
    }
    const auto edge = [&](bool now, bool &before, const char *what) {
      if (now && !before)
        out.push_back(memory_repair_journal_entry(gpu, what));
      before = now;
    };
    if (sample.remapped_rows) {
      edge(sample.remapped_rows->pending, last.remap_pending, "row_remap_pending");
      edge(sample.remapped_rows->failed, last.remap_failed, "row_remap_failed");
    }
    if (sample.retired_pages_pending)
      edge(*sample.retired_pages_pending, last.retired_pending, "retired_pages_pending");
  }
  return out;
}

} // namespace neutracer
