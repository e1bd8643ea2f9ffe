// SPDX-License-Identifier: Apache-2.0
// Every route the daemon serves (daemon_routes), over snapshots built here: no root, no BPF.
#include "daemon/http_routes.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "http/content_encoding.h"
#include "version.h"

namespace neutracer {
namespace {

using namespace std::chrono_literals;

const ProcessId kTraced{4242, 77};

class DaemonRoutesTest : public ::testing::Test {
protected:
  DaemonRoutesTest() { config.scan_interval = 1000ms; }

  // A snapshot as the main loop publishes it after a scan `age` ago.
  void publish_scan(std::chrono::steady_clock::duration age = 0s) {
    auto snapshot = std::make_shared<PublishedSnapshot>();
    MetricFamily up = family("neutracer_test_up", "A test gauge.", MetricType::gauge);
    up.samples.push_back({{}, 1});
    std::string text;
    render_text({up}, text);
    snapshot->metrics_deflated = std::make_shared<const DeflatedText>(deflate_text(text));
    snapshot->kernels_json_gzip =
        std::make_shared<const std::string>(gzip_compress("{\"kernels\": \"k\"}\n"));
    snapshot->processes_json_gzip =
        std::make_shared<const std::string>(gzip_compress("{\"processes\": [\"p\"]}\n"));
    snapshot->alerts_json = "{\"active\": [\"a\"], \"recent\": []}\n";
    auto timelines = std::make_shared<std::map<ProcessId, ProcessTimeline>>();
    ProcessTimeline timeline;
    timeline.blocks.push_back({0x7f0000, 2 << 20, 1000, 0});
    timeline.blocks.push_back({0x900000, 4096, 2000, 3000});
    timeline.failures.push_back({4000, 1ull << 40});
    (*timelines)[kTraced] = timeline;
    snapshot->timelines = timelines;
    snapshot->comms[kTraced] = "trainer";
    snapshot->clock = {1'700'000'003.5, 5000};
    auto sites = std::make_shared<std::map<ProcessId, std::shared_ptr<const ProcessSitesView>>>();
    ProcessSitesView view;
    Site site;
    Frame frame;
    frame.function = std::make_shared<const std::string>("leak_here");
    frame.module = std::make_shared<const std::string>("/opt/trainer");
    site.stack =
        std::make_shared<const SymbolizedStack>(SymbolizedStack{{frame}, StackEnd::complete});
    site.counts.live_bytes = 4096;
    view.sites.push_back(site);
    (*sites)[kTraced] = std::make_shared<const ProcessSitesView>(view);
    snapshot->sites = sites;
    snapshot->stacks = {true, 64, 1000};
    snapshot->published_at = std::chrono::steady_clock::now() - age;
    snapshot->from_a_scan = true;
    publisher.publish(snapshot);
  }

  // The answer with its shared prefix and body joined, as a client receives them.
  HttpResponse get(const std::string &path, const std::string &query = "") {
    auto response = answer(path, query);
    response.body = response.whole_body();
    response.shared_prefix = nullptr;
    response.deflated_prefix = nullptr;
    return response;
  }
  HttpResponse answer(const std::string &path, const std::string &query = "") {
    return route("GET", path, daemon_routes(publisher, config, rejections, requests), query);
  }

  MetricsPublisher publisher;
  Config config;
  HttpRejectionCounters rejections;
  HttpRequestCounts requests;
};

TEST_F(DaemonRoutesTest, IndexLinksEveryPage) {
  const auto response = get("/");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "text/html; charset=utf-8");
  for (const char *path : {"/metrics", "/api/v1/kernels", "/api/v1/processes", "/api/v1/alerts",
                           "/memory", "/flame", "/healthz"})
    EXPECT_NE(response.body.find("href=\"" + std::string(path) + "\""), std::string::npos) << path;
}

TEST_F(DaemonRoutesTest, IndexNamesTheDaemonItsVersionAndTheHost) {
  char host[256] = "";
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  const auto body = get("/").body;
  EXPECT_NE(body.find("<title>neutracerd " + std::string(kVersion) + " on " + host + "</title>"),
            std::string::npos)
      << body;
}

TEST(LandingPage, EscapesTheHostName) {
  const auto page = landing_page("1.0", "<script>\"&");
  EXPECT_EQ(page.find("<script>"), std::string::npos);
  EXPECT_NE(page.find("neutracerd 1.0 on &lt;script&gt;&quot;&amp;"), std::string::npos) << page;
}

TEST_F(DaemonRoutesTest, MetricsCountRequestsByPathAndCode) {
  publish_scan();
  requests.count("/healthz", 200);
  requests.count("other", 404);
  const auto body = get("/metrics").body;
  EXPECT_NE(body.find("# TYPE neutracer_http_requests_total counter\n"), std::string::npos);
  EXPECT_NE(body.find("neutracer_http_requests_total{path=\"/healthz\",code=\"200\"} 1\n"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("neutracer_http_requests_total{path=\"other\",code=\"404\"} 1\n"),
            std::string::npos);
}

TEST_F(DaemonRoutesTest, MetricsHoldTheSnapshotTheProcessAndTheRejections) {
  publish_scan();
  rejections.count(RejectionReason::auth_busy);
  const auto response = get("/metrics");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, kTextContentType);
  EXPECT_NE(response.body.find("neutracer_test_up 1\n"), std::string::npos) << response.body;
  EXPECT_NE(response.body.find("process_resident_memory_bytes"), std::string::npos);
  EXPECT_NE(response.body.find("neutracer_http_requests_rejected_total{reason=\"auth_busy\"} 1\n"),
            std::string::npos);
}

// Megabytes at 1 000 processes: sent from the snapshot, never copied per request (the /metrics
// text and the JSON documents are kept compressed; the documents are unpacked per request).
TEST_F(DaemonRoutesTest, MetricsAndAlertsShareTheSnapshotsText) {
  publish_scan();
  const auto snapshot = publisher.latest();
  const auto metrics = answer("/metrics");
  EXPECT_EQ(metrics.deflated_prefix.get(), snapshot->metrics_deflated.get());
  EXPECT_TRUE(metrics.body.starts_with("# HELP process_")) << metrics.body; // the daemon's own
  EXPECT_EQ(answer("/api/v1/alerts").shared_prefix.get(), &snapshot->alerts_json);
}

TEST_F(DaemonRoutesTest, AnAnswerKeepsItsTextPastTheNextPublish) {
  publish_scan();
  const std::weak_ptr<const DeflatedText> first_text = publisher.latest()->metrics_deflated;
  const std::weak_ptr<const PublishedSnapshot> first = publisher.latest();
  auto metrics = answer("/metrics");
  auto alerts = answer("/api/v1/alerts");
  publish_scan();
  // /metrics holds the deflated text alone, not the snapshot; /api/v1/alerts the snapshot.
  EXPECT_FALSE(first.expired());
  EXPECT_EQ(*alerts.shared_prefix, "{\"active\": [\"a\"], \"recent\": []}\n");
  alerts.shared_prefix = nullptr;
  EXPECT_TRUE(first.expired());
  EXPECT_FALSE(first_text.expired());
  EXPECT_TRUE(inflate_text(*metrics.deflated_prefix).starts_with("# HELP neutracer_test_up"));
  metrics.deflated_prefix = nullptr;
  EXPECT_TRUE(first_text.expired());
}

TEST_F(DaemonRoutesTest, JsonPagesServeTheSnapshotAsPublished) {
  publish_scan();
  EXPECT_EQ(get("/api/v1/kernels").body, "{\"kernels\": \"k\"}\n");
  EXPECT_EQ(get("/api/v1/processes").body, "{\"processes\": [\"p\"]}\n");
  EXPECT_EQ(get("/api/v1/alerts").body, "{\"active\": [\"a\"], \"recent\": []}\n");
  for (const char *path : {"/api/v1/kernels", "/api/v1/processes", "/api/v1/alerts"}) {
    EXPECT_EQ(get(path).status, 200) << path;
    EXPECT_EQ(get(path).content_type, "application/json") << path;
  }
}

TEST_F(DaemonRoutesTest, PagesBeforeTheFirstScanServeThePlaceholder) {
  EXPECT_EQ(get("/metrics").status, 200);
  EXPECT_EQ(get("/api/v1/kernels").status, 200);
  EXPECT_EQ(get("/api/v1/kernels").body, "");
  EXPECT_EQ(get("/api/v1/processes").body, "{\"processes\": []}\n");
  EXPECT_EQ(get("/memory").status, 200);
  EXPECT_EQ(get("/memory", "pid=4242").status, 404);
}

TEST_F(DaemonRoutesTest, MemoryListsProcessesAndServesATracedOne) {
  publish_scan();
  const auto index = get("/memory");
  EXPECT_EQ(index.status, 200);
  EXPECT_NE(index.body.find("4242"), std::string::npos) << index.body;
  const auto page = get("/memory", "pid=4242");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("trainer"), std::string::npos);
  EXPECT_EQ(get("/memory", "x=1&pid=4242").status, 200);
}

TEST_F(DaemonRoutesTest, MemoryJsonListsEveryBlockAndFailure) {
  publish_scan();
  const auto response = get("/api/v1/memory", "pid=4242");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "application/json");
  for (const char *part :
       {"\"pid\":4242", "\"comm\":\"trainer\"", "\"now_ns\":5000",
        "\"now_unix_seconds\":1700000003.5",
        "{\"address\":8323072,\"allocated_ns\":1000,\"bytes\":2097152,\"freed_ns\":0}",
        "{\"address\":9437184,\"allocated_ns\":2000,\"bytes\":4096,\"freed_ns\":3000}",
        "\"failures\":[{\"bytes\":1099511627776,\"time_ns\":4000}]"})
    EXPECT_NE(response.body.find(part), std::string::npos) << part << "\n" << response.body;
  EXPECT_EQ(get("/api/v1/memory", "pid=4243").status, 404);
  EXPECT_EQ(get("/api/v1/memory", "pid=x").status, 400);
  EXPECT_EQ(get("/api/v1/memory").status, 400) << "the JSON form has no index";
}

