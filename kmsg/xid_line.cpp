// SPDX-License-Identifier: Apache-2.0
#include "kmsg/xid_line.h"

#include <charconv>
#include <fmt/format.h>

#include "common/text.h"

namespace neutracer {
namespace {

std::optional<std::uint32_t> hex_field(std::string_view text) {
  if (text.size() > 8)
    return std::nullopt;
  return parse_number<std::uint32_t>(text, 16);
}

// Leading decimal digits of `text` (at most 10), consumed.
std::optional<std::uint64_t> take_decimal(std::string_view &text) {
  std::size_t digits = 0;
  while (digits < text.size() && digits < 10 && text[digits] >= '0' && text[digits] <= '9')
    ++digits;
  if (digits == 0)
    return std::nullopt;
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + digits, value);
  text.remove_prefix(digits);
  return value;
}

bool take(std::string_view &text, std::string_view prefix) {
  if (!text.starts_with(prefix))
    return false;
  text.remove_prefix(prefix.size());
  return true;
}

} // namespace

std::optional<PciAddress> parse_pci_address(std::string_view text) {
  take(text, "PCI:");
  if (const auto dot = text.rfind('.'); dot != std::string_view::npos) {
    const auto function = text.substr(dot + 1);
    if (function.size() != 1 || !hex_field(function))
      return std::nullopt;
    text = text.substr(0, dot);
  }
  const auto first = text.find(':');
  const auto second = first == std::string_view::npos ? first : text.find(':', first + 1);
  if (second == std::string_view::npos)
    return std::nullopt;
  const auto domain = hex_field(text.substr(0, first));
  const auto bus = hex_field(text.substr(first + 1, second - first - 1));
  const auto device = hex_field(text.substr(second + 1));
  if (!domain || !bus || !device || *bus > 0xff || *device > 0x1f)
    return std::nullopt;
  return PciAddress{*domain, *bus, *device};
}

std::string format_pci_address(const PciAddress &address) {
  return fmt::format("{:04x}:{:02x}:{:02x}", address.domain, address.bus, address.device);
}

std::optional<XidReport> parse_xid_report(std::string_view message) {
  constexpr std::string_view kMarker = "NVRM: Xid (";
  const auto at = message.find(kMarker);
  if (at == std::string_view::npos)
    return std::nullopt;
  auto rest = message.substr(at + kMarker.size());
  const auto close = rest.find("): ");
  if (close == std::string_view::npos || close > 32)
    return std::nullopt;
  const auto pci = parse_pci_address(rest.substr(0, close));
  if (!pci)
    return std::nullopt;
  rest.remove_prefix(close + 3);
  const auto xid = take_decimal(rest);
  if (!xid || *xid > kMaxXid)
    return std::nullopt;
  XidReport report;
  report.pci = *pci;
  report.xid = static_cast<unsigned>(*xid);
  take(rest, ",");
  take(rest, " ");
  if (take(rest, "pid=")) {
    auto value = rest.substr(0, rest.find(','));
    rest.remove_prefix(value.size());
    if (const auto pid = take_decimal(value);
        pid && value.empty() && *pid > 0 && *pid <= UINT32_MAX)
      report.pid = static_cast<std::uint32_t>(*pid);
    take(rest, ",");
    take(rest, " ");
    if (take(rest, "name=")) {
      // comm may hold commas; the driver follows it with ", " and the detail.
      const auto end = rest.find(", ");
      const auto name = rest.substr(0, end);
      if (name != "<unknown>" && name != "'<unknown>'")
        report.process_name = std::string(name);
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 2);
    }
  }
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == ' '))
    rest.remove_suffix(1);
  report.detail = std::string(rest);
  return report;
}

} // namespace neutracer
