// SPDX-License-Identifier: Apache-2.0
#pragma once
// Parses the NVIDIA driver's Xid reports in kernel log messages. Pure. Formats seen across
// driver generations:
//   NVRM: Xid (0000:03:00): 14, Channel 00000001                                  (R3xx)
//   NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus.                   (no pid)
//   NVRM: Xid (PCI:0000:65:00): 31, pid=1234, name=python3, Ch 00000008, intr 10000000. ...
//   NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp ...
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace neutracer {

// A GPU's PCI address as the driver prints it in an Xid: domain, bus and device (the Xid line
// has no function number; NVIDIA GPUs are function 0).
struct PciAddress {
  std::uint32_t domain = 0;
  std::uint32_t bus = 0;
  std::uint32_t device = 0;
  auto operator<=>(const PciAddress &) const = default;
};

// "0000:3b:00", "PCI:0000:3b:00", NVML's "00000000:3B:00.0" or /proc's "0000:3b:00.0".
std::optional<PciAddress> parse_pci_address(std::string_view text);
// "0000:3b:00", as the driver writes it.
std::string format_pci_address(const PciAddress &address);

struct XidReport {
  PciAddress pci;
  unsigned xid = 0;
  std::optional<std::uint32_t> pid; // absent in older formats and as pid='<unknown>'
  std::string process_name;         // empty when the driver gave none or "<unknown>"
  std::string detail;               // the rest of the message after pid and name
};

// Xid codes above this are not believed (the driver's are below 200 today).
inline constexpr unsigned kMaxXid = 1023;

// nullopt unless `message` is an Xid report ("NVRM: Xid (" anywhere in it, then an address,
// "): " and a decimal code).
std::optional<XidReport> parse_xid_report(std::string_view message);

} // namespace neutracer
