// SPDX-License-Identifier: Apache-2.0
#include "http/http_request_counts.h"

namespace neutracer {

void HttpRequestCounts::count(std::string_view path, int status) {
  std::string code = status >= 100 && status <= 599 ? std::to_string(status) : "other";
  const std::lock_guard lock(mutex_);
  ++counts_[{std::string(path), std::move(code)}];
}

std::vector<MetricFamily> HttpRequestCounts::families() const {
  MetricFamily requests =
      family("neutracer_http_requests_total",
             "HTTP requests answered, by path (the route, or \"other\") and status code.",
             MetricType::counter);
  const std::lock_guard lock(mutex_);
  for (const auto &[key, value] : counts_)
    requests.samples.push_back(
        {{{"path", key.first}, {"code", key.second}}, static_cast<double>(value)});
  std::vector<MetricFamily> out;
  out.push_back(std::move(requests));
  return out;
}

} // namespace neutracer
