// SPDX-License-Identifier: Apache-2.0
#pragma once
// Whether stderr is systemd's journal stream. systemd sets JOURNAL_STREAM to "DEVICE:INODE" of
// the socket it connects a service's stdout/stderr to (systemd.exec(5)); a service that finds
// its stderr there may log to the journal natively instead, with a PRIORITY per line. The
// variable alone is not enough: a shell started from the service inherits it with another
// stderr.
#include <cstdint>
#include <string_view>

namespace neutracer {

// Pure: `journal_stream` (the variable's value) names exactly this device and inode.
bool journal_stream_matches(std::string_view journal_stream, std::uint64_t device,
                            std::uint64_t inode);

// Thin: JOURNAL_STREAM from the environment against fstat(2) of file descriptor 2.
bool stderr_is_journal_stream();

} // namespace neutracer
