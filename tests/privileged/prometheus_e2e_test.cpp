// SPDX-License-Identifier: Apache-2.0
// End to end with real servers, as root: Debian's prometheus scrapes the daemon with the
// shipped example config and evaluates the shipped alert rules, and prometheus-alertmanager
// (shipped config) receives the alerts. Only intervals, `for` durations and addresses are
// changed by the test. Also checks that every metric the shipped rules and dashboards name
// exists in a real scrape.
#include <chrono>
#include <cstdlib>
#include <gtest/gtest.h>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <yaml-cpp/yaml.h>

#include "e2e_fixture.h"
#include "webhook_receiver.h"

namespace neutracer::test {
namespace {

const fs::path kSource = NEUTRACER_SOURCE_DIR;

std::string read_file(const fs::path &path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Metric families in an exposition: the names of its `# TYPE` lines.
std::set<std::string> families_of(const std::string &exposition) {
  std::set<std::string> names;
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("# TYPE ", 0) == 0)
      names.insert(line.substr(7, line.find(' ', 7) - 7));
  return names;
}

class PrometheusE2E : public DaemonE2E {
protected:
  std::string config_yaml() const override {
    // The fake NVML library gives the GPU device series the rules and dashboards name.
    // RAS on: its families are written (no NCCL process here, so nobody is asked).
    return "detectors:\n"
           "  leak: {window: 1s, windows: 3, min_growth_bytes: 1048576,\n"
           "         sample_step_bytes: 1048576}\n"
           "nccl: {ras_enabled: true, ras_address: \"127.0.0.1:9\"}\n"
           "nvml:\n"
           "  library: \"" NEUTRACER_FAKE_NVML "\"\n";
  }

  void TearDown() override {
    prometheus_.reset();
    alertmanager_.reset();
    DaemonE2E::TearDown();
  }

  // The shipped prometheus.yml with this daemon as the target and this Alertmanager. Fast:
  // 1 s intervals and the shipped rules with every `for` shortened to 2 s. Shipped: the
  // shipped intervals, rules and Alertmanager timings, every receiver sent to `webhook_port`.
  enum class Timings { fast, shipped };
  void start_servers(Timings timings = Timings::fast, int webhook_port = 0) {
    const bool fast = timings == Timings::fast;
    prometheus_port_ = free_tcp_port();
    alertmanager_port_ = free_tcp_port();
    std::string rules = read_file(kSource / "grafana/prometheus/neutracer-alerts.yml");
    if (fast)
      rules = std::regex_replace(rules, std::regex(R"((\n\s+for:\s*)\S+)"), "$012s");
    std::ofstream(dir_ / "neutracer-alerts.yml") << rules;

    YAML::Node prometheus = YAML::LoadFile(kSource / "grafana/prometheus/prometheus.yml");
    if (fast) {
      prometheus["global"]["scrape_interval"] = "1s";
      prometheus["global"]["evaluation_interval"] = "1s";
      prometheus["global"]["scrape_timeout"] = "1s";
    }
    YAML::Node rule_files;
    rule_files.push_back((dir_ / "neutracer-alerts.yml").string());
    prometheus["rule_files"] = rule_files;
    bool found_job = false;
    for (auto job : prometheus["scrape_configs"]) {
      if (job["job_name"].as<std::string>() != "neutracerd")
        continue;
      found_job = true;
      if (fast) {
        job["scrape_interval"] = "1s";
        job["scrape_timeout"] = "1s";
      }
      YAML::Node targets;
      targets.push_back("127.0.0.1:" + std::to_string(port_));
      YAML::Node static_config;
      static_config["targets"] = targets;
      YAML::Node static_configs;
      static_configs.push_back(static_config);
      job["static_configs"] = static_configs;
      job.remove("kubernetes_sd_configs");
      job.remove("file_sd_configs");
      job.remove("relabel_configs");
    }
    ASSERT_TRUE(found_job) << "the shipped prometheus.yml has no job_name: neutracerd";
    YAML::Node am_targets;
    am_targets.push_back("127.0.0.1:" + std::to_string(alertmanager_port_));
    prometheus["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] = am_targets;
    std::ofstream(dir_ / "prometheus.yml") << YAML::Dump(prometheus);

    YAML::Node alertmanager = YAML::LoadFile(kSource / "grafana/alertmanager/alertmanager.yml");
    if (fast) {
      alertmanager["route"]["group_wait"] = "1s";
      alertmanager["route"]["group_interval"] = "1s";
    }
    if (webhook_port != 0)
      for (auto receiver : alertmanager["receivers"])
        for (auto webhook : receiver["webhook_configs"])
          webhook["url"] = "http://127.0.0.1:" + std::to_string(webhook_port) + "/";
    std::ofstream(dir_ / "alertmanager.yml") << YAML::Dump(alertmanager);

    alertmanager_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{"/usr/bin/prometheus-alertmanager",
                                 "--config.file=" + (dir_ / "alertmanager.yml").string(),
                                 "--storage.path=" + (dir_ / "am").string(),
                                 "--web.listen-address=127.0.0.1:" +
                                     std::to_string(alertmanager_port_),
                                 "--cluster.listen-address="},
        (dir_ / "alertmanager.log").string());
    prometheus_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{
            "/usr/bin/prometheus", "--config.file=" + (dir_ / "prometheus.yml").string(),
            "--storage.tsdb.path=" + (dir_ / "tsdb").string(),
            "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_)},
        (dir_ / "prometheus.log").string());
    ASSERT_TRUE(eventually(
        [&] {
          const auto ready = http_get(prometheus_port_, "/-/ready");
          const auto am_ready = http_get(alertmanager_port_, "/-/ready");
          return ready && ready->status == 200 && am_ready && am_ready->status == 200;
        },
        30s))
        << read_file(dir_ / "prometheus.log") << read_file(dir_ / "alertmanager.log");
  }

