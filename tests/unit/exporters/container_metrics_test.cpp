// SPDX-License-Identifier: Apache-2.0
// Container labels on per-process series, neutracer_container_info and the container fields of
// /api/v1/processes and /api/v1/kernels, over a state with a Kubernetes pod (two processes), a
// named docker container, a host process and a host process in a Slurm job.
#include "exporters/container_metrics.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "config/config.h"
#include "collectors/detector_collector.h"
#include "detectors/detector_set.h"
#include "exporters/api_json.h"
#include "exporters/cuda_metrics.h"
#include "exporters/detector_metrics.h"
#include "exporters/kernels_json.h"
#include "exporters/metric_builders.h"
#include "http/content_encoding.h"

namespace neutracer {
namespace {

constexpr const char *kPodContainer =
    "3f4e9c1d2b7a8e6f5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e";
constexpr const char *kDockerContainer =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
constexpr const char *kUid = "5f3e1a2b-4c6d-4e8f-9a0b-1c2d3e4f5a6b";

const ContainerInfo kInPod{{kPodContainer, "containerd", kUid}, {"ml", "trainer-0", "pytorch"}};
const ContainerInfo kInDocker{{kDockerContainer, "docker", ""}, {}, "infer-server"};
const ContainerInfo kInSlurmJob{{"", "", "", "4242"}, {}};

const ProcessId kTrainer{10, 100};
const ProcessId kTrainerWorker{11, 101};
const ProcessId kDockerJob{12, 102};
const ProcessId kHostJob{13, 103};
const ProcessId kSlurmTask{14, 104};

CudaState state_with_five_processes() {
  CudaState state({50, 10, 100, {}});
  DiscoveryResult discovery;
  discovery.processes.push_back({kTrainer, "python3", "/usr/bin/python3", kInPod, {}});
  discovery.processes.push_back({kTrainerWorker, "pt_worker", "/usr/bin/python3", kInPod, {}});
  discovery.processes.push_back({kDockerJob, "infer", "/app/infer", kInDocker, {}});
  discovery.processes.push_back({kHostJob, "bench", "/opt/bench", {}, {}});
  discovery.processes.push_back({kSlurmTask, "srun_task", "/opt/train", kInSlurmJob, {}});
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
  // container is the container's name (as cAdvisor, kubelet and dcgm-exporter label it),
  // container_id the id.
  EXPECT_EQ(process_labels(kTrainer, "python3", kInPod), (Labels{{"pid", "10"},
                                                                 {"comm", "python3"},
                                                                 {"container", "pytorch"},
                                                                 {"container_id", kPodContainer},
                                                                 {"namespace", "ml"},
                                                                 {"pod", "trainer-0"}}));
  EXPECT_EQ(process_labels(kDockerJob, "infer", kInDocker),
            (Labels{{"pid", "12"},
                    {"comm", "infer"},
                    {"container", "infer-server"},
                    {"container_id", kDockerContainer}}));
  EXPECT_EQ(process_labels(kHostJob, "bench", {}), (Labels{{"pid", "13"}, {"comm", "bench"}}));
  EXPECT_EQ(process_labels(kSlurmTask, "srun_task", kInSlurmJob),
            (Labels{{"pid", "14"}, {"comm", "srun_task"}, {"slurm_job", "4242"}}));
  // Name unknown (a runtime other than Docker, a pod without its log link yet): the id alone,
  // never the id under container.
  const ContainerInfo unnamed{{kDockerContainer, "podman", ""}, {}};
  EXPECT_EQ(process_labels(kDockerJob, "infer", unnamed),
            (Labels{{"pid", "12"}, {"comm", "infer"}, {"container_id", kDockerContainer}}));
  // Resolved by pod uid only: namespace and pod, no container name.
  const ContainerInfo by_uid{{kPodContainer, "", kUid}, {"ml", "trainer-0", ""}};
  EXPECT_EQ(process_labels(kTrainer, "python3", by_uid), (Labels{{"pid", "10"},
                                                                 {"comm", "python3"},
                                                                 {"container_id", kPodContainer},
                                                                 {"namespace", "ml"},
                                                                 {"pod", "trainer-0"}}));
  // Everything at once: a named container in a Slurm job.
  const ContainerInfo docker_in_job{{kDockerContainer, "docker", "", "7"}, {}, "infer-server"};
  EXPECT_EQ(process_labels(kDockerJob, "infer", docker_in_job),
            (Labels{{"pid", "12"},
                    {"comm", "infer"},
                    {"container", "infer-server"},
                    {"container_id", kDockerContainer},
                    {"slurm_job", "7"}}));
}

TEST(ContainerLabels, InfoMetricHasOneSeriesPerContainer) {
  const auto info = container_info_family(state_with_five_processes());
  EXPECT_EQ(info.name, "neutracer_container_info");
  EXPECT_EQ(info.type, MetricType::gauge);
  // Two processes share the pod's container; the host process and the Slurm task have none.
  ASSERT_EQ(info.samples.size(), 2u);
  // Ordered by container id.
  EXPECT_EQ(info.samples[0].labels, (Labels{{"container", "infer-server"},
                                            {"container_id", kDockerContainer},
                                            {"runtime", "docker"}}));
  EXPECT_EQ(info.samples[1].labels, (Labels{{"container", "pytorch"},
                                            {"container_id", kPodContainer},
                                            {"runtime", "containerd"},
                                            {"pod_uid", kUid},
                                            {"namespace", "ml"},
                                            {"pod", "trainer-0"}}));
  for (const auto &sample : info.samples)
    EXPECT_EQ(sample.value, 1);

  std::ostringstream text;
  render_text({info}, text);
  EXPECT_NE(text.str().find(
                std::string("neutracer_container_info{container=\"pytorch\",container_id=\"") +
                kPodContainer + "\",runtime=\"containerd\",pod_uid=\"" + kUid +
                "\",namespace=\"ml\",pod=\"trainer-0\"} 1\n"),
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

// Every series that carries a pid carries the process's container, container_id, namespace,
// pod and slurm_job, each where known.
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
      EXPECT_EQ(label(sample.labels, "container_id"), in_pod        ? kPodContainer
                                                      : pid == "12" ? kDockerContainer
                                                                    : "<absent>")
          << f.name;
      EXPECT_EQ(label(sample.labels, "container"), in_pod        ? "pytorch"
                                                   : pid == "12" ? "infer-server"
                                                                 : "<absent>")
          << f.name;
      EXPECT_EQ(label(sample.labels, "slurm_job"), pid == "14" ? "4242" : "<absent>") << f.name;
    }
  EXPECT_GT(per_process, 0u);
}

TEST(ContainerLabels, CudaAndDetectorSeriesCarryThem) {
  const auto state = state_with_five_processes();
  expect_pod_labels_follow_pid(cuda_families(state));

  DetectorSet detectors(detector_settings(Config{}));
  detectors.scan(state, {}, {}, 1'000'000'000);
  expect_pod_labels_follow_pid(detector_families(detectors, AlertDelivery{}));
}

TEST(ContainerLabels, ProcessesJsonHasTheSameFields) {
  const auto state = state_with_five_processes();
  DetectorSet detectors(detector_settings(Config{}));
  const auto document = nlohmann::json::parse(processes_json(state, detectors));
  const auto &processes = document["processes"];
  ASSERT_EQ(processes.size(), 5u);
  EXPECT_EQ(processes[0]["pid"], 10);
  EXPECT_EQ(processes[0]["container"], "pytorch");
  EXPECT_EQ(processes[0]["container_id"], kPodContainer);
  EXPECT_EQ(processes[0]["runtime"], "containerd");
  EXPECT_EQ(processes[0]["pod_uid"], kUid);
  EXPECT_EQ(processes[0]["namespace"], "ml");
  EXPECT_EQ(processes[0]["pod"], "trainer-0");
  EXPECT_FALSE(processes[0].contains("container_name"));
  EXPECT_EQ(processes[2]["container"], "infer-server");
  EXPECT_EQ(processes[2]["container_id"], kDockerContainer);
  EXPECT_EQ(processes[2]["runtime"], "docker");
  EXPECT_FALSE(processes[2].contains("namespace"));
  EXPECT_FALSE(processes[2].contains("pod_uid"));
  for (const char *key :
       {"container", "container_id", "runtime", "pod_uid", "namespace", "pod", "slurm_job"})
    EXPECT_FALSE(processes[3].contains(key)) << key;
  EXPECT_EQ(processes[4]["slurm_job"], "4242");
  EXPECT_FALSE(processes[4].contains("container_id"));
}

TEST(ContainerLabels, KernelsJsonHasTheSameFields) {
  const auto document = nlohmann::json::parse(kernels_json(state_with_five_processes()));
  const auto &processes = document["processes"];
  ASSERT_EQ(processes.size(), 5u);
  EXPECT_EQ(processes[0]["container"], "pytorch");
  EXPECT_EQ(processes[0]["container_id"], kPodContainer);
  EXPECT_EQ(processes[0]["pod"], "trainer-0");
  EXPECT_EQ(processes[2]["container"], "infer-server");
  EXPECT_FALSE(processes[3].contains("container"));
  EXPECT_FALSE(processes[3].contains("container_id"));
  EXPECT_EQ(processes[4]["slurm_job"], "4242");
  EXPECT_TRUE(processes[4]["kernels"].is_array());
  // As the snapshot keeps it: compressed while it is written, the same text.
  EXPECT_EQ(gunzip(kernels_json_gzip(state_with_five_processes())),
            kernels_json(state_with_five_processes()));
}

} // namespace
} // namespace neutracer
