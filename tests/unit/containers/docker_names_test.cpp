// SPDX-License-Identifier: Apache-2.0
// Docker container names from <data-root>/containers/<id>/config.v2.json: the parser over
// documents shaped like dockerd's and hostile ones, the reader's checks on the file, and the
// resolver's caching over a temporary containers directory.
#include "containers/docker_names.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "cuda/cuda_discovery.h"

namespace neutracer {
namespace {

namespace fs = std::filesystem;

constexpr const char *kId = "3f4e9c1d2b7a8e6f5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e";
constexpr const char *kId2 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
constexpr const char *kId3 = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

// The top of a config.v2.json as dockerd 24 writes it (one line in the real file), shortened:
// a mount point and the network settings also have "Name" keys, deeper down.
std::string docker_config(const std::string &id, const std::string &name) {
  return R"({"StreamConfig":{},"State":{"Running":true,"Paused":false,"Pid":4242,)"
         R"("StartedAt":"2026-01-05T10:00:00.123456789Z","Health":null},"ID":")" +
         id +
         R"(","Created":"2026-01-05T09:59:59.5Z","Managed":false,"Path":"python3",)"
         R"("Args":["train.py","--epochs","3"],"Config":{"Hostname":"3f4e9c1d2b7a",)"
         R"("Env":["PATH=/usr/local/bin:/usr/bin","Name=/not-this-one"],"Cmd":["python3"],)"
         R"("Image":"pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime","Labels":{"Name":"x"}},)"
         R"("ImageID":"sha256:aa","NetworkSettings":{"Networks":{"bridge":{"IPAddress":"172.17.0.2"}}},)"
         R"("MountPoints":{"/data":{"Source":"","Destination":"/data","RW":true,"Name":"vol1",)"
         R"("Driver":"local","Type":"volume"}},"LogPath":"/var/lib/docker/containers/x-json.log",)"
         R"("Name":")" +
         name + R"(","Driver":"overlay2","OS":"linux","RestartCount":0,"SecretReferences":null})";
}

TEST(DockerConfigName, TheTopLevelNameWithoutItsSlash) {
  EXPECT_EQ(parse_docker_config_name(docker_config(kId, "/trainer"), kId),
            (DockerName{"trainer", ""}));
  // Every character Docker allows.
  EXPECT_EQ(parse_docker_config_name(docker_config(kId, "/A9_b.c-d"), kId).name, "A9_b.c-d");
  // Whitespace and order do not matter; nested Names are not the container's.
  const std::string reordered = std::string(R"( { "MountPoints": {"/x": {"Name": "vol"}},
      "Name" : "/late", "ID": ")") +
                                kId + "\" }\n";
  EXPECT_EQ(parse_docker_config_name(reordered, kId), (DockerName{"late", ""}));
}

TEST(DockerConfigName, HostileOrForeignDocumentsGiveAReason) {
  const std::string id = kId;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not valid JSON at byte 1"},
      {"{\"ID\":\"" + id + "\",\"Name\":\"/a\"", "not valid JSON at byte"},
      {docker_config(kId, "/trainer") + "x", "not valid JSON at byte"},
      {"[{\"ID\":\"" + id + "\",\"Name\":\"/trainer\"}]", "no top-level \"ID\" string"},
      {"{\"Name\":\"/trainer\"}", "no top-level \"ID\" string"},
      {"{\"ID\":1,\"Name\":\"/trainer\"}", "no top-level \"ID\" string"},
      {docker_config(kId2, "/trainer"), "its \"ID\" is another container's"},
      {"{\"ID\":\"" + id + "\"}", "no top-level \"Name\" string"},
      {"{\"ID\":\"" + id + "\",\"Name\":[\"/trainer\"]}", "no top-level \"Name\" string"},
      {"{\"ID\":\"" + id + "\",\"Name\":\"/a\",\"Name\":\"/b\"}", "\"Name\" appears twice"},
      {docker_config(kId, "/"), "\"Name\" is not a Docker container name"},
      {docker_config(kId, "/x"), "\"Name\" is not a Docker container name"},
      {docker_config(kId, "/-lead"), "\"Name\" is not a Docker container name"},
      {docker_config(kId, "/tab\\there"), "\"Name\" is not a Docker container name"},
      {docker_config(kId, "/a\\\"b"), "\"Name\" is not a Docker container name"},
      {docker_config(kId, "/caf\\u00e9"), "\"Name\" is not a Docker container name"},
      {docker_config(kId, "//two"), "\"Name\" is not a Docker container name"},
      {docker_config(kId, "/" + std::string(256, 'a')), "\"Name\" is not a Docker container name"},
      {std::string(100000, '['), "not valid JSON at byte"},
  };
  for (const auto &[text, reason] : cases) {
    const auto result = parse_docker_config_name(text, kId);
    EXPECT_EQ(result.name, "") << text.substr(0, 200);
    EXPECT_EQ(result.error.rfind(reason, 0), 0u) << result.error << " for " << text.substr(0, 200);
  }
  EXPECT_EQ(parse_docker_config_name(docker_config(kId, "/" + std::string(255, 'a')), kId).name,
            std::string(255, 'a'));
}

