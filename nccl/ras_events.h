// SPDX-License-Identifier: Apache-2.0
#pragma once
// The events NCCL's RAS service pushes to a client that sent `MONITOR` (NCCL 2.29 and later;
// docs/nccl.md, "RAS"), in its text format, one line each:
//   [2026-11-30 12:00:00] PEER_DEAD: Process 4242 on node 10.0.0.7 managing GPU 1 <details>
// The peer is "ip<port>" when NCCL does not know the process, and absent for events about no
// peer. Pure: parses a line.
#include <optional>
#include <string>
#include <string_view>

namespace neutracer {

struct RasPeerEvent {
  std::string event; // "PEER_DEAD", "PEER_NEW", ...: upper-case letters, digits and '_'
  std::string host;  // the peer's node; empty when the line names no process
  int pid = -1;
};

// nullopt for a line that is no event (an "OK" or "ERROR: ..." answer, text cut short).
std::optional<RasPeerEvent> parse_ras_event(std::string_view line);

} // namespace neutracer
