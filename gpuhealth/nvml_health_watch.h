// SPDX-License-Identifier: Apache-2.0
#pragma once
// Turns changes between NVML samples into journal entries: a GPU that became lost, new
// uncorrectable ECC errors (volatile count rose), a row remapping or page retirement that
// waits for a reset, a remapping that failed. Edge-triggered per GPU: a condition that holds
// is announced once, again only after it cleared. Pure.
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "common/journal_writer.h"
#include "nvml/nvml_sample.h"

namespace neutracer {

class NvmlHealthWatch {
public:
  std::vector<JournalEntry> update(const NvmlSnapshot &snapshot);

private:
  struct Last {
    bool lost = false;
    std::optional<std::uint64_t> uncorrected_volatile;
    bool remap_pending = false;
    bool remap_failed = false;
    bool retired_pending = false;
  };
  std::map<unsigned, Last> last_;
};

} // namespace neutracer
