// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which GPU (the `gpu` label: NVML's and nvidia-smi's index) sits at a PCI address, for the
// Xid reports that name GPUs by address. Pure.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kmsg/xid_line.h"

namespace neutracer {

class GpuAddressBook {
public:
  // (PCI bus id in any form parse_pci_address takes, index); unparsable ids are skipped.
  explicit GpuAddressBook(const std::vector<std::pair<std::string, int>> &gpus = {});

  // The index as a label, or "unknown" for an address no listed GPU has.
  std::string label(const PciAddress &address) const;
  bool empty() const { return by_address_.empty(); }

private:
  std::map<PciAddress, int> by_address_;
};

} // namespace neutracer
