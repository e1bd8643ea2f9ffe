// SPDX-License-Identifier: Apache-2.0
#pragma once
// A /metrics text of `series` launch counters, as repetitive as a scrape of many processes: for
// the compression tests.
#include <string>

namespace neutracer::test {

inline std::string sample_exposition(int series) {
  std::string text = "# TYPE neutracer_cuda_kernel_launches_total counter\n";
  for (int i = 0; i < series; ++i)
    text += "neutracer_cuda_kernel_launches_total{pid=\"" + std::to_string(1000 + i) +
            "\",kernel=\"vectorized_elementwise_kernel\"} " + std::to_string(i * 7) + "\n";
  return text;
}

} // namespace neutracer::test
