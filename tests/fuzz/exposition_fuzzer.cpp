// SPDX-License-Identifier: Apache-2.0
// Fuzzes the text exposition writer with label values and HELP text as traced processes supply
// them (comm, kernel names): the output must stay parseable, and valid UTF-8 values must come
// back unchanged after unescaping. Input: label values separated by NUL, the last is HELP text.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "exposition/exposition.h"
#include "tests/fuzz/exposition_check.h"

using neutracer::fuzz::is_valid_utf8;
using neutracer::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::vector<std::string> parts;
  std::string_view rest(reinterpret_cast<const char *>(data), size);
  while (true) {
    const auto end = rest.find('\0');
    parts.emplace_back(rest.substr(0, end));
    if (end == std::string_view::npos)
      break;
    rest.remove_prefix(end + 1);
  }
  const std::string help = parts.back();
  parts.pop_back();

  neutracer::MetricFamily counter{
      .name = "fuzz_events_total", .help = help, .type = neutracer::MetricType::counter};
  neutracer::MetricFamily histogram{
      .name = "fuzz_wait_seconds", .help = help, .type = neutracer::MetricType::histogram};
  neutracer::Labels labels;
  for (std::size_t i = 0; i < parts.size(); ++i)
    labels.emplace_back("label" + std::to_string(i), parts[i]);
  counter.samples.push_back({labels, static_cast<double>(size)});
  histogram.histograms.push_back({labels, {0.5, 1}, {1, 2}, 1.5, 3});

  std::ostringstream out;
  neutracer::render_text({counter, histogram}, out);
  const auto values = neutracer::fuzz::require_well_formed_exposition(out.str());
  // One sample line, then bucket (0.5, 1, +Inf), _sum and _count lines, each with the labels
  // (the buckets also with le).
  require(values.size() == 6 * parts.size() + 3, "every label of every line was read back");
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (is_valid_utf8(parts[i]))
      require(values[i] == parts[i], "valid UTF-8 label values round-trip");
  return 0;
}
