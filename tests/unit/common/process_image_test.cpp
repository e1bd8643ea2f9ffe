// SPDX-License-Identifier: Apache-2.0
// ProcessImage on real child processes (no root needed: they are ours).
#include "common/process_image.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace neutracer {
namespace {

namespace fs = std::filesystem;

// /bin/sh that says "started", waits for a line, then execs /bin/sh again (the same program, so the
// same /proc/<pid>/exe), which says "execd" and waits for another line before it exits.
class SelfExecingShell {
public:
  SelfExecingShell() {
    int to_child[2], from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0)
      std::abort();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(to_child[0], STDIN_FILENO);
      ::dup2(from_child[1], STDOUT_FILENO);
      ::execl("/bin/sh", "sh", "-c",
              "echo started; read go; exec /bin/sh -c 'echo execd; read done'",
              static_cast<char *>(nullptr));
      _exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    input_ = to_child[1];
    output_ = ::fdopen(from_child[0], "r");
    started_ = read_line() == "started\n";
  }
  ~SelfExecingShell() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    ::close(input_);
    std::fclose(output_);
  }
  SelfExecingShell(const SelfExecingShell &) = delete;
  SelfExecingShell &operator=(const SelfExecingShell &) = delete;

  bool started() const { return started_; } // the first /bin/sh runs
  int pid() const { return pid_; }
  void send_line() { ASSERT_EQ(::write(input_, "x\n", 2), 2); }
  std::string read_line() {
    char line[64] = {};
    return std::fgets(line, sizeof line, output_) ? std::string(line) : std::string();
  }
  std::string exe() const { return fs::read_symlink("/proc/" + std::to_string(pid_) + "/exe"); }

private:
  pid_t pid_ = -1;
  int input_ = -1;
  FILE *output_ = nullptr;
  bool started_ = false;
};

TEST(ProcessImage, ExecOfTheSameProgramIsSeen) {
  const ProcFs procfs;
  SelfExecingShell shell;
  ASSERT_TRUE(shell.started());
  const auto image = ProcessImage::open(procfs, shell.pid());
  ASSERT_TRUE(image.has_value());
  EXPECT_FALSE(image->replaced());
  const auto exe_before = shell.exe();

  shell.send_line();
  ASSERT_EQ(shell.read_line(), "execd\n");
  EXPECT_TRUE(image->replaced());
  EXPECT_EQ(shell.exe(), exe_before) << "same program: exe cannot tell the images apart";

  const auto new_image = ProcessImage::open(procfs, shell.pid());
  ASSERT_TRUE(new_image.has_value());
  EXPECT_FALSE(new_image->replaced());
}

TEST(ProcessImage, ExitedButUnreapedProcessIsReplaced) {
  const ProcFs procfs;
  SelfExecingShell shell;
  ASSERT_TRUE(shell.started());
  shell.send_line();
  ASSERT_EQ(shell.read_line(), "execd\n");
  const auto image = ProcessImage::open(procfs, shell.pid());
  ASSERT_TRUE(image.has_value());
  shell.send_line();
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(shell.pid()), &info, WEXITED | WNOWAIT), 0);
  EXPECT_TRUE(image->replaced());
}

TEST(ProcessImage, MissingProcessHasNoImage) {
  const ProcFs procfs(fs::temp_directory_path() / "neutracer-no-such-proc-root");
  EXPECT_FALSE(ProcessImage::open(procfs, 1).has_value());
}

} // namespace
} // namespace neutracer
