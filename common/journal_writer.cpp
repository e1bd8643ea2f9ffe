// SPDX-License-Identifier: Apache-2.0
#include "common/journal_writer.h"

#include <sys/uio.h>
#include <systemd/sd-journal.h>

namespace neutracer {

bool SystemJournalWriter::write(const JournalEntry &entry) {
  std::vector<std::string> lines;
  lines.reserve(entry.fields.size() + 4);
  lines.push_back("MESSAGE=" + entry.message);
  lines.push_back("MESSAGE_ID=" + entry.message_id);
  lines.push_back("PRIORITY=" + std::to_string(entry.priority));
  lines.push_back("SYSLOG_IDENTIFIER=neutracerd");
  for (const auto &[name, value] : entry.fields)
    lines.push_back(name + "=" + value);
  std::vector<iovec> vectors;
  vectors.reserve(lines.size());
  for (auto &line : lines)
    vectors.push_back({line.data(), line.size()});
  return sd_journal_sendv(vectors.data(), static_cast<int>(vectors.size())) >= 0;
}

} // namespace neutracer
