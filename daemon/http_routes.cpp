// SPDX-License-Identifier: Apache-2.0
#include "daemon/http_routes.h"

#include <charconv>
#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>
#include <utility>

#include "exporters/api_json.h"
#include "exporters/call_sites_json.h"
#include "exporters/flame_graph_page.h"
#include "exporters/html_escape.h"
#include "exporters/memory_timeline_json.h"
#include "exporters/memory_timeline_page.h"
#include "exporters/self_metrics.h"
#include "http/content_encoding.h"
#include "version.h"

namespace neutracer {
namespace {

std::string host_name() {
  char name[256] = "";
  if (gethostname(name, sizeof name - 1) != 0)
    return "unknown";
  return name;
}

std::string comm_of(const PublishedSnapshot &snapshot, const ProcessId &id) {
  const auto found = snapshot.comms.find(id);
  return found == snapshot.comms.end() ? std::string("?") : found->second;
}

// The traced process a request's `pid` names (the newest one with that PID among `processes`),
// or the answer that refuses the request: 400 for a missing or malformed pid, 404 for none.
struct ProcessLookup {
  std::optional<ProcessId> process;
  HttpResponse refusal;
};

template <typename ProcessMap>
ProcessLookup find_process(const ProcessMap &processes, const std::string &query) {
  const auto pid_text = query_parameter(query, "pid");
  int pid = 0;
  const auto [end, error] =
      pid_text ? std::from_chars(pid_text->data(), pid_text->data() + pid_text->size(), pid)
               : std::from_chars_result{nullptr, std::errc::invalid_argument};
  if (!pid_text || error != std::errc() || end != pid_text->data() + pid_text->size() || pid <= 0)
    return {std::nullopt,
            HttpResponse{400, "text/plain; charset=utf-8", "pid must be a positive integer\n", {}}};
  std::optional<ProcessId> found;
  for (const auto &[id, value] : processes)
    if (id.pid == pid)
      found = id; // ordered by start time: the last is the newest
  if (!found)
    return {std::nullopt, HttpResponse{404,
                                       "text/plain; charset=utf-8",
                                       "no traced process with pid " + *pid_text + "\n",
                                       {}}};
  return {found, {}};
}

ProcessLookup traced_process(const PublishedSnapshot &snapshot, const std::string &query) {
  return find_process(snapshot.comms, query);
}

// Renders the timeline of the process the query's `pid` names with `render`.
template <typename Render>
HttpResponse with_timeline(const PublishedSnapshot &snapshot, const std::string &query,
                           Render render) {
  const auto id = find_process(*snapshot.timelines, query);
  if (!id.process)
    return id.refusal;
  return render(*id.process, snapshot.timelines->at(*id.process));
}

// `text`, a member of `snapshot`, shared for as long as a response needs it (the snapshot
// stays alive with it).
std::shared_ptr<const std::string>
shared_text(const std::shared_ptr<const PublishedSnapshot> &snapshot, const std::string &text) {
  return {snapshot, &text};
}

HttpResponse html(std::string page) {
  return HttpResponse{200, "text/html; charset=utf-8", std::move(page), {}};
}

HttpResponse json(std::string document) {
  return HttpResponse{200, "application/json", std::move(document), {}};
}

// A JSON document the snapshot keeps gzipped, or `absent` before a scan made one. Unpacked per
// request (~10 ms for 6 MB): a client that asks for gzip gets it compressed again, as every
// other answer.
HttpResponse gzipped_json(const std::shared_ptr<const std::string> &gzipped,
                          const std::string &absent) {
  return json(gzipped ? gunzip(*gzipped) : absent);
}

// The call sites recorded for `id`: none when the recorder holds none for it.
const ProcessSitesView &sites_of(const PublishedSnapshot &snapshot, const ProcessId &id) {
  static const ProcessSitesView kNoSites;
  const auto found = snapshot.sites->find(id);
  return found == snapshot.sites->end() ? kNoSites : *found->second;
}

// The allocator view of `id` (open, or its last), null when it had none.
const AllocatorViewSummary *allocator_view_of(const PublishedSnapshot &snapshot,
                                              const ProcessId &id) {
  const auto found = snapshot.allocator_views->find(id);
  return found == snapshot.allocator_views->end() ? nullptr : &found->second;
}

} // namespace

std::string landing_page(const std::string &version, const std::string &host) {
  const std::string title = "neutracerd " + html_escape(version) + " on " + html_escape(host);
  return R"(<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>)" +
         title + R"(</title></head>
<body><h1>)" +
         title +
         R"(</h1>
<p>CUDA tracing exporter for Prometheus.</p>
<ul><li><a href="/metrics">/metrics</a></li><li><a href="/api/v1/kernels">/api/v1/kernels</a></li>
<li><a href="/api/v1/processes">/api/v1/processes</a></li>
<li><a href="/api/v1/alerts">/api/v1/alerts</a></li>
<li><a href="/memory">/memory</a> (GPU memory timeline per process; JSON: /api/v1/memory?pid=N)</li>
<li><a href="/flame">/flame</a> (call sites per process, as flame graphs; JSON at
/api/v1/processes/&lt;pid&gt;/sites)</li>
<li><a href="/healthz">/healthz</a></li></ul></body></html>
)";
}

