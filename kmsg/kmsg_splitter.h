// SPDX-License-Identifier: Apache-2.0
#pragma once
// Splits a byte stream in /dev/kmsg's format into records, for stand-ins of the kernel log (a
// regular file or a FIFO) whose reads do not end at record boundaries as /dev/kmsg's do. A
// record is its header line plus the dictionary lines after it (each starting with a space);
// it is complete once the next record's line begins, or when the caller says no more data is
// coming now. Pure; memory bounded.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace neutracer {

class KmsgSplitter {
public:
  // A line longer than this is dropped (counted in oversized()): the kernel's own records are
  // at most about 8 KiB with their dictionary.
  static constexpr std::size_t kMaxRecordBytes = 64 * 1024;

  void feed(std::string_view bytes) { buffer_.append(bytes); }

  // The records complete so far. With `no_more_now`, a record whose last line ended is
  // complete too (a dictionary line written later would be dropped as an orphan).
  std::vector<std::string> take(bool no_more_now);

  std::size_t oversized() const { return oversized_; }
  std::size_t orphan_lines() const { return orphans_; }

private:
  std::string buffer_;
  std::size_t oversized_ = 0;
  std::size_t orphans_ = 0;
  bool skipping_ = false; // inside an oversized line: drop bytes up to its newline
};

} // namespace neutracer
