// SPDX-License-Identifier: Apache-2.0
#include "exporters/alert_site.h"

#include "exporters/call_sites_json.h"

namespace neutracer {

std::optional<NoticeSite> notice_site(const Site &site) {
  // A wait read while in progress names the program's Python line that waits, before native
  // frames.
  const Frame *frame = !site.waiting_python.empty() ? program_python_frame(site.waiting_python)
                       : site.stack                 ? headline_frame(*site.stack)
                                                    : nullptr;
  if (!frame)
    return std::nullopt;
  NoticeSite notice;
  notice.function = frame->function ? *frame->function : std::string();
  notice.module = frame->module ? *frame->module : std::string();
  notice.location = frame_location(*frame);
  notice.line = frame->kind == FrameKind::python ? frame->line : 0;
  notice.text = frame_text(*frame);
  return notice;
}

} // namespace neutracer
