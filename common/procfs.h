// SPDX-License-Identifier: Apache-2.0
#pragma once
// The only code that reads /proc. Tests point it at a fixture tree.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace neutracer {

class ProcFs {
public:
  explicit ProcFs(std::filesystem::path root = "/proc");

  const std::filesystem::path &root() const { return root_; }

  // Numeric entries of the root; never fails (an unreadable root gives an empty list).
  // Every read below that fails gives nothing; one that failed because the daemon had no file
  // descriptor left is also counted in fd_limit_failures(), since it says nothing about the
  // process.
  std::vector<int> list_pids() const;

  // Whether `pid` is certainly gone: its folder is missing. Takes no descriptor (stat), so it
  // still answers when every read above fails for lack of them.
  bool gone(int pid) const;

  // The process's thread ids (/proc/<pid>/task); empty when it is gone.
  std::vector<int> list_thread_ids(int pid) const;

  // Whole file (bounded by max_bytes); nullopt when the process vanished or hides it.
  std::optional<std::string> read(int pid, std::string_view file,
                                  std::size_t max_bytes = 1 << 20) const;

  // Calls `line_fn` for each line of a possibly huge file without holding it whole.
  // Returns false when the file could not be opened.
  bool for_each_line(int pid, std::string_view file,
                     const std::function<void(std::string_view)> &line_fn) const;

  std::optional<std::string> read_link(int pid, std::string_view link) const;

  // Where a path inside the process's mount namespace can be opened from here.
  std::filesystem::path path_in_process_root(int pid, const std::string &path) const;

  // The file behind one mapping (/proc/<pid>/map_files/<start>-<end>), even once it was
  // deleted or replaced on disk. Opening it needs CAP_SYS_ADMIN.
  std::filesystem::path mapped_file_path(int pid, std::uint64_t start, std::uint64_t end) const;

  // Opens that failed with EMFILE or ENFILE since construction; see FdLimitWatch.
  std::uint64_t fd_limit_failures() const { return fd_limit_failures_.load(); }

private:
  std::vector<int> numeric_entries(const std::filesystem::path &directory) const;
  // Opens `<root>/<pid>/<file>`; -1 on failure, counted when descriptors ran out.
  int open_file(int pid, std::string_view file) const;
  void note_failure(int error) const;

  std::filesystem::path root_;
  mutable std::atomic<std::uint64_t> fd_limit_failures_{0};
};

// Whether the ProcFs reads made while it lives ran out of file descriptors: such a failure means
// "not read", where any other means the process exited or hides the file.
class FdLimitWatch {
public:
  explicit FdLimitWatch(const ProcFs &procfs)
      : procfs_(procfs), failures_at_start_(procfs.fd_limit_failures()) {}
  bool hit() const { return procfs_.fd_limit_failures() != failures_at_start_; }

private:
  const ProcFs &procfs_;
  std::uint64_t failures_at_start_;
};

} // namespace neutracer
