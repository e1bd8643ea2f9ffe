// SPDX-License-Identifier: Apache-2.0
#include "journal_capture.h"

#include <cstring>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace neutracer::test {

JournalFields parse_journal_datagram(const std::string &datagram) {
  JournalFields fields;
  std::size_t at = 0;
  while (at < datagram.size()) {
    const auto line_end = datagram.find('\n', at);
    if (line_end == std::string::npos)
      break;
    const std::string line = datagram.substr(at, line_end - at);
    const auto equals = line.find('=');
    if (equals != std::string::npos) {
      fields[line.substr(0, equals)] = line.substr(equals + 1);
      at = line_end + 1;
      continue;
    }
    // Binary-safe form: the name, a newline, a little-endian 64-bit size, the bytes, newline.
    std::uint64_t size = 0;
    if (line_end + 1 + 8 > datagram.size())
      break;
    for (int i = 7; i >= 0; --i)
      size = (size << 8) | static_cast<unsigned char>(datagram[line_end + 1 + i]);
    const std::size_t value_at = line_end + 1 + 8;
    if (value_at + size > datagram.size())
      break;
    fields[line] = datagram.substr(value_at, size);
    at = value_at + size + 1;
  }
  return fields;
}

JournalCapture::JournalCapture(const std::filesystem::path &dir) : dir_(dir) {
  std::filesystem::create_directories(dir_);
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0)
    throw std::runtime_error("socket failed");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = (dir_ / "socket").string();
  ::unlink(path.c_str()); // left by an earlier run kept for inspection
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  if (::bind(fd_, reinterpret_cast<sockaddr *>(&address), sizeof(address)) != 0)
    throw std::runtime_error("bind " + path + ": " + std::strerror(errno));
  // Entries can be large; the default receive buffer would drop a burst.
  const int bytes = 4 << 20;
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

JournalCapture::~JournalCapture() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::vector<std::string> JournalCapture::wrap(const std::vector<std::string> &argv) const {
  std::vector<std::string> wrapped{
      "/usr/bin/unshare",
      "--mount",
      "--propagation",
      "private",
      "--",
      "/bin/sh",
      "-c",
      "mkdir -p /run/systemd/journal && mount --bind \"$0\" /run/systemd/journal && exec \"$@\"",
      dir_.string()};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

const std::vector<JournalFields> &JournalCapture::entries() {
  std::string buffer(1 << 20, '\0');
  while (true) {
    const ssize_t got = ::recv(fd_, buffer.data(), buffer.size(), 0);
    if (got <= 0)
      break;
    entries_.push_back(parse_journal_datagram(buffer.substr(0, static_cast<std::size_t>(got))));
  }
  return entries_;
}

} // namespace neutracer::test
