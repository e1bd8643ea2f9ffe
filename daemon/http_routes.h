#pragma once
// The daemon's HTTP routes (/metrics, /api/v1/*, /memory, /healthz, /): each renders the latest
// snapshot the main loop published. Separate from main() so every route is tested without root.
#include "config/config.h"
#include "exporters/metrics_publisher.h"
#include "http/http_rejections.h"
#include "http/http_server.h"

namespace neutracer {

// The routes over `publisher`, `config` and `rejections`, which must outlive them (the server
// calls them from its workers).
HttpRoutes daemon_routes(const MetricsPublisher &publisher, const Config &config,
                         const HttpRejectionCounters &rejections);

} // namespace neutracer