HttpRoutes daemon_routes(const MetricsPublisher &publisher, const Config &config,
                         const HttpRejectionCounters &rejections, const HttpRequestCounts &requests,
                         const DaemonActions &actions) {
  const auto stale_after = 3 * config.scan_interval + std::chrono::seconds(5);
  HttpRoutes routes{
      {"/",
       [page = landing_page(kVersion, host_name())](const std::string &) { return html(page); }},
      {"/metrics",
       [&publisher, &rejections, &requests, proc_root = config.proc_root](const std::string &) {
         // The scan's text is sent from the snapshot, where it is kept deflated (gzip clients
         // get it as it is): only the daemon's own families are rendered per scrape.
         const auto snapshot = publisher.latest();
         std::string own;
         render_text(self_process_families(proc_root), own);
         render_text(http_rejection_families(rejections), own);
         render_text(requests.families(), own);
         return HttpResponse{200, kTextContentType, std::move(own),
                             {},  nullptr,          snapshot->metrics_deflated};
       }},
      {"/api/v1/kernels",
       [&publisher](const std::string &) {
         return gzipped_json(publisher.latest()->kernels_json_gzip, "");
       }},
      {"/api/v1/processes",
       [&publisher](const std::string &) {
         return gzipped_json(publisher.latest()->processes_json_gzip, kNoProcessesJson);
       }},
      {"/api/v1/alerts",
       [&publisher](const std::string &) {
         const auto snapshot = publisher.latest();
         return HttpResponse{
             200, "application/json", {}, {}, shared_text(snapshot, snapshot->alerts_json)};
       }},
      {"/api/v1/processes/{pid}/sites",
       [&publisher](const std::string &query) {
         const auto snapshot = publisher.latest();
         const auto id = traced_process(*snapshot, query);
         if (!id.process)
           return id.refusal;
         return json(call_sites_json(*id.process, snapshot->comms.at(*id.process),
                                     sites_of(*snapshot, *id.process), snapshot->stacks,
                                     allocator_view_of(*snapshot, *id.process)));
       }},
      {"/flame",
       [&publisher](const std::string &query) {
         const auto snapshot = publisher.latest();
         if (!query_parameter(query, "pid"))
           return html(flame_graph_index(*snapshot->sites, snapshot->comms));
         const auto id = traced_process(*snapshot, query);
         if (!id.process)
           return id.refusal;
         const auto &sites = sites_of(*snapshot, *id.process);
         const auto by = query_parameter(query, "by");
         const auto weight = by ? parse_flame_weight(*by) : default_flame_weight(sites);
         if (!weight)
           return HttpResponse{400,
                               "text/plain; charset=utf-8",
                               "by must be live_bytes, allocated_bytes, failed_allocations, "
                               "launch_samples or wait_seconds\n",
                               {}};
         return html(
             flame_graph_page(*id.process, snapshot->comms.at(*id.process), sites, *weight));
       }},
      {"/memory",
       [&publisher](const std::string &query) {
         const auto snapshot = publisher.latest();
         if (!query_parameter(query, "pid"))
           return html(memory_timeline_index(*snapshot->timelines, snapshot->comms));
         return with_timeline(*snapshot, query, [&](const ProcessId &id, const auto &timeline) {
           return html(memory_timeline_page(
               id, comm_of(*snapshot, id), timeline, snapshot->clock,
               snapshot->sites->count(id) ? snapshot->sites->at(id).get() : nullptr,
               allocator_view_of(*snapshot, id)));
         });
       }},
      {"/api/v1/memory",
       [&publisher](const std::string &query) {
         const auto snapshot = publisher.latest();
         return with_timeline(*snapshot, query, [&](const ProcessId &id, const auto &timeline) {
           return json(memory_timeline_json(id, comm_of(*snapshot, id), timeline, snapshot->clock,
                                            allocator_view_of(*snapshot, id)));
         });
       }},
      {"/healthz",
       [&publisher, stale_after](const std::string &) {
         const auto snapshot = publisher.latest();
         // Not healthy before the first scan: a scrape then would lack every CUDA series.
         if (!snapshot->from_a_scan)
           return HttpResponse{
               503, "text/plain; charset=utf-8", "starting: first scan running\n", {}};
         const auto age = std::chrono::steady_clock::now() - snapshot->published_at;
         if (age > stale_after)
           return HttpResponse{503, "text/plain; charset=utf-8", "main loop stalled\n", {}};
         return HttpResponse{200, "text/plain; charset=utf-8", "ok\n", {}};
       }},
  };
  if (actions.open_allocator_view)
    routes.emplace(std::string(kPostRoute) + "/api/v1/processes/{pid}/allocator",
                   [&publisher, open = actions.open_allocator_view](const std::string &query) {
                     const auto snapshot = publisher.latest();
                     const auto id = traced_process(*snapshot, query);
                     if (!id.process)
                       return id.refusal;
                     if (!open(id.process->pid))
                       return HttpResponse{409,
                                           "text/plain; charset=utf-8",
                                           "the allocator view is off (allocator.enabled)\n",
                                           {}};
                     return HttpResponse{202,
                                         "application/json",
                                         "{\"pid\": " + std::to_string(id.process->pid) +
                                             ", \"allocator_view\": \"requested\"}\n",
                                         {}};
                   });
  return routes;
}

} // namespace neutracer
