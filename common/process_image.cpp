// SPDX-License-Identifier: Apache-2.0
#include "common/process_image.h"

#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace neutracer {

std::optional<ProcessImage> ProcessImage::open(const ProcFs &procfs, int pid) {
  const auto path = procfs.root() / std::to_string(pid) / "maps";
  UniqueFd maps(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!maps)
    return std::nullopt;
  return ProcessImage(std::move(maps));
}

bool ProcessImage::replaced() const {
  // Reading from offset 0 formats only the first mapping; an address space without users
  // (after an exec or exit) has none, so the read ends at once.
  char first_byte = 0;
  return ::pread(maps_.get(), &first_byte, 1, 0) == 0;
}

} // namespace neutracer
