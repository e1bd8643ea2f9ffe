// SPDX-License-Identifier: Apache-2.0
#pragma once
// One process image (its address space), held open to tell an exec from a process that lives
// on: an exec keeps the PID and start time, and a program that re-executes itself keeps
// /proc/<pid>/exe and its mapped libraries too. /proc/<pid>/maps opened once refers to the
// address space of that moment; once an exec (or the exit) has dropped it, reading gives nothing.
#include <optional>

#include "common/procfs.h"
#include "common/unique_fd.h"

namespace neutracer {

class ProcessImage {
public:
  // nullopt when the process is gone or its maps cannot be opened.
  static std::optional<ProcessImage> open(const ProcFs &procfs, int pid);

  // True once the image opened is gone: the process exec'd or exited. A read error is not
  // taken as a replacement.
  bool replaced() const;

private:
  explicit ProcessImage(UniqueFd maps) : maps_(std::move(maps)) {}
  UniqueFd maps_;
};

} // namespace neutracer
