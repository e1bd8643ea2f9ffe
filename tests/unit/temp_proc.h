// SPDX-License-Identifier: Apache-2.0
#pragma once
// A temporary /proc tree for tests: fixture scenarios from tests/fixtures/proc, or files written
// by the test.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace neutracer {

// A temporary directory that acts as a /proc root; removed on destruction.
class TempProc {
public:
  TempProc() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "neutracer-proc-XXXXXX").string();
    char *made = ::mkdtemp(pattern.data());
    if (made == nullptr)
      throw std::runtime_error("mkdtemp failed");
    root_ = made;
  }
  ~TempProc() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  TempProc(const TempProc &) = delete;
  TempProc &operator=(const TempProc &) = delete;

  const std::filesystem::path &root() const { return root_; }

  // Copies a fixture scenario in and adds an `exe` link to every numeric pid directory.
  void copy_scenario(const std::string &scenario) {
    std::filesystem::copy(std::filesystem::path(NEUTRACER_FIXTURES_DIR) / "proc" / scenario, root_,
                          std::filesystem::copy_options::recursive);
    for (const auto &entry : std::filesystem::directory_iterator(root_)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory() && !name.empty() &&
          std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
        std::filesystem::create_symlink("/usr/bin/exe-of-" + name, entry.path() / "exe");
    }
  }

  void write(int pid, const std::string &file, const std::string &text) {
    std::filesystem::create_directories(root_ / std::to_string(pid));
    std::ofstream out(root_ / std::to_string(pid) / file, std::ios::binary | std::ios::trunc);
    out << text;
  }

  void write_stat(int pid, const std::string &comm, std::uint64_t start_ticks) {
    std::string text = std::to_string(pid) + " (" + comm + ") S 1 " + std::to_string(pid);
    for (int field = 6; field <= 21; ++field)
      text += " " + std::to_string(field);
    text += " " + std::to_string(start_ticks) + " 8589934592 51200\n";
    write(pid, "stat", text);
  }

private:
  std::filesystem::path root_;
};

} // namespace neutracer
