// SPDX-License-Identifier: Apache-2.0
#include "logging/journal_stream.h"

#include <sys/stat.h>

#include <charconv>
#include <cstdlib>

namespace neutracer {
namespace {

bool parse_decimal(std::string_view text, std::uint64_t &value) {
  if (text.empty())
    return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

} // namespace

bool journal_stream_matches(std::string_view journal_stream, std::uint64_t device,
                            std::uint64_t inode) {
  const auto colon = journal_stream.find(':');
  if (colon == std::string_view::npos)
    return false;
  std::uint64_t named_device = 0;
  std::uint64_t named_inode = 0;
  return parse_decimal(journal_stream.substr(0, colon), named_device) &&
         parse_decimal(journal_stream.substr(colon + 1), named_inode) && named_device == device &&
         named_inode == inode;
}

bool stderr_is_journal_stream() {
  const char *value = std::getenv("JOURNAL_STREAM");
  if (value == nullptr)
    return false;
  struct stat info {};
  if (::fstat(2, &info) != 0)
    return false;
  return journal_stream_matches(value, static_cast<std::uint64_t>(info.st_dev),
                                static_cast<std::uint64_t>(info.st_ino));
}

} // namespace neutracer
