// SPDX-License-Identifier: Apache-2.0
#pragma once
// Invariant checks for fuzz targets: a broken invariant aborts, so libFuzzer saves the input
// as a crash just as it does for a sanitizer report.
#include <cstdio>
#include <cstdlib>

namespace neutracer::fuzz {

inline void require(bool holds, const char *invariant) {
  if (holds)
    return;
  std::fprintf(stderr, "fuzz invariant broken: %s\n", invariant);
  std::abort();
}

} // namespace neutracer::fuzz
