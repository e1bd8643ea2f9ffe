// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reads the kernel log without blocking: /dev/kmsg (one record per read; a record overwritten
// before it was read answers EPIPE, and the reader goes on with the oldest one left), or a
// stand-in with the same record format, a regular file that is appended to or a FIFO. Records
// are numbered by the kernel: a gap in the numbers counts the lines lost. Thin: the parsing is
// in kmsg_record.h and kmsg_splitter.h.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "kmsg/kmsg_record.h"
#include "kmsg/kmsg_splitter.h"

namespace neutracer {

struct KmsgBatch {
  struct Entry {
    KmsgRecord record;
    // Already in the log when the reader opened it (history, e.g. since boot), as opposed to
    // written while the daemon was reading.
    bool backlog = false;
  };
  std::vector<Entry> records;
  std::uint64_t lost = 0;      // records skipped by the kernel's numbering (overwritten unread)
  std::uint64_t malformed = 0; // records that did not parse
};

class KmsgReader {
public:
  // After a failure to open or read, this many read() calls pass before the next open.
  static constexpr unsigned kReopenAfterCalls = 30;

  explicit KmsgReader(std::string path);

  // What the log holds now, at most `max_records` records; never blocks. Opens the log at the
  // first call and again after a failure.
  KmsgBatch read(std::size_t max_records);

  bool healthy() const { return fd_ && error_.empty(); }
  // Why it is not healthy ("open /dev/kmsg: Permission denied"); empty when it is.
  const std::string &error() const { return error_; }
  const std::string &path() const { return path_; }

private:
  bool open();
  void fail(const std::string &what, int error);
  // Adds one record's text to `batch`, counting gaps in its numbering.
  void accept(std::string_view text, KmsgBatch &batch);

  std::string path_;
  UniqueFd fd_;
  bool record_per_read_ = false; // /dev/kmsg itself (a character device)
  bool caught_up_ = false;       // has read to the end of what the log held at open
  KmsgSplitter splitter_;
  std::optional<std::uint64_t> last_seq_;
  std::optional<std::uint64_t> seen_before_open_; // last_seq_ when the log was (re)opened
  std::string error_;
  unsigned calls_until_open_ = 0;
  std::size_t counted_splitter_drops_ = 0; // of the splitter's drops, those already counted
  std::vector<char> buffer_;
};

} // namespace neutracer
