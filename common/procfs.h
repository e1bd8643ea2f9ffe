#pragma once
// The only code that reads /proc. Tests point it at a fixture tree.
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
  std::vector<int> list_pids() const;

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

private:
  std::filesystem::path root_;
};

} // namespace neutracer
