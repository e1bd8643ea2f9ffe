// SPDX-License-Identifier: Apache-2.0
#pragma once
// Asks NCCL's RAS service (docs/nccl.md) for its status: connects to `address` (NCCL's
// NCCL_RAS_ADDR form, "host:port" or "[v6]:port"; NCCL's default "localhost:28028" means the
// first of ::1 and 127.0.0.1 that answers), sends "SET FORMAT json" and "STATUS", and reads
// until the server closes the connection, which ends its reply. Blocking, but never past
// `timeout` in all: run it off the scan.
#include <chrono>
#include <string>

namespace neutracer {

struct RasReply {
  bool answered = false; // something listens and replied before the timeout
  std::string text;      // the whole reply
  std::string error;     // why not: "connection refused" (nothing listens), a timeout, ...
};

RasReply query_ras_status(const std::string &address, std::chrono::milliseconds timeout);

} // namespace neutracer
