// SPDX-License-Identifier: Apache-2.0
#pragma once
// Runs the real neutracerd and the stand-in scenario program for end-to-end tests, and
// reads /metrics as a map from series to value.
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace neutracer::test {

// Series text as it appears in the exposition (`name{a="b",c="d"}`) -> value.
using Scrape = std::map<std::string, double>;

// A plain HTTP/1.0 GET on 127.0.0.1; nullopt when the connection fails.
struct HttpReply {
  int status = 0;
  std::string headers;
  std::string body;
};
std::optional<HttpReply> http_get(int port, const std::string &path);
// A request without a body: "POST" for the daemon's actions.
std::optional<HttpReply> http_request(int port, const std::string &method, const std::string &path);

Scrape parse_scrape(const std::string &exposition);

// Builds `name{k="v",...}` with labels in the given order, as the daemon renders them.
std::string series(const std::string &name,
                   const std::vector<std::pair<std::string, std::string>> &labels);

int free_tcp_port();

class ChildProcess {
public:
  // Starts argv[0] with stdout on a pipe (read with read_line) and stderr to `stderr_path`.
  ChildProcess(const std::vector<std::string> &argv, const std::string &stderr_path,
               const std::vector<std::string> &extra_env = {});
  ~ChildProcess(); // SIGKILLs the child if still running
  ChildProcess(const ChildProcess &) = delete;
  ChildProcess &operator=(const ChildProcess &) = delete;

  pid_t pid() const { return pid_; }
  // Next stdout line without the newline, nullopt at EOF or after `timeout`.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Reads lines until one starts with `prefix`; returns it.
  std::optional<std::string> wait_for_line(const std::string &prefix,
                                           std::chrono::milliseconds timeout);
  // Sends `signal` and waits; returns the exit status (as from waitpid) or nullopt on timeout.
  std::optional<int> stop(int signal, std::chrono::milliseconds timeout);
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);

private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
  bool exited_ = false;
};

// Polls `condition` every 20 ms until it holds or `timeout` passes.
bool eventually(const std::function<bool()> &condition, std::chrono::milliseconds timeout);

} // namespace neutracer::test
