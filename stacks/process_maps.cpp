// SPDX-License-Identifier: Apache-2.0
#include "stacks/process_maps.h"

#include <algorithm>

namespace neutracer {

ProcessMaps::ProcessMaps(std::vector<MapsEntry> executable) : mappings_(std::move(executable)) {
  std::erase_if(mappings_, [](const MapsEntry &entry) { return !entry.executable; });
  std::sort(mappings_.begin(), mappings_.end(),
            [](const MapsEntry &a, const MapsEntry &b) { return a.start < b.start; });
}

std::optional<ProcessMaps> ProcessMaps::read(const ProcFs &procfs, int pid) {
  std::vector<MapsEntry> mappings;
  const bool readable = procfs.for_each_line(pid, "maps", [&](std::string_view line) {
    // Cheap test first: most lines of a large program map data.
    const auto perms = line.find(' ');
    if (perms == std::string_view::npos || line.size() < perms + 4 || line[perms + 3] != 'x')
      return;
    if (auto entry = parse_maps_line(line); entry && entry->executable)
      mappings.push_back(std::move(*entry));
  });
  if (!readable)
    return std::nullopt;
  return ProcessMaps(std::move(mappings));
}

const MapsEntry *ProcessMaps::find(std::uint64_t address) const {
  auto it =
      std::upper_bound(mappings_.begin(), mappings_.end(), address,
                       [](std::uint64_t a, const MapsEntry &entry) { return a < entry.start; });
  if (it == mappings_.begin())
    return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

} // namespace neutracer
