// SPDX-License-Identifier: Apache-2.0
#pragma once
// One record of the kernel log as /dev/kmsg gives it: "PRIO,SEQ,USEC,FLAGS[,...];MESSAGE\n",
// then dictionary lines (" KEY=value\n", each starting with a space). Pure.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace neutracer {

struct KmsgRecord {
  int level = 0;          // syslog priority: the low 3 bits of PRIO
  int facility = 0;       // PRIO >> 3 (0: the kernel)
  std::uint64_t seq = 0;  // the kernel's record number; a gap means records were lost
  std::uint64_t usec = 0; // microseconds since boot (the kernel's clock) at the record
  std::string message;    // the text with the kernel's \xNN escapes undone
};

// Parses one record: its header line and any dictionary lines after it (ignored). nullopt when
// the header is malformed (no ';', PRIO/SEQ/USEC not decimal).
std::optional<KmsgRecord> parse_kmsg_record(std::string_view record);

// Undoes the kernel's escaping of the message: "\xNN" becomes the byte NN (a "\x0a" a newline);
// anything else is kept as is.
std::string unescape_kmsg(std::string_view text);

} // namespace neutracer
