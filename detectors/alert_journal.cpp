// SPDX-License-Identifier: Apache-2.0
#include "detectors/alert_journal.h"

#include "common/enum_names.h"

namespace neutracer {
namespace {

// Leaks and fragmentation threaten the job later; OOMs and hangs are stopping it now.
int priority_of(AlertKind kind) {
  switch (kind) {
  case AlertKind::memory_leak:
  case AlertKind::fragmentation:
    return 4; // warning
  case AlertKind::oom:
  case AlertKind::hang:
    return 3; // error
  }
  return 4;
}

} // namespace

constexpr std::array<std::string_view, 4> kAlertMessageIds = {
    "3dd5317340b24af494c60d5f9bde2eba", "8492fad4ca474ede88f6c7ead7aae3ea",
    "300aaf922eb2453baeec2d829451f171", "532415b45116440fa5459ceab6100463"};
static_assert(kAlertMessageIds.size() == enum_count(AlertKind::hang));

std::string_view alert_message_id(AlertKind kind) { return enum_name(kind, kAlertMessageIds); }

JournalEntry journal_entry(const AlertNotice &notice) {
  JournalEntry entry;
  entry.message_id = std::string(alert_message_id(notice.kind));
  entry.priority = priority_of(notice.kind);
  entry.message = std::string(alert_kind_name(notice.kind)) + " in " + notice.comm + " (pid " +
                  std::to_string(notice.id.pid) + "): " + notice.summary;
  entry.fields = {{"ALERT_KIND", std::string(alert_kind_name(notice.kind))},
                  {"TARGET_PID", std::to_string(notice.id.pid)},
                  {"TARGET_COMM", notice.comm}};
  if (!notice.container.identity.id.empty())
    entry.fields.emplace_back("TARGET_CONTAINER", notice.container.identity.id);
  entry.fields.insert(entry.fields.end(), notice.fields.begin(), notice.fields.end());
  return entry;
}

JournalEntry exit_journal_entry(const ExitedProcess &exited) {
  JournalEntry entry;
  entry.message_id = std::string(kExitWithMemoryMessageId);
  entry.priority = 6; // info
  entry.message = exited.comm + " (pid " + std::to_string(exited.id.pid) + ") " +
                  (exited.replaced ? "exec'd a new program" : "exited") + " holding " +
                  std::to_string(exited.gpu_bytes_in_use) +
                  " bytes of GPU memory; the driver frees them";
  entry.fields = {{"TARGET_PID", std::to_string(exited.id.pid)},
                  {"TARGET_COMM", exited.comm},
                  {"GPU_BYTES_IN_USE", std::to_string(exited.gpu_bytes_in_use)},
                  {"REPLACED", exited.replaced ? "1" : "0"}};
  return entry;
}

} // namespace neutracer
