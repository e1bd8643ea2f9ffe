// SPDX-License-Identifier: Apache-2.0
#include "gpuhealth/gpu_addresses.h"

namespace neutracer {

GpuAddressBook::GpuAddressBook(const std::vector<std::pair<std::string, int>> &gpus) {
  for (const auto &[bus_id, index] : gpus)
    if (const auto address = parse_pci_address(bus_id))
      by_address_.emplace(*address, index);
}

std::string GpuAddressBook::label(const PciAddress &address) const {
  const auto it = by_address_.find(address);
  return it == by_address_.end() ? "unknown" : std::to_string(it->second);
}

} // namespace neutracer
