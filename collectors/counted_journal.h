// SPDX-License-Identifier: Apache-2.0
#pragma once
// The journal every collector writes its entries to, counting the ones journald did not take
// (neutracer_alert_journal_errors_total). Without a writer (alerts.journal off) nothing is
// written and nothing fails.
#include <cstdint>

#include "common/journal_writer.h"

namespace neutracer {

class CountedJournal {
public:
  explicit CountedJournal(JournalWriter *writer) : writer_(writer) {}
  void write(const JournalEntry &entry) {
    if (writer_ != nullptr && !writer_->write(entry))
      ++errors_;
  }
  std::uint64_t errors() const { return errors_; }

private:
  JournalWriter *writer_;
  std::uint64_t errors_ = 0;
};

} // namespace neutracer
