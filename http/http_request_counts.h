// SPDX-License-Identifier: Apache-2.0
#pragma once
// Every answered request by path and status, for neutracer_http_requests_total: how often
// Prometheus, probes and people call the endpoint, and how often they fail.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exposition/exposition.h"

namespace neutracer {

class HttpRequestCounts {
public:
  // `path` is a route or "other", never a client's own path (RequestPipeline decides), so
  // clients cannot create series. Statuses outside 100..599 count as code="other".
  void count(std::string_view path, int status);

  // neutracer_http_requests_total{path,code}; the series of a path appear with its first request.
  std::vector<MetricFamily> families() const;

private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> counts_;
};

} // namespace neutracer
