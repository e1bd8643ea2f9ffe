// SPDX-License-Identifier: Apache-2.0
#pragma once
// The daemon's HTTP routes (/metrics, /api/v1/*, /memory, /healthz, /): each renders the latest
// snapshot the main loop published. Separate from main() so every route is tested without root.
#include <functional>
#include <string>

#include "config/config.h"
#include "exporters/metrics_publisher.h"
#include "http/http_rejections.h"
#include "http/http_request_counts.h"
#include "http/http_server.h"

namespace neutracer {

// What the POST routes do, from the server's workers (each must be thread-safe); an empty one
// leaves its route out.
struct DaemonActions {
  // POST /api/v1/processes/<pid>/allocator: opens the allocator view of a traced process
  // (docs/allocator-view.md) at the next scan; false when the view is off.
  std::function<bool(int pid)> open_allocator_view;
};

// The routes over `publisher`, `config`, `rejections` and `requests`, which must outlive them
// (the server calls them from its workers). "/" names the daemon, its version and the host.
HttpRoutes daemon_routes(const MetricsPublisher &publisher, const Config &config,
                         const HttpRejectionCounters &rejections,
                         const HttpRequestCounts &requests, const DaemonActions &actions = {});

// The landing page: name, version, host name (HTML-escaped) and a link to each page.
std::string landing_page(const std::string &version, const std::string &host);

} // namespace neutracer
