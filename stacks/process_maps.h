// SPDX-License-Identifier: Apache-2.0
#pragma once
// The executable file mappings of a process, to place a code address in a file.
#include <cstdint>
#include <optional>
#include <vector>

#include "common/proc_parsers.h"
#include "common/procfs.h"

namespace neutracer {

class ProcessMaps {
public:
  explicit ProcessMaps(std::vector<MapsEntry> executable = {});

  // Executable file mappings of `pid` (anonymous code, such as a JIT's, is not a file and not
  // here); nullopt when its maps cannot be read.
  static std::optional<ProcessMaps> read(const ProcFs &procfs, int pid);

  // The mapping holding `address`; nullptr when none does.
  const MapsEntry *find(std::uint64_t address) const;
  std::size_t size() const { return mappings_.size(); }

private:
  std::vector<MapsEntry> mappings_; // by start address
};

} // namespace neutracer