// ---------------------------------------------------------------------------------------------
// The reader and the resolver, over a temporary <data-root>/containers

class DockerDirTest : public ::testing::Test {
protected:
  DockerDirTest() {
    root_ = fs::temp_directory_path() /
            ("nt-docker-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~DockerDirTest() override {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  fs::path config_path(const std::string &id) const { return root_ / id / "config.v2.json"; }
  void add(const std::string &id, const std::string &text) const {
    fs::create_directories(root_ / id);
    std::ofstream(config_path(id), std::ios::binary) << text;
  }

  static CudaProcess process_in(const std::string &id, const std::string &runtime,
                                const std::string &pod_uid = "") {
    CudaProcess process;
    process.container.identity = {id, runtime, pod_uid};
    return process;
  }

  fs::path root_;
};

TEST_F(DockerDirTest, ReadsTheNameOfAContainer) {
  add(kId, docker_config(kId, "/trainer"));
  const auto read = read_docker_container_name(root_, kId);
  EXPECT_EQ(read.result, (DockerName{"trainer", ""}));
  EXPECT_EQ(read.open_errno, 0);
}

TEST_F(DockerDirTest, RefusesWhatIsNotDockersFile) {
  // No directory: not a Docker container.
  EXPECT_EQ(read_docker_container_name(root_, kId).open_errno, ENOENT);
  // Not an id: never turned into a path.
  EXPECT_EQ(read_docker_container_name(root_, "../etc").result.error, "not a container id");
  // A link to another file is not followed.
  add(kId2, docker_config(kId2, "/elsewhere"));
  fs::create_directories(root_ / kId);
  fs::create_symlink(config_path(kId2), config_path(kId));
  EXPECT_EQ(read_docker_container_name(root_, kId).open_errno, ELOOP);
  // A FIFO does not block the scan, a directory is not read.
  fs::create_directories(root_ / kId3);
  ASSERT_EQ(::mkfifo(config_path(kId3).c_str(), 0600), 0);
  EXPECT_EQ(read_docker_container_name(root_, kId3).result.error, "not a regular file");
  fs::remove(config_path(kId3));
  fs::create_directories(config_path(kId3));
  EXPECT_EQ(read_docker_container_name(root_, kId3).result.error, "not a regular file");
}

TEST_F(DockerDirTest, RefusesAFileBeyondTheBound) {
  // Valid JSON, name and all, but padded beyond what the daemon reads.
  auto text = docker_config(kId, "/trainer");
  text.insert(1, "\"Pad\":\"" + std::string(kMaxDockerConfigBytes, 'x') + "\",");
  add(kId, text);
  const auto read = read_docker_container_name(root_, kId);
  EXPECT_EQ(read.result.name, "");
  EXPECT_NE(read.result.error.find("more than the 1048576 read"), std::string::npos)
      << read.result.error;
  // Exactly at the bound is fine.
  text = docker_config(kId, "/trainer");
  text.insert(text.size() - 1, std::string(kMaxDockerConfigBytes - text.size(), ' '));
  ASSERT_EQ(text.size(), kMaxDockerConfigBytes);
  add(kId, text);
  EXPECT_EQ(read_docker_container_name(root_, kId).result.name, "trainer");
}

TEST_F(DockerDirTest, ResolverReadsEachContainerOnceWhileItIsTraced) {
  add(kId, docker_config(kId, "/trainer"));
  add(kId2, "{ not json");
  DockerContainerNames names(root_);

  std::vector<CudaProcess> processes{process_in(kId, "docker"), process_in(kId, "docker"),
                                     process_in(kId2, "docker"), CudaProcess{}};
  names.resolve(processes);
  EXPECT_EQ(names.reads(), 2u); // two processes of one container: one read
  EXPECT_EQ(processes[0].container.runtime_name, "trainer");
  EXPECT_EQ(processes[1].container.runtime_name, "trainer");
  EXPECT_EQ(processes[1].container.name(), "trainer");
  EXPECT_EQ(processes[2].container.runtime_name, ""); // unusable file: logged, no name
  EXPECT_EQ(processes[3].container.runtime_name, "");

  // Next scan: fresh discovery results, nothing read again, failures included.
  std::vector<CudaProcess> next{process_in(kId, "docker"), process_in(kId2, "docker")};
  names.resolve(next);
  EXPECT_EQ(names.reads(), 2u);
  EXPECT_EQ(next[0].container.runtime_name, "trainer");
  EXPECT_EQ(next[1].container.runtime_name, "");

  // A container without traced processes is forgotten: the cache stays bounded, and a
  // container id seen again is read again.
  std::vector<CudaProcess> only_second{process_in(kId2, "docker")};
  names.resolve(only_second);
  EXPECT_EQ(names.cached(), 1u);
  names.resolve(next);
  EXPECT_EQ(names.reads(), 3u);
  EXPECT_EQ(next[0].container.runtime_name, "trainer");
}

TEST_F(DockerDirTest, ResolverAsksOnlyForContainersThatMayBeDockers) {
  for (const auto *id : {kId, kId2, kId3})
    add(id, docker_config(id, "/named"));
  DockerContainerNames names(root_);
  std::vector<CudaProcess> processes{
      process_in(kId, "containerd"), // Kubernetes or nerdctl: not Docker's
      process_in(kId2, "", "92221d12-8329-4c28-ac5a-a59d6ab00aa1"), // a pod (cgroupfs driver)
      process_in(kId3, ""), // custom cgroup parent: maybe Docker's
      process_in("", "", "")};
  processes[3].container.identity.slurm_job = "42";
  names.resolve(processes);
  EXPECT_EQ(names.reads(), 1u);
  EXPECT_EQ(processes[0].container.runtime_name, "");
  EXPECT_EQ(processes[1].container.runtime_name, "");
  EXPECT_EQ(processes[2].container.runtime_name, "named");
  EXPECT_EQ(processes[3].container.runtime_name, "");
}

TEST_F(DockerDirTest, EmptyDirectoryDisablesTheLookup) {
  add(kId, docker_config(kId, "/trainer"));
  DockerContainerNames names{fs::path()};
  std::vector<CudaProcess> processes{process_in(kId, "docker")};
  names.resolve(processes);
  EXPECT_EQ(names.reads(), 0u);
  EXPECT_EQ(processes[0].container.runtime_name, "");
}

TEST(ContainerName, KubernetesNameBeforeTheRuntimes) {
  ContainerInfo info;
  EXPECT_EQ(info.name(), "");
  info.runtime_name = "k8s_pytorch_trainer-0_ml_uid_0"; // dockershim's name for it
  EXPECT_EQ(info.name(), "k8s_pytorch_trainer-0_ml_uid_0");
  info.pod.container = "pytorch";
  EXPECT_EQ(info.name(), "pytorch");
}

} // namespace
} // namespace neutracer
