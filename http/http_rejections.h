// SPDX-License-Identifier: Apache-2.0
#pragma once
// Requests the HTTP endpoint refused, by reason, for neutracer_http_requests_rejected_total.
#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "exposition/exposition.h"

namespace neutracer {

enum class RejectionReason {
  concurrency,  // 503: max_concurrent_requests already in progress
  unauthorized, // 401: missing or wrong basic-auth credentials
  auth_busy,    // 429: uncached credentials while every bcrypt slot was busy
  too_large,    // 413/414/431 from civetweb: request line or headers over max_request_size
  bad_request,  // 400 and other protocol errors: garbage, bad method or path, a body on GET
};

inline constexpr std::array kRejectionReasons = {
    RejectionReason::concurrency, RejectionReason::unauthorized, RejectionReason::auth_busy,
    RejectionReason::too_large, RejectionReason::bad_request};

std::string_view rejection_reason_label(RejectionReason reason);

// The reason behind an error status that civetweb sends by itself (before any handler runs),
// or nullopt for statuses that do not refuse a request.
std::optional<RejectionReason> rejection_reason_for_status(int status);

class HttpRejectionCounters {
public:
  void count(RejectionReason reason) { counts_[index(reason)].fetch_add(1); }
  std::uint64_t value(RejectionReason reason) const { return counts_[index(reason)].load(); }

private:
  static std::size_t index(RejectionReason reason) { return static_cast<std::size_t>(reason); }
  std::array<std::atomic<std::uint64_t>, kRejectionReasons.size()> counts_{};
};

// neutracer_http_requests_rejected_total{reason}, every reason present from the start.
std::vector<MetricFamily> http_rejection_families(const HttpRejectionCounters &counters);

} // namespace neutracer
