// SPDX-License-Identifier: Apache-2.0
#include "exposition/exposition.h"

#include "exposition/text_sink.h"

namespace neutracer {

void render_text(const std::vector<MetricFamily> &families, std::string &out) {
  TextSink(out).write(families);
}

void render_text(const std::vector<MetricFamily> &families, std::ostream &out) {
  std::string text;
  render_text(families, text);
  out << text;
}

} // namespace neutracer
