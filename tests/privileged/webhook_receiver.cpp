// SPDX-License-Identifier: Apache-2.0
#include "webhook_receiver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace neutracer::test {
namespace {

// Reads one request (headers, then Content-Length bytes) and returns its body.
std::string read_request(int fd) {
  std::string data;
  char buffer[4096];
  std::size_t body_start = std::string::npos, length = 0;
  while (true) {
    pollfd waiting{fd, POLLIN, 0};
    if (poll(&waiting, 1, 5000) <= 0)
      break;
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0)
      break;
    data.append(buffer, static_cast<std::size_t>(n));
    if (body_start == std::string::npos) {
      const auto end = data.find("\r\n\r\n");
      if (end == std::string::npos)
        continue;
      body_start = end + 4;
      for (const char *name : {"Content-Length: ", "content-length: "}) {
        const auto at = data.find(name);
        if (at != std::string::npos && at < end)
          length = std::stoul(data.substr(at + std::string(name).size()));
      }
    }
    if (data.size() >= body_start + length)
      return data.substr(body_start, length);
  }
  return {};
}

} // namespace

WebhookReceiver::WebhookReceiver() {
  listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr *>(&address), size) != 0 ||
      listen(listener_, 16) != 0 ||
      getsockname(listener_, reinterpret_cast<sockaddr *>(&address), &size) != 0)
    throw std::runtime_error("webhook receiver: cannot listen on 127.0.0.1");
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { serve(); });
}

WebhookReceiver::~WebhookReceiver() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  thread_.join();
  close(listener_);
}

std::vector<Notification> WebhookReceiver::notifications() const {
  std::lock_guard lock(mutex_);
  return notifications_;
}

void WebhookReceiver::serve() {
  while (true) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_)
        return;
    }
    pollfd waiting{listener_, POLLIN, 0};
    if (poll(&waiting, 1, 100) <= 0)
      continue;
    const int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0)
      continue;
    std::string body = read_request(client);
    const auto received = std::chrono::steady_clock::now();
    static const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    [[maybe_unused]] const auto written = write(client, kOk.data(), kOk.size());
    close(client);
    std::lock_guard lock(mutex_);
    notifications_.push_back({received, std::move(body)});
  }
}

} // namespace neutracer::test
