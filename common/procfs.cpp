#include "common/procfs.h"

#include <array>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <system_error>

namespace neutracer {

ProcFs::ProcFs(std::filesystem::path root) : root_(std::move(root)) {}

std::vector<int> ProcFs::list_pids() const {
  std::vector<int> pids;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
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
  std::ifstream in(root_ / std::to_string(pid) / file, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::string text;
  char buffer[4096];
  while (text.size() < max_bytes && in.read(buffer, sizeof buffer).gcount() > 0)
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
  if (in.bad())
    return std::nullopt;
  if (text.size() > max_bytes)
    text.resize(max_bytes);
  return text;
}

bool ProcFs::for_each_line(int pid, std::string_view file,
                           const std::function<void(std::string_view)> &line_fn) const {
  std::ifstream in(root_ / std::to_string(pid) / file);
  if (!in)
    return false;
  std::string line;
  while (std::getline(in, line))
    line_fn(line);
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
