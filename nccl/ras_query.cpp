// SPDX-License-Identifier: Apache-2.0
#include "nccl/ras_query.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "common/unique_fd.h"

namespace neutracer {
namespace {

using Clock = std::chrono::steady_clock;

struct Endpoint {
  std::string host;
  std::string port;
};

// "host:port", "[v6]:port"; "localhost" is tried as ::1, then 127.0.0.1, as NCCL binds either.
std::vector<Endpoint> endpoints(const std::string &address) {
  std::string host, port;
  if (address.starts_with('[')) {
    const auto close = address.find("]:");
    if (close == std::string::npos)
      return {};
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    const auto colon = address.rfind(':');
    if (colon == std::string::npos)
      return {};
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  if (host == "localhost")
    return {{"::1", port}, {"127.0.0.1", port}};
  return {{host, port}};
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Waits for `events` on `fd` until `deadline`; false on timeout or error.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  pollfd entry{fd, events, 0};
  for (;;) {
    const int ready = ::poll(&entry, 1, remaining_ms(deadline));
    if (ready > 0)
      return true;
    if (ready == 0 || errno != EINTR)
      return false;
  }
}

using AddressInfo = std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)>;

// The endpoint as a socket address; null when its host or port is not numeric (no name
// lookups: a poll must not block on DNS).
AddressInfo numeric_address(const Endpoint &endpoint) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo *found = nullptr;
  if (::getaddrinfo(endpoint.host.c_str(), endpoint.port.c_str(), &hints, &found) != 0)
    found = nullptr;
  return AddressInfo(found, &::freeaddrinfo);
}

// A connected non-blocking socket to `endpoint`; empty, with `error` set, when none.
UniqueFd connect_to(const Endpoint &endpoint, Clock::time_point deadline, std::string &error) {
  const auto found = numeric_address(endpoint);
  if (!found) {
    error = "not a numeric address: " + endpoint.host + ":" + endpoint.port;
    return UniqueFd{};
  }
  UniqueFd fd(::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    error = std::strerror(errno);
    return fd;
  }
  const int rc = ::connect(fd.get(), found->ai_addr, found->ai_addrlen);
  int so_error = rc == 0 ? 0 : errno;
  if (so_error == EINPROGRESS) {
    if (!wait_for(fd.get(), POLLOUT, deadline)) {
      error = "connect timed out";
      return UniqueFd{};
    }
    socklen_t length = sizeof so_error;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &length);
  }
  if (so_error != 0) {
    error = std::strerror(so_error);
    return UniqueFd{};
  }
  return fd;
}

} // namespace

RasReply query_ras_status(const std::string &address, std::chrono::milliseconds timeout) {
  RasReply reply;
  const auto deadline = Clock::now() + timeout;
  const auto targets = endpoints(address);
  if (targets.empty()) {
    reply.error = "not host:port: " + address;
    return reply;
  }
  UniqueFd fd;
  for (const auto &target : targets)
    if ((fd = connect_to(target, deadline, reply.error)))
      break;
  if (!fd)
    return reply;
  constexpr std::string_view kRequest = "SET FORMAT json\nSTATUS\n";
  std::size_t sent = 0;
  while (sent < kRequest.size()) {
    const auto n = ::send(fd.get(), kRequest.data() + sent, kRequest.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EAGAIN && wait_for(fd.get(), POLLOUT, deadline)) {
      continue;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      reply.error = "send failed";
      return reply;
    }
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
    } else if (errno == EINTR || (errno == EAGAIN && wait_for(fd.get(), POLLIN, deadline))) {
      continue;
    } else {
      reply.error = errno == EAGAIN ? "no full reply before the timeout" : std::strerror(errno);
      break;
    }
  }
  return reply;
}

} // namespace neutracer