  nlohmann::json get_json(int port, const std::string &path) {
    const auto reply = http_get(port, path);
    if (!reply || reply->status != 200)
      return {};
    return nlohmann::json::parse(reply->body, nullptr, false);
  }

  // Prometheus's value of `metric` for the series with this pid, or nullopt.
  std::optional<double> prometheus_value(const std::string &metric, const std::string &pid) {
    const auto result = get_json(prometheus_port_, "/api/v1/query?query=" + metric);
    if (!result.is_object() || result["status"] != "success")
      return std::nullopt;
    for (const auto &sample : result["data"]["result"])
      if (sample["metric"].value("pid", "") == pid)
        return std::stod(sample["value"][1].get<std::string>());
    return std::nullopt;
  }

  bool alert_firing_in_prometheus(const std::string &name, const std::string &pid) {
    const auto alerts = get_json(prometheus_port_, "/api/v1/alerts");
    if (!alerts.is_object())
      return false;
    for (const auto &alert : alerts["data"]["alerts"])
      if (alert["labels"].value("alertname", "") == name &&
          alert["labels"].value("pid", "") == pid && alert["state"] == "firing")
        return true;
    return false;
  }

  bool alert_in_alertmanager(const std::string &name, const std::string &pid) {
    const auto alerts = get_json(alertmanager_port_, "/api/v2/alerts");
    if (!alerts.is_array())
      return false;
    for (const auto &alert : alerts)
      if (alert["labels"].value("alertname", "") == name && alert["labels"].value("pid", "") == pid)
        return true;
    return false;
  }

