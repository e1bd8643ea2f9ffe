// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which CPython a process runs: from the interpreter file's name, or from the `Py_Version`
// constant (3.11+) the interpreter exports.
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace neutracer {

struct PythonVersion {
  int major = 0;
  int minor = 0;
  int micro = -1; // -1 when only the file name told us the version

  std::string text() const; // "3.11" or "3.11.7"
  bool same_minor(const PythonVersion &other) const {
    return major == other.major && minor == other.minor;
  }
  auto operator<=>(const PythonVersion &) const = default;
};

// The interpreter in a mapped file's name: libpython3.11.so.1.0, libpython3.12d.so,
// libpython3.13t.so, python3.10 (a statically linked executable). nullopt for anything else
// (libpython3.so is the stable-ABI shim, not an interpreter).
std::optional<PythonVersion> python_version_from_path(std::string_view path);

// PY_VERSION_HEX as `Py_Version` holds it: 0x030b07f0 is 3.11.7 (final).
std::optional<PythonVersion> python_version_from_hex(std::uint64_t hex);

} // namespace neutracer