TEST_F(DaemonRoutesTest, MemoryOfAnUntracedPidIs404) {
  publish_scan();
  for (const char *pid : {"1", "4243", "2147483647"}) {
    const auto response = get("/memory", std::string("pid=") + pid);
    EXPECT_EQ(response.status, 404) << pid;
    EXPECT_EQ(response.body, std::string("no traced process with pid ") + pid + "\n");
  }
}

TEST_F(DaemonRoutesTest, MemoryPidMustBeAPositiveIntThatFits) {
  publish_scan();
  for (const char *pid : {"0", "-1", "-4242", "2147483648", "99999999999999999999", "", "abc",
                          "42x", "+42", " 42", "4242 ", "0x10", "4.2", "%34%32"}) {
    const auto response = get("/memory", std::string("pid=") + pid);
    EXPECT_EQ(response.status, 400) << "pid=" << pid;
    EXPECT_EQ(response.body, "pid must be a positive integer\n") << "pid=" << pid;
  }
  EXPECT_EQ(get("/memory", "pid").status, 400) << "a pid without a value";
}

TEST_F(DaemonRoutesTest, SitesOfATracedProcess) {
  publish_scan();
  const auto response = get("/api/v1/processes/4242/sites");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_NE(response.body.find("\"leak_here\""), std::string::npos) << response.body;
  EXPECT_NE(response.body.find("\"live_bytes\": 4096"), std::string::npos) << response.body;
  EXPECT_EQ(get("/api/v1/processes/4243/sites").status, 404);
  EXPECT_EQ(get("/api/v1/processes/0/sites").status, 400);
  EXPECT_EQ(get("/api/v1/processes/x1/sites").status, 400);
  EXPECT_EQ(get("/api/v1/processes/99999999999/sites").status, 400);
  // The path's pid wins over a query's.
  EXPECT_EQ(get("/api/v1/processes/4242/sites", "pid=1").status, 200);
}

