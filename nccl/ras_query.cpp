// SPDX-License-Identifier: Apache-2.0
#include "nccl/ras_query.h"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>

#include "nccl/ras_connection.h"

namespace neutracer {

RasReply query_ras_status(const std::string &address, std::chrono::milliseconds timeout) {
  RasReply reply;
  const auto deadline = RasClock::now() + timeout;
  UniqueFd fd = connect_ras(address, deadline, reply.error);
  if (!fd)
    return reply;
  if (!send_all(fd.get(), "SET FORMAT json\nSTATUS\n", deadline)) {
    reply.error = "send failed";
    return reply;
  }
  // Bounded: a status of thousands of ranks is a few MiB.
  constexpr std::size_t kMaxReply = 64u << 20;
  char buffer[16384];
  for (;;) {
    const auto n = ::recv(fd.get(), buffer, sizeof buffer, 0);
    if (n > 0) {
      reply.text.append(buffer, static_cast<std::size_t>(n));
      if (reply.text.size() > kMaxReply) {
        reply.error = "reply over 64 MiB";
        break;
      }
    } else if (n == 0) {
      reply.answered = true; // the server closes the connection after its report
      break;
    } else if (errno == EINTR || (errno == EAGAIN && wait_for_socket(fd.get(), POLLIN, deadline))) {
      continue;
    } else {
      reply.error = errno == EAGAIN ? "no full reply before the timeout" : std::strerror(errno);
      break;
    }
  }
  return reply;
}

} // namespace neutracer
