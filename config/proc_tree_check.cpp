// SPDX-License-Identifier: Apache-2.0
#include "config/proc_tree_check.h"

#include "common/text.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
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
  errno = 0;
  while (const dirent *entry = ::readdir(dir.get())) {
    if (all_digits(entry->d_name) && is_directory_entry(dir.get(), *entry))
      return std::nullopt;
    errno = 0;
  }
  if (errno != 0)
    return std::string("cannot be read: ") + std::strerror(errno);
  return "holds no process directories (numeric names such as '1'): not a /proc tree";
}

} // namespace neutracer
