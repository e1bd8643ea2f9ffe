// SPDX-License-Identifier: Apache-2.0
// Fuzzes the kernel log record parser, the record splitter of stand-in logs and the Xid
// report parser: the input is fed to the splitter in two pieces (its first byte picks the
// cut), and each record, and the whole input as a message, is parsed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kmsg/kmsg_record.h"
#include "kmsg/kmsg_splitter.h"
#include "kmsg/xid_line.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

namespace {

void check_xid(std::string_view message) {
  const auto xid = neutracer::parse_xid_report(message);
  if (!xid)
    return;
  require(message.find("NVRM: Xid (") != std::string_view::npos, "an Xid needs its marker");
  require(xid->xid <= neutracer::kMaxXid, "Xid codes are bounded");
  require(!xid->pid || *xid->pid > 0, "a pid is positive");
  require(xid->pci.bus <= 0xff && xid->pci.device <= 0x1f, "PCI bus and device in range");
  require(xid->detail.size() <= message.size(), "the detail is part of the message");
  const auto again = neutracer::parse_pci_address(neutracer::format_pci_address(xid->pci));
  require(again && *again == xid->pci, "a formatted address parses back");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  check_xid(text);
  if (const auto record = neutracer::parse_kmsg_record(text)) {
    require(record->level >= 0 && record->level <= 7, "a level is 3 bits");
    require(record->message.size() <= text.size(), "unescaping never grows the text");
    check_xid(record->message);
  }
  const std::size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  neutracer::KmsgSplitter splitter;
  std::size_t taken = 0;
  splitter.feed(text.substr(0, cut));
  for (const auto &record : splitter.take(false)) {
    taken += record.size();
    require(!record.empty() && record.front() != ' ' && record.back() == '\n',
            "a record starts with its header and ends with a newline");
  }
  splitter.feed(text.substr(cut));
  for (const auto &record : splitter.take(true)) {
    taken += record.size();
    require(!record.empty() && record.front() != ' ' && record.back() == '\n',
            "a record starts with its header and ends with a newline");
    if (const auto parsed = neutracer::parse_kmsg_record(record))
      check_xid(parsed->message);
  }
  require(taken <= size, "records are made of the input");
  return 0;
}
