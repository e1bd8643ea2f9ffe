// SPDX-License-Identifier: Apache-2.0
#include "common/proc_parsers.h"

#include "common/text.h"

#include <sys/sysmacros.h>
#include <vector>

namespace neutracer {
namespace {

// Splits off the next space-separated field, skipping leading spaces.
std::string_view next_field(std::string_view &rest) {
  const auto start = rest.find_first_not_of(' ');
  if (start == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(start);
  const auto end = rest.find(' ');
  const auto field = rest.substr(0, end);
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  return field;
}

} // namespace

std::optional<MapsEntry> parse_maps_line(std::string_view line) {
  // address perms offset dev inode [path]
  std::string_view rest = line;
  const auto range = next_field(rest);
  const auto perms = next_field(rest);
  const auto offset = parse_number<std::uint64_t>(next_field(rest), 16);
  if (perms.empty() || !offset)
    return std::nullopt;
  const auto dash = range.find('-');
  const auto start = parse_number<std::uint64_t>(range.substr(0, dash), 16);
  const auto end = dash == std::string_view::npos
                       ? std::nullopt
                       : parse_number<std::uint64_t>(range.substr(dash + 1), 16);
  if (!start || !end)
    return std::nullopt;
  const auto dev = next_field(rest);
  const auto inode_text = next_field(rest);
  const auto colon = dev.find(':');
  if (colon == std::string_view::npos)
    return std::nullopt;
  const auto major = parse_number<unsigned>(dev.substr(0, colon), 16);
  const auto minor = parse_number<unsigned>(dev.substr(colon + 1), 16);
  const auto inode = parse_number<std::uint64_t>(inode_text);
  if (!major || !minor || !inode)
    return std::nullopt;
  const auto path_start = rest.find_first_not_of(' ');
  if (path_start == std::string_view::npos || *inode == 0)
    return std::nullopt;
  std::string_view path = rest.substr(path_start);
  while (!path.empty() && (path.back() == '\n' || path.back() == '\r'))
    path.remove_suffix(1);
  MapsEntry entry;
  entry.start = *start;
  entry.end = *end;
  entry.offset = *offset;
  entry.executable = perms.size() >= 3 && perms[2] == 'x';
  entry.dev = makedev(*major, *minor);
  entry.inode = *inode;
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.ends_with(kDeleted)) {
    entry.deleted = true;
    path.remove_suffix(kDeleted.size());
  }
  entry.path = std::string(path);
  return entry;
}

namespace {

// `path`'s file is `stem` with nothing after it but version suffixes (".1", ".580.95.05"): not
// libcudart.so for libcuda.so, nor libcuda.so.bak.
bool is_versioned_library(std::string_view path, std::string_view stem) {
  const auto slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (!name.starts_with(stem))
    return false;
  name.remove_prefix(stem.size());
  while (!name.empty()) {
    if (name.front() != '.' || name.size() < 2)
      return false;
    name.remove_prefix(1);
    const auto digits = name.find_first_not_of("0123456789");
    if (digits == 0)
      return false;
    name.remove_prefix(digits == std::string_view::npos ? name.size() : digits);
  }
  return true;
}

} // namespace

bool is_cuda_driver_library(std::string_view path) {
  return is_versioned_library(path, "libcuda.so");
}

bool is_nccl_library(std::string_view path) { return is_versioned_library(path, "libnccl.so"); }

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  ProcStat stat;
  stat.comm = std::string(text.substr(open + 1, close - open - 1));
  std::string_view rest = text.substr(close + 1);
  // Fields after comm start at field 3 (state): index = field number - 3.
  std::vector<std::string_view> fields;
  while (fields.size() < 22) {
    const auto field = next_field(rest);
    if (field.empty())
      break;
    fields.push_back(field);
  }
  if (fields.size() < 20 || fields[0].size() != 1)
    return std::nullopt;
  stat.state = fields[0][0];
  const std::pair<int, std::uint64_t *> required[] = {
      {10, &stat.minor_faults}, {12, &stat.major_faults}, {14, &stat.utime_ticks},
      {15, &stat.stime_ticks},  {20, &stat.num_threads},  {22, &stat.start_ticks}};
  for (const auto &[number, target] : required) {
    const auto value = parse_number<std::uint64_t>(fields[number - 3]);
    if (!value)
      return std::nullopt;
    *target = *value;
  }
  if (fields.size() > 20)
    stat.vsize_bytes = parse_number<std::uint64_t>(fields[20]);
  if (fields.size() > 21)
    stat.rss_pages = parse_number<std::uint64_t>(fields[21]);
  return stat;
}

} // namespace neutracer
