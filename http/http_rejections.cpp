// SPDX-License-Identifier: Apache-2.0
#include "http/http_rejections.h"

#include <string>

#include "common/enum_names.h"
#include "exposition/exposition.h"

namespace neutracer {

constexpr std::array<std::string_view, 5> kRejectionReasonLabels = {
    "concurrency", "unauthorized", "auth_busy", "too_large", "bad_request"};
static_assert(kRejectionReasonLabels.size() == enum_count(RejectionReason::bad_request));

std::string_view rejection_reason_label(RejectionReason reason) {
  return enum_name(reason, kRejectionReasonLabels);
}

std::optional<RejectionReason> rejection_reason_for_status(int status) {
  if (status == 413 || status == 414 || status == 431)
    return RejectionReason::too_large;
  // 505: an HTTP version other than 1.0 or 1.1 is a malformed request to this server.
  if ((status >= 400 && status < 500) || status == 505)
    return RejectionReason::bad_request;
  return std::nullopt;
}

std::vector<MetricFamily> http_rejection_families(const HttpRejectionCounters &counters) {
  MetricFamily rejected =
      family("neutracer_http_requests_rejected_total",
             "HTTP requests refused before reaching a handler, by reason.", MetricType::counter);
  for (RejectionReason reason : kRejectionReasons)
    rejected.samples.push_back({{{"reason", std::string(rejection_reason_label(reason))}},
                                static_cast<double>(counters.value(reason))});
  return {rejected};
}

} // namespace neutracer