  int prometheus_port_ = 0;
  int alertmanager_port_ = 0;
  std::unique_ptr<ChildProcess> prometheus_;
  std::unique_ptr<ChildProcess> alertmanager_;
};

TEST_F(PrometheusE2E, LeakAlertFiresInPrometheusAndReachesAlertmanager) {
  start_servers();
  if (HasFatalFailure())
    return;
  bool ingested = false, firing = false, delivered = false;
  // 4 MiB kept every 200 ms for 20 s: the daemon flags it after ~3 s; Prometheus needs a
  // scrape, an evaluation and the shortened `for` on top.
  auto scenario = run_scenario(
      {},
      [] {
        std::vector<std::string> steps;
        for (int i = 0; i < 100; ++i)
          steps.insert(steps.end(), {"alloc:4194304:1", "sleep:200"});
        return steps;
      }(),
      {},
      [&](const std::string &pid) {
        ingested = eventually(
            [&] {
              const auto v = prometheus_value("neutracer_cuda_memory_used_bytes", pid);
              return v.has_value();
            },
            15s);
        firing = eventually(
            [&] { return alert_firing_in_prometheus("NeutracerCudaMemoryLeak", pid); }, 18s);
        delivered =
            eventually([&] { return alert_in_alertmanager("NeutracerCudaMemoryLeak", pid); }, 10s);
      });
  EXPECT_TRUE(ingested) << "Prometheus never ingested the daemon's series; "
                        << read_file(dir_ / "prometheus.log");
  EXPECT_TRUE(firing) << "NeutracerCudaMemoryLeak never fired; daemon log: " << log();
  EXPECT_TRUE(delivered) << "the alert never reached Alertmanager; "
                         << read_file(dir_ / "alertmanager.log");
  // The healthy daemon raises no daemon-health alerts.
  EXPECT_FALSE(alert_firing_in_prometheus("NeutracerDaemonDown", ""));
  finish(scenario);
}

// The daemon at its default detector settings (only the fake NVML added).
class PrometheusShippedE2E : public PrometheusE2E {
protected:
  std::string config_yaml() const override {
    return "nvml:\n"
           "  library: \"" NEUTRACER_FAKE_NVML "\"\n";
  }
};

// Issue: a leak pages in a minute. From the first leaked allocation to Alertmanager's webhook
// call, with the shipped detector defaults, rules, 15 s scrape and evaluation intervals and
// Alertmanager timings: at most 60 s.
TEST_F(PrometheusShippedE2E, LeakNotificationWithinAMinuteWithTheShippedSettings) {
  WebhookReceiver webhook;
  start_servers(Timings::shipped, webhook.port());
  if (HasFatalFailure())
    return;
  std::optional<std::chrono::duration<double>> latency;
  // 4 MiB kept every 200 ms (20 MiB/s, the GPU validation's leak rate) for about 30 s: long
  // enough for a 15 s scrape to see the verdict; the rule then keeps firing.
  auto scenario = run_scenario(
      {},
      [] {
        std::vector<std::string> steps;
        for (int i = 0; i < 150; ++i)
          steps.insert(steps.end(), {"alloc:4194304:1", "sleep:200"});
        return steps;
      }(),
      {},
      [&](const std::string &pid) {
        const auto started = std::chrono::steady_clock::now();
        const auto notified = [&]() -> std::optional<std::chrono::steady_clock::time_point> {
          for (const auto &notification : webhook.notifications()) {
            const auto payload = nlohmann::json::parse(notification.body, nullptr, false);
            if (!payload.is_object() || payload.value("status", "") != "firing")
              continue;
            for (const auto &alert : payload["alerts"])
              if (alert["labels"].value("alertname", "") == "NeutracerCudaMemoryLeak" &&
                  alert["labels"].value("pid", "") == pid)
                return notification.received;
          }
          return std::nullopt;
        };
        if (eventually([&] { return notified().has_value(); }, 75s))
          latency = *notified() - started;
      });
  ASSERT_TRUE(latency.has_value())
      << "no leak notification within 75 s; daemon log: " << log()
      << read_file(dir_ / "prometheus.log") << read_file(dir_ / "alertmanager.log");
  RecordProperty("leak_to_notification_seconds", std::to_string(latency->count()));
  std::cout << "leak to Alertmanager notification: " << latency->count() << " s\n";
  EXPECT_LE(latency->count(), 60.0);
  finish(scenario);
}

TEST_F(PrometheusE2E, EveryMetricNamedByRulesAndDashboardsExistsInARealScrape) {
  auto scenario = run_scenario({}, {"launch:k:10", "alloc:1048576:2", "h2d:4096:2", "sync:5",
                                    "burn:50", "tcp_send:65536", "oom:99999999999"});
  const auto reply = http_get(port_, "/metrics");
  ASSERT_TRUE(reply && reply->status == 200);
  const auto scrape_file = dir_ / "scrape.prom";
  std::ofstream(scrape_file) << reply->body;
  const auto families = families_of(reply->body);

  // Rules: every neutracer_*/process_* name in an expression must be a family of the scrape
  // (histogram series names drop their _bucket/_sum/_count suffix).
  const std::string rules = read_file(kSource / "grafana/prometheus/neutracer-alerts.yml");
  const std::regex name(R"(\b(neutracer_[a-z0-9_]+|process_[a-z0-9_]+)\b)");
  std::set<std::string> missing;
  for (auto it = std::sregex_iterator(rules.begin(), rules.end(), name);
       it != std::sregex_iterator(); ++it) {
    std::string metric = (*it)[1];
    for (const char *suffix : {"_bucket", "_sum", "_count"})
      if (!families.contains(metric) && metric.ends_with(suffix))
        metric = metric.substr(0, metric.size() - std::strlen(suffix));
    if (!families.contains(metric))
      missing.insert((*it)[1]);
  }
  EXPECT_TRUE(missing.empty()) << "rules name metrics the daemon does not export: "
                               << testing::PrintToString(missing);

  // Dashboards: the checker applies the same test (and the dashboard conventions).
  const std::string command =
      "python3 " + (kSource / "tests/dashboards/check_dashboards.py").string() + " " +
      (kSource / "grafana/dashboards").string() + " --scrape " + scrape_file.string() + " > " +
      (dir_ / "dashboards.log").string() + " 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << read_file(dir_ / "dashboards.log");
  finish(scenario);
}

} // namespace
} // namespace neutracer::test
