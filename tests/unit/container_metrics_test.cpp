// Container labels on per-process series, neutracer_container_info and the container fields of
// /api/v1/processes, over a state with a Kubernetes pod (two processes), a docker container and a
// host process.
#include "exporters/container_metrics.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "config/config.h"
#include "detectors/detector_set.h"
#include "exporters/api_json.h"
#include "exporters/cuda_metrics.h"
#include "exporters/detector_metrics.h"
#include "exporters/metric_builders.h"

namespace neutracer {
namespace {

constexpr const char *kPodContainer =
    "3f4e9c1d2b7a8e6f5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e";
constexpr const char *kDockerContainer =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
constexpr const char *kUid = "5f3e1a2b-4c6d-4e8f-9a0b-1c2d3e4f5a6b";

const ContainerInfo kInPod{{kPodContainer, "containerd", kUid}, {"ml", "trainer-0", "pytorch"}};
const ContainerInfo kInDocker{{kDockerContainer, "docker", ""}, {}};

const ProcessId kTrainer{10, 100};
const ProcessId kTrainerWorker{11, 101};
const ProcessId kDockerJob{12, 102};
const ProcessId kHostJob{13, 103};

CudaState state_with_four_processes() {
  CudaState state({50, 10, 100, {}});
  DiscoveryResult discovery;
  discovery.processes.push_back({kTrainer, "python3", "/usr/bin/python3", kInPod, {}});
  discovery.processes.push_back({kTrainerWorker, "pt_worker", "/usr/bin/python3", kInPod, {}});
  discovery.processes.push_back({kDockerJob, "infer", "/app/infer", kInDocker, {}});
  discovery.processes.push_back({kHostJob, "bench", "/opt/bench", {}, {}});
  state.update_processes(discovery, [](const ProcessId &) { return true; });
  return state;
}

std::string label(const Labels &labels, const std::string &name) {
  for (const auto &[key, value] : labels)
    if (key == name)
      return value;
  return "<absent>";
}

TEST(ContainerLabels, ProcessLabelsByWhatIsKnown) {
  EXPECT_EQ(process_labels(kTrainer, "python3", kInPod), (Labels{{"pid", "10"},
                                                                 {"comm", "python3"},
                                                                 {"container", kPodContainer},
                                                                 {"namespace", "ml"},
                                                                 {"pod", "trainer-0"}}));
  EXPECT_EQ(process_labels(kDockerJob, "infer", kInDocker),
            (Labels{{"pid", "12"}, {"comm", "infer"}, {"container", kDockerContainer}}));
  EXPECT_EQ(process_labels(kHostJob, "bench", {}), (Labels{{"pid", "13"}, {"comm", "bench"}}));
  // Resolved by pod uid only: namespace and pod, no container name needed.
  const ContainerInfo by_uid{{kPodContainer, "", kUid}, {"ml", "trainer-0", ""}};
  EXPECT_EQ(label(process_labels(kTrainer, "python3", by_uid), "pod"), "trainer-0");
}

TEST(ContainerLabels, InfoMetricHasOneSeriesPerContainer) {
  const auto info = container_info_family(state_with_four_processes());
  EXPECT_EQ(info.name, "neutracer_container_info");
  EXPECT_EQ(info.type, MetricType::gauge);
  ASSERT_EQ(info.samples.size(), 2u); // two processes share the pod's container; host has none
  // Ordered by container id.
  EXPECT_EQ(info.samples[0].labels,
            (Labels{{"container", kDockerContainer}, {"runtime", "docker"}}));
  EXPECT_EQ(info.samples[1].labels, (Labels{{"container", kPodContainer},
                                            {"runtime", "containerd"},
                                            {"pod_uid", kUid},
                                            {"namespace", "ml"},
                                            {"pod", "trainer-0"},
                                            {"container_name", "pytorch"}}));
  for (const auto &sample : info.samples)
    EXPECT_EQ(sample.value, 1);

  std::ostringstream text;
  render_text({info}, text);
  EXPECT_NE(
      text.str().find(std::string("neutracer_container_info{container=\"") + kPodContainer +
                      "\",runtime=\"containerd\",pod_uid=\"" + kUid +
                      "\",namespace=\"ml\",pod=\"trainer-0\",container_name=\"pytorch\"} 1\n"),
      std::string::npos)
      << text.str();
}

TEST(ContainerLabels, InfoMetricIsEmptyWithoutContainers) {
  CudaState state({50, 10, 100, {}});
  DiscoveryResult discovery;
  discovery.processes.push_back({kHostJob, "bench", "/opt/bench", {}, {}});
  state.update_processes(discovery, [](const ProcessId &) { return true; });
  EXPECT_TRUE(container_info_family(state).samples.empty());
}

// Every series that carries a pid carries the process's namespace and pod, or neither.
void expect_pod_labels_follow_pid(const std::vector<MetricFamily> &families) {
  std::size_t per_process = 0;
  for (const auto &f : families)
    for (const auto &sample : f.samples) {
      const auto pid = label(sample.labels, "pid");
      if (pid == "<absent>")
        continue;
      ++per_process;
      const bool in_pod = pid == "10" || pid == "11";
      EXPECT_EQ(label(sample.labels, "namespace"), in_pod ? "ml" : "<absent>") << f.name;
      EXPECT_EQ(label(sample.labels, "pod"), in_pod ? "trainer-0" : "<absent>") << f.name;
      EXPECT_EQ(label(sample.labels, "container"), in_pod        ? kPodContainer
                                                   : pid == "12" ? kDockerContainer
                                                                 : "<absent>")
          << f.name;
    }
  EXPECT_GT(per_process, 0u);
}

TEST(ContainerLabels, CudaAndDetectorSeriesCarryThem) {
  const auto state = state_with_four_processes();
  expect_pod_labels_follow_pid(cuda_families(state));

  DetectorSet detectors(detector_settings(Config{}));
  detectors.scan(state, {}, {}, 1'000'000'000);
  expect_pod_labels_follow_pid(detector_families(detectors, AlertDelivery{}));
}

TEST(ContainerLabels, ProcessesJsonHasTheSameFields) {
  const auto state = state_with_four_processes();
  DetectorSet detectors(detector_settings(Config{}));
  const auto document = nlohmann::json::parse(processes_json(state, detectors));
  const auto &processes = document["processes"];
  ASSERT_EQ(processes.size(), 4u);
  EXPECT_EQ(processes[0]["pid"], 10);
  EXPECT_EQ(processes[0]["container"], kPodContainer);
  EXPECT_EQ(processes[0]["runtime"], "containerd");
  EXPECT_EQ(processes[0]["pod_uid"], kUid);
  EXPECT_EQ(processes[0]["namespace"], "ml");
  EXPECT_EQ(processes[0]["pod"], "trainer-0");
  EXPECT_EQ(processes[0]["container_name"], "pytorch");
  EXPECT_EQ(processes[2]["container"], kDockerContainer);
  EXPECT_EQ(processes[2]["runtime"], "docker");
  EXPECT_FALSE(processes[2].contains("namespace"));
  EXPECT_FALSE(processes[2].contains("pod_uid"));
  for (const char *key : {"container", "runtime", "pod_uid", "namespace", "pod", "container_name"})
    EXPECT_FALSE(processes[3].contains(key)) << key;
}

} // namespace
} // namespace neutracer
