// SPDX-License-Identifier: Apache-2.0
#pragma once
// Byte counts for people ("1.50 GiB"): alert summaries, journal messages, the memory page.
#include <cmath>
#include <cstdio>
#include <string>

namespace neutracer {

// Binary units; whole bytes below 1 KiB, else `decimals` digits after the point.
inline std::string human_bytes(double bytes, int decimals) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[48];
  std::snprintf(text, sizeof text, "%.*f %s", unit == 0 ? 0 : decimals, bytes, units[unit]);
  return text;
}

} // namespace neutracer
