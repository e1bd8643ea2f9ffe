// SPDX-License-Identifier: Apache-2.0
#pragma once
// Stands in for journald: a datagram socket bound where the daemon, in its own mount
// namespace, finds /run/systemd/journal/socket. CI machines may have no journald.
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace neutracer::test {

using JournalFields = std::map<std::string, std::string>;

// Parses one native-protocol datagram: "KEY=value\n" lines, or "KEY\n" + 64-bit little-endian
// length + bytes + "\n" for values with newlines.
JournalFields parse_journal_datagram(const std::string &datagram);

class JournalCapture {
public:
  explicit JournalCapture(const std::filesystem::path &dir);
  ~JournalCapture();
  JournalCapture(const JournalCapture &) = delete;
  JournalCapture &operator=(const JournalCapture &) = delete;

  // The command line that runs `argv` with this socket as journald's.
  std::vector<std::string> wrap(const std::vector<std::string> &argv) const;

  // Entries received so far (drains the socket first).
  const std::vector<JournalFields> &entries();

private:
  std::filesystem::path dir_;
  int fd_ = -1;
  std::vector<JournalFields> entries_;
};

} // namespace neutracer::test