TEST_F(DaemonRoutesTest, HealthzIs503WhileStarting) {
  const auto response = get("/healthz");
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(response.body, "starting: first scan running\n");
}

TEST_F(DaemonRoutesTest, HealthzIsOkAfterAScan) {
  publish_scan(1s);
  const auto response = get("/healthz");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "ok\n");
}

TEST_F(DaemonRoutesTest, HealthzIs503WhenTheLoopStopsPublishing) {
  // Stale after 3 scan intervals + 5 s: 8 s here.
  publish_scan(7s);
  EXPECT_EQ(get("/healthz").status, 200);
  publish_scan(9s);
  const auto response = get("/healthz");
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(response.body, "main loop stalled\n");
}

TEST_F(DaemonRoutesTest, PostingAProcessesAllocatorOpensItsViewThroughTheAction) {
  publish_scan();
  std::vector<int> asked;
  bool enabled = true;
  const DaemonActions actions{.open_allocator_view = [&](int pid) {
    asked.push_back(pid);
    return enabled;
  }};
  const auto routes = daemon_routes(publisher, config, rejections, requests, actions);
  const auto accepted = route("POST", "/api/v1/processes/4242/allocator", routes);
  EXPECT_EQ(accepted.status, 202);
  EXPECT_EQ(accepted.body, "{\"pid\": 4242, \"allocator_view\": \"requested\"}\n");
  EXPECT_EQ(asked, std::vector<int>{4242});
  EXPECT_EQ(route("POST", "/api/v1/processes/4243/allocator", routes).status, 404);
  EXPECT_EQ(route("POST", "/api/v1/processes/x/allocator", routes).status, 400);
  const auto got = route("GET", "/api/v1/processes/4242/allocator", routes);
  EXPECT_EQ(got.status, 405) << "an action is never taken by a GET";
  EXPECT_EQ(got.headers.at("Allow"), "POST");
  EXPECT_EQ(asked.size(), 1u);
  enabled = false;
  EXPECT_EQ(route("POST", "/api/v1/processes/4242/allocator", routes).status, 409);
  // Without the action the route is not there at all.
  EXPECT_EQ(route("POST", "/api/v1/processes/4242/allocator",
                  daemon_routes(publisher, config, rejections, requests))
                .status,
            404);
}

TEST_F(DaemonRoutesTest, OnlyGetAndHeadAndOnlyKnownPaths) {
  const auto routes = daemon_routes(publisher, config, rejections, requests);
  EXPECT_EQ(route("HEAD", "/healthz", routes).status, 503);
  EXPECT_EQ(route("POST", "/metrics", routes).status, 405);
  EXPECT_EQ(route("GET", "/metrics/", routes).status, 404);
  EXPECT_EQ(route("GET", "/api/v1", routes).status, 404);
}

} // namespace
} // namespace neutracer
