// SPDX-License-Identifier: Apache-2.0
#include "pystacks/python_version.h"

#include <charconv>

namespace neutracer {
namespace {

// Parses "3.11" at the start of `text`; `rest` gets what follows.
std::optional<PythonVersion> leading_version(std::string_view text, std::string_view &rest) {
  PythonVersion version;
  const char *end = text.data() + text.size();
  auto [after_major, major_error] = std::from_chars(text.data(), end, version.major);
  if (major_error != std::errc() || after_major == end || *after_major != '.')
    return std::nullopt;
  auto [after_minor, minor_error] = std::from_chars(after_major + 1, end, version.minor);
  if (minor_error != std::errc() || after_minor == after_major + 1)
    return std::nullopt;
  if (version.major != 3 || version.minor < 0 || version.minor > 99)
    return std::nullopt;
  rest = text.substr(static_cast<std::size_t>(after_minor - text.data()));
  return version;
}

// ABI flags CPython appends to the version in file names: d (debug), t (free-threaded), m (3.7-).
std::string_view skip_abi_flags(std::string_view rest) {
  while (!rest.empty() && (rest.front() == 'd' || rest.front() == 't' || rest.front() == 'm'))
    rest.remove_prefix(1);
  return rest;
}

} // namespace

std::string PythonVersion::text() const {
  std::string out = std::to_string(major) + "." + std::to_string(minor);
  if (micro >= 0)
    out += "." + std::to_string(micro);
  return out;
}

std::optional<PythonVersion> python_version_from_path(std::string_view path) {
  const auto slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  std::string_view rest;
  if (name.starts_with("libpython")) {
    const auto version = leading_version(name.substr(9), rest);
    if (!version)
      return std::nullopt;
    rest = skip_abi_flags(rest);
    if (rest == ".so" || rest.starts_with(".so."))
      return version;
    return std::nullopt;
  }
  if (name.starts_with("python")) {
    const auto version = leading_version(name.substr(6), rest);
    if (version && skip_abi_flags(rest).empty())
      return version;
  }
  return std::nullopt;
}

std::optional<PythonVersion> python_version_from_hex(std::uint64_t hex) {
  if (hex > 0xffffffff)
    return std::nullopt;
  PythonVersion version;
  version.major = static_cast<int>((hex >> 24) & 0xff);
  version.minor = static_cast<int>((hex >> 16) & 0xff);
  version.micro = static_cast<int>((hex >> 8) & 0xff);
  const unsigned level = (hex >> 4) & 0xf; // 0xA alpha, 0xB beta, 0xC candidate, 0xF final
  if (version.major != 3 || level < 0xa)
    return std::nullopt;
  return version;
}

} // namespace neutracer
