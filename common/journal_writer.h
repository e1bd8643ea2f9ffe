// SPDX-License-Identifier: Apache-2.0
#pragma once
// Writes structured entries to the systemd journal. The only file that includes sd-journal.h.
#include <string>
#include <utility>
#include <vector>

namespace neutracer {

struct JournalEntry {
  std::string message_id; // 32 lowercase hex digits, fixed per kind (see the journal catalog)
  int priority = 6;       // syslog priority: 2 critical, 3 error, 4 warning, 6 info
  std::string message;
  std::vector<std::pair<std::string, std::string>> fields; // upper-case journal field names
};

class JournalWriter {
public:
  virtual ~JournalWriter() = default;
  // Returns false when the entry could not be written (no journald); never throws.
  virtual bool write(const JournalEntry &entry) = 0;
};

// Sends through sd_journal_sendv to journald's native socket.
class SystemJournalWriter : public JournalWriter {
public:
  bool write(const JournalEntry &entry) override;
};

} // namespace neutracer
