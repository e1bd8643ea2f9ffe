// SPDX-License-Identifier: Apache-2.0
// Kubernetes names from the kubelet's log file names: the pure parsers, the index, the reader
// over a directory tree built here, the re-listing policy, and the `kubernetes:` config section.
#include "containers/kubernetes_pods.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

#include "config/config.h"
#include "cuda/cuda_discovery.h"

namespace neutracer {
namespace {

namespace fs = std::filesystem;

constexpr const char *kId = "3f4e9c1d2b7a8e6f5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e";
constexpr const char *kId2 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
constexpr const char *kId3 = "aaaabbbbccccddddeeeeffff0000111122223333444455556666777788889999";
constexpr const char *kId4 = "9999888877776666555544443333222211110000ffffeeeeddddccccbbbbaaaa";
constexpr const char *kUid = "5f3e1a2b-4c6d-4e8f-9a0b-1c2d3e4f5a6b";
constexpr const char *kUid2 = "0a1b2c3d-4e5f-4071-8293-a4b5c6d7e8f9";

// ---------------------------------------------------------------------------------------------
// Container log names: <pod>_<namespace>_<container>-<id>.log

TEST(ContainerLogName, Simple) {
  EXPECT_EQ(parse_container_log_name(std::string("trainer-0_ml_pytorch-") + kId + ".log"),
            (ContainerLogName{"trainer-0", "ml", "pytorch", kId}));
}

TEST(ContainerLogName, DashesAndDotsInNames) {
  // Deployment pod names carry two hash suffixes; pod names may hold dots; the container name
  // holds dashes, so the id is split off by its length.
  EXPECT_EQ(
      parse_container_log_name(
          std::string("llm-serving.v2-7d9f8b6c4d-x2x8q_team-a-prod_vllm-engine-0-") + kId + ".log"),
      (ContainerLogName{"llm-serving.v2-7d9f8b6c4d-x2x8q", "team-a-prod", "vllm-engine-0", kId}));
  EXPECT_EQ(parse_container_log_name(std::string("a_b_c-") + kId2 + ".log"),
            (ContainerLogName{"a", "b", "c", kId2}));
}

TEST(ContainerLogName, RejectsOtherNames) {
  const std::string id = kId;
  for (const std::string &name : {
           std::string("trainer-0_ml_pytorch-") + id,                    // no .log
           std::string("trainer-0_ml_pytorch-") + id + ".log.1",         // rotated file
           std::string("trainer-0_ml_pytorch") + id + ".log",            // no dash before the id
           std::string("trainer-0_ml_-") + id + ".log",                  // empty container name
           std::string("trainer-0_ml_pytorch-") + id.substr(1) + ".log", // short id
           std::string("_ml_pytorch-") + id + ".log",                    // empty pod
           std::string("trainer-0__pytorch-") + id + ".log",             // empty namespace
           std::string("trainer-0_ml_extra_pytorch-") + id + ".log",     // four parts
           std::string("trainer-0_ml-pytorch-") + id + ".log",           // two parts
           std::string("Trainer-0_ml_pytorch-") + id + ".log",           // upper case
           std::string("trainer-0_m.l_pytorch-") + id + ".log",          // dot in a namespace
           std::string("trainer-0_ml_py.torch-") + id + ".log",          // dot in a container name
           std::string("trainer 0_ml_pytorch-") + id + ".log",           // space
           std::string(".log"),
           std::string(""),
       })
    EXPECT_FALSE(parse_container_log_name(name)) << name;
}

// ---------------------------------------------------------------------------------------------
// Pod log directories: <namespace>_<pod>_<uid>

TEST(PodLogDirectory, ParsesNamespacePodAndUid) {
  EXPECT_EQ(
      parse_pod_log_directory(std::string("team-a-prod_llm-serving.v2-7d9f8b6c4d-x2x8q_") + kUid),
      (PodLogDirectory{"team-a-prod", "llm-serving.v2-7d9f8b6c4d-x2x8q", kUid}));
  // Static pods: the uid is the manifest's hash.
  EXPECT_EQ(parse_pod_log_directory("kube-system_etcd-node-1_6c8d1f8e2b3a4c5d9e0f1a2b3c4d5e6f"),
            (PodLogDirectory{"kube-system", "etcd-node-1", "6c8d1f8e2b3a4c5d9e0f1a2b3c4d5e6f"}));
}

TEST(PodLogDirectory, RejectsOtherNames) {
  for (const std::string &name : {
           std::string("ml_trainer-0"),
           std::string("ml_trainer-0_not-a-uid"),
           std::string("ml_trainer-0_") + kUid + "_x",
           std::string("_trainer-0_") + kUid,
           std::string("ml__") + kUid,
           std::string("ML_trainer-0_") + kUid,
           std::string(""),
       })
    EXPECT_FALSE(parse_pod_log_directory(name)) << name;
}

// ---------------------------------------------------------------------------------------------
// The index

TEST(PodNameIndex, FindsByContainerIdThenByPodUid) {
  PodNameIndex index;
  index.add(ContainerLogName{"trainer-0", "ml", "pytorch", kId});
  index.add(PodLogDirectory{"ml", "trainer-0", kUid});
  index.add(PodLogDirectory{"web", "frontend-1", kUid2});

  EXPECT_EQ(index.find({kId, "containerd", kUid}), (PodNames{"ml", "trainer-0", "pytorch"}));
  // Not in containers/ (no log link yet): namespace and pod from the pod directory only.
  EXPECT_EQ(index.find({kId2, "containerd", kUid2}), (PodNames{"web", "frontend-1", ""}));
  EXPECT_EQ(index.find({kId2, "docker", ""}), PodNames{});
  EXPECT_EQ(index.find({kId3, "", "11111111-2222-3333-4444-555555555555"}), PodNames{});
  // Outside a container a pod uid alone says nothing.
  EXPECT_EQ(index.find({"", "", kUid}), PodNames{});
  EXPECT_TRUE(index.knows_container(kId));
  EXPECT_FALSE(index.knows_container(kId2));
}

// ---------------------------------------------------------------------------------------------
// The reader, over a kubelet-like tree

class LogDirTest : public ::testing::Test {
protected:
  LogDirTest() {
    root_ = fs::temp_directory_path() /
            ("nt-k8s-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "containers");
    fs::create_directories(root_ / "pods");
  }
  ~LogDirTest() override {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  // What the kubelet creates for one container: the pod directory, the container's log
  // directory and file, and the symlink named after the container id.
  void add_container(const std::string &ns, const std::string &pod, const std::string &uid,
                     const std::string &container, const std::string &id) {
    const auto pod_dir = root_ / "pods" / (ns + "_" + pod + "_" + uid);
    fs::create_directories(pod_dir / container);
    std::ofstream(pod_dir / container / "0.log") << "2026-01-01T00:00:00Z stdout F hello\n";
    fs::create_symlink(pod_dir / container / "0.log",
                       root_ / "containers" /
                           (pod + "_" + ns + "_" + container + "-" + id + ".log"));
  }

  static CudaProcess process_in(const std::string &id, const std::string &uid) {
    CudaProcess process;
    process.container.identity = {id, "containerd", uid};
    return process;
  }

  fs::path root_;
};

TEST_F(LogDirTest, ReadsNamesAndSkipsNoise) {
  add_container("ml", "trainer-0", kUid, "pytorch", kId);
  add_container("ml", "trainer-0", kUid, "sidecar-v1", kId2);
  // Noise a log directory holds: other files and names, a pod without containers.
  std::ofstream(root_ / "containers" / "README") << "not a log\n";
  std::ofstream(root_ / "containers" / (std::string("gone_ml_app-") + kId4 + ".log.tmp")) << "";
  fs::create_directories(root_ / "pods" / (std::string("web_frontend-1_") + kUid2));
  fs::create_directories(root_ / "pods" / "lost+found");
  // Links are not followed: a dangling one still names its container.
  fs::create_symlink(root_ / "nowhere",
                     root_ / "containers" / (std::string("batch-7_jobs_worker-") + kId3 + ".log"));

  const auto index = read_pod_name_index(root_);
  EXPECT_EQ(index.find({kId, "", kUid}), (PodNames{"ml", "trainer-0", "pytorch"}));
  EXPECT_EQ(index.find({kId2, "", kUid}), (PodNames{"ml", "trainer-0", "sidecar-v1"}));
  EXPECT_EQ(index.find({kId3, "", ""}), (PodNames{"jobs", "batch-7", "worker"}));
  // No link for this container: namespace and pod by its pod uid.
  EXPECT_FALSE(index.knows_container(kId4));
  EXPECT_EQ(index.find({kId4, "", kUid2}), (PodNames{"web", "frontend-1", ""}));
}

TEST_F(LogDirTest, MissingDirectoriesGiveAnEmptyIndex) {
  const auto index = read_pod_name_index(root_ / "does-not-exist");
  EXPECT_FALSE(index.knows_container(kId));
  EXPECT_EQ(index.find({kId, "", kUid}), PodNames{});
  // A file where a directory should be: the other directory is still read.
  add_container("ml", "trainer-0", kUid, "pytorch", kId);
  fs::remove_all(root_ / "pods");
  std::ofstream(root_ / "pods") << "x";
  EXPECT_EQ(read_pod_name_index(root_).find({kId, "", kUid}),
            (PodNames{"ml", "trainer-0", "pytorch"}));
}

TEST_F(LogDirTest, ListsOnlyWhenAContainerIsUnknown) {
  add_container("ml", "trainer-0", kUid, "pytorch", kId);
  KubernetesPodNames names(root_);

  // No process in a container: nothing to look up, nothing listed.
  std::vector<CudaProcess> processes(1);
  names.resolve(processes);
  EXPECT_EQ(names.listings(), 0u);
  EXPECT_EQ(processes[0].container.pod, PodNames{});

  processes.push_back(process_in(kId, kUid));
  names.resolve(processes);
  EXPECT_EQ(names.listings(), 1u);
  EXPECT_EQ(processes[1].container.pod, (PodNames{"ml", "trainer-0", "pytorch"}));
  EXPECT_EQ(processes[0].container.pod, PodNames{});

  // Known container: the next scan reads nothing and keeps the names.
  processes[1].container.pod = {};
  names.resolve(processes);
  EXPECT_EQ(names.listings(), 1u);
  EXPECT_EQ(processes[1].container.pod, (PodNames{"ml", "trainer-0", "pytorch"}));

  // A new container: listed again, once per scan while it stays unknown.
  add_container("web", "frontend-1", kUid2, "nginx", kId2);
  processes.push_back(process_in(kId2, kUid2));
  processes.push_back(process_in(kId3, ""));
  names.resolve(processes);
  EXPECT_EQ(names.listings(), 2u);
  EXPECT_EQ(processes[2].container.pod, (PodNames{"web", "frontend-1", "nginx"}));
  EXPECT_EQ(processes[3].container.pod, PodNames{});
  names.resolve(processes);
  EXPECT_EQ(names.listings(), 3u);
}

TEST_F(LogDirTest, EmptyLogDirDisablesTheLookup) {
  add_container("ml", "trainer-0", kUid, "pytorch", kId);
  KubernetesPodNames names{fs::path()};
  std::vector<CudaProcess> processes{process_in(kId, kUid)};
  names.resolve(processes);
  EXPECT_EQ(names.listings(), 0u);
  EXPECT_EQ(processes[0].container.pod, PodNames{});
}

// ---------------------------------------------------------------------------------------------
// The `kubernetes:` config section

TEST(KubernetesConfig, DefaultsToVarLog) { EXPECT_EQ(Config{}.kubernetes.log_dir, "/var/log"); }

TEST(KubernetesConfig, ReadsLogDirAndEmptyDisables) {
  auto result = parse_config_yaml("kubernetes:\n  log_dir: /host/var/log\n", "test.yaml");
  ASSERT_FALSE(result.error) << result.error->what;
  EXPECT_EQ(result.config->kubernetes.log_dir, "/host/var/log");
  result = parse_config_yaml("kubernetes:\n  log_dir: \"\"\n", "test.yaml");
  ASSERT_FALSE(result.error) << result.error->what;
  EXPECT_EQ(result.config->kubernetes.log_dir, "");
  EXPECT_FALSE(validate_config(*result.config));
}

TEST(KubernetesConfig, BadValuesAndUnknownKeysAreErrors) {
  auto result = parse_config_yaml("kubernetes:\n  log_dir: var/log\n", "test.yaml");
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->what, "test.yaml:2: kubernetes.log_dir: invalid value 'var/log': must "
                                "be an absolute path (starting with '/'), or empty to disable");
  result = parse_config_yaml("kubernetes:\n  logdir: /var/log\n", "test.yaml");
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->what,
            "test.yaml:2: unknown key 'kubernetes.logdir' (known keys: kubernetes.log_dir)");
  result = parse_config_yaml("kubernetes:\n  log_dir: [a]\n", "test.yaml");
  ASSERT_TRUE(result.error);
  EXPECT_NE(result.error->what.find("expected a string"), std::string::npos);

  Config config;
  config.kubernetes.log_dir = "relative";
  const auto problem = validate_config(config);
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->what.find("kubernetes.log_dir"), std::string::npos);
}

} // namespace
} // namespace neutracer
