// SPDX-License-Identifier: Apache-2.0
#pragma once
// A raw-socket HTTP client for tests against a real HttpServer on 127.0.0.1: bytes exactly as
// written, so malformed requests reach the server unchanged.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace neutracer::http_test {

// Closes a socket when it goes out of scope.
class Socket {
public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(Socket &&other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket &operator=(Socket &&other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  Socket(const Socket &) = delete;
  Socket &operator=(const Socket &) = delete;
  ~Socket() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

private:
  int fd_;
};

// civetweb cannot listen on port 0: find a port the kernel considers free, then release it.
inline int free_port() {
  const Socket socket(::socket(AF_INET, SOCK_STREAM, 0));
  if (!socket.valid())
    return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(socket.fd(), reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
      ::getsockname(socket.fd(), reinterpret_cast<sockaddr *>(&addr), &len) != 0)
    return -1;
  return ntohs(addr.sin_port);
}

// A connected socket whose reads and writes give up after `timeout_seconds`; invalid on failure.
inline Socket connect_to(int port, int timeout_seconds = 5) {
  Socket socket(::socket(AF_INET, SOCK_STREAM, 0));
  if (!socket.valid())
    return socket;
  timeval timeout{timeout_seconds, 0};
  ::setsockopt(socket.fd(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(socket.fd(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(socket.fd(), reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0)
    return Socket();
  return socket;
}

inline bool send_all(const Socket &socket, const std::string &data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const auto n = ::send(socket.fd(), data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0)
      return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads until the peer closes, an error or the socket's timeout.
inline std::string read_all(const Socket &socket) {
  std::string out;
  char buffer[4096];
  while (true) {
    const auto n = ::recv(socket.fd(), buffer, sizeof buffer, 0);
    if (n <= 0)
      break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

// Sends `request` on a new connection and returns everything read until the server closes;
// nullopt when nothing could be sent or read. A server that answers early and closes (a request
// too large) still yields its answer.
inline std::optional<std::string> http_exchange(int port, const std::string &request) {
  const Socket socket = connect_to(port);
  if (!socket.valid())
    return std::nullopt;
  const bool sent = send_all(socket, request);
  std::string response = read_all(socket);
  if (!sent && response.empty())
    return std::nullopt;
  return response;
}

inline std::string get(const std::string &path, const std::string &method = "GET",
                       const std::string &extra_headers = "") {
  return method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers +
         "Connection: close\r\n\r\n";
}

inline std::string status_line(const std::string &response) {
  return response.substr(0, response.find("\r\n"));
}

// The status code of a response ("HTTP/1.1 404 Not Found" -> 404); 0 when there is none.
inline int status_code(const std::string &response) {
  const std::string line = status_line(response);
  if (line.size() < 12 || !line.starts_with("HTTP/"))
    return 0;
  const auto space = line.find(' ');
  return space == std::string::npos ? 0 : std::atoi(line.c_str() + space + 1);
}

// The value of header `name`, or "<absent>".
inline std::string header(const std::string &response, const std::string &name) {
  const std::string head = response.substr(0, response.find("\r\n\r\n"));
  const std::string key = "\r\n" + name + ": ";
  const auto at = head.find(key);
  if (at == std::string::npos)
    return "<absent>";
  const auto start = at + key.size();
  return head.substr(start, head.find("\r\n", start) - start);
}

inline std::string body(const std::string &response) {
  const auto head_end = response.find("\r\n\r\n");
  return head_end == std::string::npos ? "" : response.substr(head_end + 4);
}

} // namespace neutracer::http_test
