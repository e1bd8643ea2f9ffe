// SPDX-License-Identifier: Apache-2.0
#include "common/procfs.h"

#include <array>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

#include "common/open_file_limit.h"
#include "common/unique_fd.h"

namespace neutracer {
namespace {

// read(2) that retries interrupted calls; -1 on error.
ssize_t read_some(int fd, char *buffer, std::size_t size) {
  ssize_t got = 0;
  do
    got = ::read(fd, buffer, size);
  while (got < 0 && errno == EINTR);
  return got;
}

} // namespace

ProcFs::ProcFs(std::filesystem::path root) : root_(std::move(root)) {}

void ProcFs::note_failure(int error) const {
  if (is_out_of_descriptors(error))
    ++fd_limit_failures_;
}

int ProcFs::open_file(int pid, std::string_view file) const {
  const auto path = root_ / std::to_string(pid) / file;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    note_failure(errno);
  return fd;
}

std::vector<int> ProcFs::list_pids() const { return numeric_entries(root_); }

bool ProcFs::gone(int pid) const {
  struct stat folder {};
  return ::stat((root_ / std::to_string(pid)).c_str(), &folder) != 0 &&
         (errno == ENOENT || errno == ESRCH);
}

std::vector<int> ProcFs::list_thread_ids(int pid) const {
  return numeric_entries(root_ / std::to_string(pid) / "task");
}

std::vector<int> ProcFs::numeric_entries(const std::filesystem::path &directory) const {
  std::vector<int> pids;
  std::error_code ec;
  std::filesystem::directory_iterator it(directory, ec);
  if (ec)
    note_failure(ec.value());
  for (std::filesystem::directory_iterator end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    int pid = 0;
    const auto [ptr, parse_ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (parse_ec == std::errc() && ptr == name.data() + name.size() && pid > 0)
      pids.push_back(pid);
  }
  return pids;
}

std::optional<std::string> ProcFs::read(int pid, std::string_view file,
                                        std::size_t max_bytes) const {
  const UniqueFd fd(open_file(pid, file));
  if (!fd)
    return std::nullopt;
  std::string text;
  std::array<char, 4096> buffer{};
  while (text.size() < max_bytes) {
    const auto got = read_some(fd.get(), buffer.data(), buffer.size());
    if (got < 0)
      return std::nullopt;
    if (got == 0)
      break;
    text.append(buffer.data(), static_cast<std::size_t>(got));
  }
  if (text.size() > max_bytes)
    text.resize(max_bytes);
  return text;
}

bool ProcFs::for_each_line(int pid, std::string_view file,
                           const std::function<void(std::string_view)> &line_fn) const {
  const UniqueFd fd(open_file(pid, file));
  if (!fd)
    return false;
  std::string pending; // the part of a line not yet ended by '\n'
  std::array<char, 16384> buffer{};
  for (;;) {
    const auto got = read_some(fd.get(), buffer.data(), buffer.size());
    if (got <= 0) // a read error ends the file, as std::getline did
      break;
    std::string_view chunk(buffer.data(), static_cast<std::size_t>(got));
    for (auto newline = chunk.find('\n'); newline != std::string_view::npos;
         newline = chunk.find('\n')) {
      if (pending.empty()) {
        line_fn(chunk.substr(0, newline));
      } else {
        pending.append(chunk.substr(0, newline));
        line_fn(pending);
        pending.clear();
      }
      chunk.remove_prefix(newline + 1);
    }
    pending.append(chunk);
  }
  if (!pending.empty())
    line_fn(pending);
  return true;
}

std::optional<std::string> ProcFs::read_link(int pid, std::string_view link) const {
  std::error_code ec;
  auto target = std::filesystem::read_symlink(root_ / std::to_string(pid) / link, ec);
  if (ec)
    return std::nullopt;
  return target.string();
}

std::filesystem::path ProcFs::path_in_process_root(int pid, const std::string &path) const {
  return root_ / std::to_string(pid) / "root" / std::filesystem::path(path).relative_path();
}

std::filesystem::path ProcFs::mapped_file_path(int pid, std::uint64_t start,
                                               std::uint64_t end) const {
  // The kernel names these entries with unpadded lower-case hex, unlike the maps file.
  std::array<char, 2 * 16 + 2> name{};
  const auto written = std::snprintf(name.data(), name.size(), "%" PRIx64 "-%" PRIx64, start, end);
  return root_ / std::to_string(pid) / "map_files" /
         std::string(name.data(), static_cast<std::size_t>(written));
}

} // namespace neutracer
