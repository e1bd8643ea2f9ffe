// SPDX-License-Identifier: Apache-2.0
#pragma once
// A listening TCP socket on 127.0.0.1, at a port the kernel picks: the accepting half of the
// stand-in servers (NCCL's RAS service) that unit tests talk to.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace neutracer::test {

class LoopbackListener {
public:
  explicit LoopbackListener(int backlog = 8) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr *>(&address), sizeof address), 0);
    socklen_t length = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr *>(&address), &length);
    port_ = ntohs(address.sin_port);
    EXPECT_EQ(::listen(fd_, backlog), 0);
  }
  ~LoopbackListener() { ::close(fd_); }
  LoopbackListener(const LoopbackListener &) = delete;
  LoopbackListener &operator=(const LoopbackListener &) = delete;

  int fd() const { return fd_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

private:
  int fd_ = -1;
  int port_ = 0;
};

} // namespace neutracer::test
