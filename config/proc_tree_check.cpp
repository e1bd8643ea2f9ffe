// SPDX-License-Identifier: Apache-2.0
#include "config/proc_tree_check.h"

#include "common/text.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace neutracer {
namespace {

struct DirCloser {
  void operator()(DIR *dir) const { ::closedir(dir); }
};

bool is_directory_entry(DIR *dir, const dirent &entry) {
  if (entry.d_type == DT_DIR)
    return true;
  if (entry.d_type != DT_UNKNOWN) // some file systems leave the type to stat
    return false;
  struct stat info {};
  return ::fstatat(::dirfd(dir), entry.d_name, &info, 0) == 0 && S_ISDIR(info.st_mode);
}

struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

// Whether `<dir>/<pid>/stat` is a regular file that starts "<pid> (". Opened without blocking:
// a named pipe there must not stall the daemon's start.
bool has_own_stat(DIR *dir, const char *pid) {
  const std::string path = std::string(pid) + "/stat";
  const int fd = ::openat(::dirfd(dir), path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return false;
  const FdCloser closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode))
    return false;
  const std::string expected = std::string(pid) + " (";
  std::string start(expected.size(), '\0');
  std::size_t got = 0;
  while (got < start.size()) {
    const ssize_t n = ::read(fd, start.data() + got, start.size() - got);
    if (n <= 0)
      break;
    got += static_cast<std::size_t>(n);
  }
  return got == start.size() && start == expected;
}

} // namespace

std::optional<std::string> check_proc_tree(const std::string &path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return errno == ENOENT ? std::string("does not exist")
                           : std::string("cannot be read: ") + std::strerror(errno);
  if (!S_ISDIR(info.st_mode))
    return "is not a directory";
  const std::unique_ptr<DIR, DirCloser> dir(::opendir(path.c_str()));
  if (!dir)
    return std::string("cannot be read: ") + std::strerror(errno);
  bool any_pid_directory = false;
  errno = 0;
  while (const dirent *entry = ::readdir(dir.get())) {
    if (all_digits(entry->d_name) && is_directory_entry(dir.get(), *entry)) {
      any_pid_directory = true;
      if (has_own_stat(dir.get(), entry->d_name))
        return std::nullopt;
    }
    errno = 0;
  }
  if (errno != 0)
    return std::string("cannot be read: ") + std::strerror(errno);
  if (any_pid_directory)
    return "holds no process directory with its own stat file (such as '1/stat' beginning "
           "\"1 (\"): not a /proc tree";
  return "holds no process directories (numeric names such as '1'): not a /proc tree";
}

} // namespace neutracer
