// SPDX-License-Identifier: Apache-2.0
#pragma once
// Turns alert notifications into journal entries: one fixed MESSAGE_ID per alert kind (the
// journal catalog, systemd/neutracerd.catalog, explains each), priority and fields.
#include <string_view>

#include "common/journal_writer.h"
#include "cuda/cuda_state.h"
#include "detectors/detector_set.h"

namespace neutracer {

std::string_view alert_message_id(AlertKind kind);
// Process exits holding GPU memory: information, never an alert.
inline constexpr std::string_view kExitWithMemoryMessageId = "52f525da51814e438c19d93e726f2bcd";

JournalEntry journal_entry(const AlertNotice &notice);
JournalEntry exit_journal_entry(const ExitedProcess &exited);

} // namespace neutracer
