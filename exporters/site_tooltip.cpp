// SPDX-License-Identifier: Apache-2.0
#include "exporters/site_tooltip.h"

#include "exporters/html_escape.h"

namespace neutracer {

std::string site_tooltip(const ProcessSitesView *sites, std::int32_t site) {
  if (!sites || site < 0 || static_cast<std::size_t>(site) >= sites->sites.size())
    return {};
  const auto &found = sites->sites[static_cast<std::size_t>(site)];
  if (!found.stack)
    return found.kind == SiteKind::no_stack ? ", stack not stored" : std::string();
  const Frame *frame = headline_frame(*found.stack);
  return frame ? ", from " + html_escape(frame_text(*frame)) : std::string();
}

} // namespace neutracer
