// SPDX-License-Identifier: Apache-2.0
// The daemon's log under systemd: when stderr is the journal stream (JOURNAL_STREAM names its
// device and inode, as systemd sets it), each record goes to the journal natively with its
// PRIORITY; otherwise logfmt lines go to stderr. journald is the test's own socket
// (JournalCapture), so this runs where no journald does.
#include <fstream>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "daemon_harness.h"
#include "journal_capture.h"

namespace neutracer::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class JournalLoggingE2E : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "privileged: the daemon loads BPF programs";
    dir_ = fs::temp_directory_path() / ("neutracer-journal-log-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    journal_ = std::make_unique<JournalCapture>(dir_ / "journal");
    std::ofstream(dir_ / "empty.yaml") << "\n";
  }
  void TearDown() override {
    if (!HasFailure())
      fs::remove_all(dir_);
  }

  // The JOURNAL_STREAM value that names `path` (ChildProcess truncates, keeping the inode).
  static std::string journal_stream_of(const fs::path &path) {
    std::ofstream(path).flush();
    struct stat info {};
    EXPECT_EQ(::stat(path.c_str(), &info), 0);
    return std::to_string(info.st_dev) + ":" + std::to_string(info.st_ino);
  }

  std::unique_ptr<ChildProcess> start(int port, const std::string &journal_stream,
                                      const std::string &stderr_name) {
    const std::vector<std::string> argv{
        NEUTRACER_DAEMON_PATH, "--config", (dir_ / "empty.yaml").string(),
        "--web.listen-address", "127.0.0.1:" + std::to_string(port), "--log.level", "info"};
    return std::make_unique<ChildProcess>(journal_->wrap(argv), (dir_ / stderr_name).string(),
                                          std::vector<std::string>{"JOURNAL_STREAM=" +
                                                                   journal_stream});
  }

  // The first entry the daemon sent whose MESSAGE contains `text`, if any.
  const JournalFields *entry_with(const std::string &text) {
    for (const auto &entry : journal_->entries()) {
      const auto message = entry.find("MESSAGE");
      if (message != entry.end() && message->second.find(text) != std::string::npos)
        return &entry;
    }
    return nullptr;
  }

  std::string file_text(const std::string &name) const {
    std::ifstream in(dir_ / name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  fs::path dir_;
  std::unique_ptr<JournalCapture> journal_;
};

TEST_F(JournalLoggingE2E, UnderSystemdInfoAndErrorLinesCarryTheirPriority) {
  // A daemon that starts: its "listening" line is an info record (PRIORITY 6).
  const int port = free_tcp_port();
  {
    auto daemon = start(port, journal_stream_of(dir_ / "first.err"), "first.err");
    ASSERT_TRUE(eventually([&] { return entry_with("listening on http://127.0.0.1:") != nullptr; },
                           30s))
        << "stderr: " << file_text("first.err");
    const auto &listening = *entry_with("listening on http://127.0.0.1:");
    EXPECT_EQ(listening.at("PRIORITY"), "6");
    EXPECT_EQ(listening.at("SYSLOG_IDENTIFIER"), "neutracerd");
    EXPECT_NE(listening.at("MESSAGE").find("logging to the journal"), std::string::npos);
    const auto status = daemon->stop(SIGTERM, 45s);
    EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  }
  // Records went to the journal, not as text lines to stderr.
  EXPECT_EQ(file_text("first.err").find("level=info"), std::string::npos) << file_text("first.err");

  // A daemon whose port is taken fails with an error record (PRIORITY 3) and exit code 2.
  const int busy = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(busy, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int busy_port = free_tcp_port();
  address.sin_port = htons(static_cast<std::uint16_t>(busy_port));
  ASSERT_EQ(::bind(busy, reinterpret_cast<sockaddr *>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(busy, 1), 0);
  auto failing = start(busy_port, journal_stream_of(dir_ / "second.err"), "second.err");
  const auto status = failing->wait_exit(45s);
  ::close(busy);
  ASSERT_TRUE(status && WIFEXITED(*status)) << file_text("second.err");
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  const std::string needle = "cannot listen on 127.0.0.1:" + std::to_string(busy_port);
  const auto *error = entry_with(needle);
  ASSERT_NE(error, nullptr) << "stderr: " << file_text("second.err");
  EXPECT_EQ(error->at("PRIORITY"), "3");
}

TEST_F(JournalLoggingE2E, AJournalStreamOfAnotherFileMeansLogfmtOnStderr) {
  // JOURNAL_STREAM inherited from a service by a shell, with stderr elsewhere: not the journal.
  const int port = free_tcp_port();
  auto daemon = start(port, "1:1", "plain.err");
  ASSERT_TRUE(eventually(
      [&] { return file_text("plain.err").find("logging to stderr") != std::string::npos; }, 30s))
      << file_text("plain.err");
  const auto status = daemon->stop(SIGTERM, 45s);
  EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  const auto text = file_text("plain.err");
  EXPECT_NE(text.find(" level=info msg=\"neutracerd "), std::string::npos) << text;
  EXPECT_EQ(entry_with("listening on"), nullptr);
}

TEST_F(JournalLoggingE2E, ConfigErrorsBeforeTheLoggerAreMarkedAsErrorsForJournald) {
  const auto stream = journal_stream_of(dir_ / "config.err");
  ChildProcess daemon({NEUTRACER_DAEMON_PATH, "--config", (dir_ / "empty.yaml").string(),
                       "--log.format", "xml"},
                      (dir_ / "config.err").string(), {"JOURNAL_STREAM=" + stream});
  const auto status = daemon.wait_exit(10s);
  ASSERT_TRUE(status && WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  // journald reads a leading "<3>" as PRIORITY=3 (SyslogLevelPrefix=, on by default).
  EXPECT_EQ(file_text("config.err").rfind("<3>neutracerd: --log.format: invalid value 'xml'", 0),
            0u)
      << file_text("config.err");
}

} // namespace
} // namespace neutracer::test
