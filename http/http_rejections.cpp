// SPDX-License-Identifier: Apache-2.0
#include "http/http_rejections.h"

#include <string>

#include "exposition/exposition.h"

namespace neutracer {

std::string_view rejection_reason_label(RejectionReason reason) {
  switch (reason) {
  case RejectionReason::concurrency:
    return "concurrency";
  case RejectionReason::unauthorized:
    return "unauthorized";
  case RejectionReason::auth_busy:
    return "auth_busy";
  case RejectionReason::too_large:
    return "too_large";
  case RejectionReason::bad_request:
    return "bad_request";
  }
  return "unknown";
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
