// SPDX-License-Identifier: Apache-2.0
#include "nccl/ras_connection.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <vector>

namespace neutracer {
namespace {

struct Endpoint {
  std::string host;
  std::string port;
};

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

int remaining_ms(RasClock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - RasClock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

using AddressInfo = std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)>;

// Null when the host or port is not numeric.
AddressInfo numeric_address(const Endpoint &endpoint) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo *found = nullptr;
  if (::getaddrinfo(endpoint.host.c_str(), endpoint.port.c_str(), &hints, &found) != 0)
    found = nullptr;
  return AddressInfo(found, &::freeaddrinfo);
}

// Waits for the connect in slices, so that a stop request is heard while a far host is silent.
bool wait_connected(int fd, RasClock::time_point deadline, const std::stop_token &stop) {
  constexpr std::chrono::milliseconds kSlice{200};
  while (!stop.stop_requested()) {
    const auto slice_end = std::min(deadline, RasClock::now() + kSlice);
    if (wait_for_socket(fd, POLLOUT, slice_end))
      return true;
    if (slice_end >= deadline)
      return false;
  }
  return false;
}

UniqueFd connect_to(const Endpoint &endpoint, RasClock::time_point deadline, std::string &error,
                    const std::stop_token &stop) {
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
    if (!wait_connected(fd.get(), deadline, stop)) {
      error = stop.stop_requested() ? "stopped" : "connect timed out";
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

bool wait_for_socket(int fd, short events, RasClock::time_point deadline) {
  pollfd entry{fd, events, 0};
  for (;;) {
    const int ready = ::poll(&entry, 1, remaining_ms(deadline));
    if (ready > 0)
      return true;
    if (ready == 0 || errno != EINTR)
      return false;
  }
}

UniqueFd connect_ras(const std::string &address, RasClock::time_point deadline, std::string &error,
                     const std::stop_token &stop) {
  const auto targets = endpoints(address);
  if (targets.empty()) {
    error = "not host:port: " + address;
    return UniqueFd{};
  }
  for (const auto &target : targets)
    if (auto fd = connect_to(target, deadline, error, stop))
      return fd;
  return UniqueFd{};
}

bool send_all(int fd, std::string_view text, RasClock::time_point deadline) {
  std::size_t sent = 0;
  while (sent < text.size()) {
    const auto n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n > 0)
      sent += static_cast<std::size_t>(n);
    else if (n < 0 && errno == EAGAIN && wait_for_socket(fd, POLLOUT, deadline))
      continue;
    else if (n < 0 && errno == EINTR)
      continue;
    else
      return false;
  }
  return true;
}

} // namespace neutracer
