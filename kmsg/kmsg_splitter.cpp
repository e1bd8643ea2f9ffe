// SPDX-License-Identifier: Apache-2.0
#include "kmsg/kmsg_splitter.h"

namespace neutracer {

std::vector<std::string> KmsgSplitter::take(bool no_more_now) {
  std::vector<std::string> records;
  std::size_t start = 0; // of the record being assembled in buffer_
  std::size_t pos = 0;   // of the next line
  bool have_record = false;
  while (pos < buffer_.size()) {
    const auto newline = buffer_.find('\n', pos);
    if (skipping_) {
      if (newline == std::string::npos) {
        pos = buffer_.size();
        start = pos;
        break;
      }
      skipping_ = false;
      pos = start = newline + 1;
      continue;
    }
    if (newline == std::string::npos) {
      // A line still being written; if it starts a new record, the one before is complete.
      if (have_record && buffer_[pos] != ' ') {
        records.emplace_back(buffer_, start, pos - start);
        start = pos;
        have_record = false;
      }
      break;
    }
    const bool continuation = buffer_[pos] == ' ';
    if (continuation && !have_record) {
      ++orphans_; // a dictionary line whose record was already taken
      pos = start = newline + 1;
      continue;
    }
    if (!continuation && have_record) {
      records.emplace_back(buffer_, start, pos - start);
      start = pos;
    }
    have_record = true;
    pos = newline + 1;
  }
  if (have_record && no_more_now && pos > start) {
    // Everything up to `pos` is whole lines: the last record is complete.
    records.emplace_back(buffer_, start, pos - start);
    start = pos;
    have_record = false;
  }
  buffer_.erase(0, start);
  if (buffer_.size() > kMaxRecordBytes) {
    ++oversized_;
    const bool ends_in_line = buffer_.back() == '\n';
    buffer_.clear();
    skipping_ = !ends_in_line;
  }
  return records;
}

} // namespace neutracer
