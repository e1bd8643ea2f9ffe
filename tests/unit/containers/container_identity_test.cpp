// SPDX-License-Identifier: Apache-2.0
// Container identity from /proc/<pid>/cgroup: one fixture file per runtime layout
// (tests/fixtures/cgroup/), then edge cases inline.
#include "containers/container_identity.h"

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <vector>

namespace neutracer {
namespace {

std::string read_fixture(const std::string &name) {
  std::ifstream file(std::string(NEUTRACER_FIXTURES_DIR) + "/cgroup/" + name);
  if (!file)
    throw std::runtime_error("missing fixture " + name);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

struct Layout {
  const char *fixture;
  ContainerIdentity expected;
};

void PrintTo(const Layout &layout, std::ostream *out) { *out << layout.fixture; }

class CgroupLayout : public ::testing::TestWithParam<Layout> {};

TEST_P(CgroupLayout, GivesTheContainerRuntimeAndPod) {
  const auto &layout = GetParam();
  const auto identity = container_identity_from_cgroup(read_fixture(layout.fixture));
  EXPECT_EQ(identity.id, layout.expected.id);
  EXPECT_EQ(identity.runtime, layout.expected.runtime);
  EXPECT_EQ(identity.pod_uid, layout.expected.pod_uid);
  EXPECT_EQ(identity.slurm_job, layout.expected.slurm_job);
}

constexpr const char *kUid1 = "92221d12-8329-4c28-ac5a-a59d6ab00aa1";
constexpr const char *kUid2 = "7edc9c3e-21bc-42e6-a123-f299d6182ba0";
constexpr const char *kUid3 = "003600d5-72b8-4203-b499-684d98640f04";
constexpr const char *kUid4 = "ced7ef29-f0ce-40f5-b87a-69d2364d5662";

INSTANTIATE_TEST_SUITE_P(
    Fixtures, CgroupLayout,
    ::testing::Values(
        Layout{"docker-cgroupfs-v1",
               {"29a1cd509ef12885508001e0e0a77078340cdd9081a78a36768a3de4c6c0c729", "docker", ""}},
        Layout{"docker-systemd-v2",
               {"595cb6be7ccce4b5afb1e48a03e743c353c455e5553bfbceab848c606130be07", "docker", ""}},
        Layout{"kubernetes-containerd-systemd-v2",
               {"a8295f8276d62017c082883e77e0c09db98908ea2a903e51b1e84c501d3c2106", "containerd",
                kUid1}},
        Layout{"kubernetes-containerd-systemd-v1",
               {"386dc22f7626d7527b1c71ef946e1fc0392e25a35281bf39e3ebbc3518033a87", "containerd",
                kUid2}},
        // The cgroupfs driver's path does not name the runtime.
        Layout{"kubernetes-cgroupfs-burstable-v1",
               {"b8dab1303be3aadc0cba039b26fc42da8b6215b4ed7a02d68a5d06d43cccede4", "", kUid3}},
        Layout{"kubernetes-cgroupfs-besteffort-v2",
               {"0cffadabb13e7a2d59846d78bfd342df85ce1a3fb2718202053c0d8b6583236a", "", kUid4}},
        Layout{"kubernetes-cgroupfs-guaranteed-v1",
               {"048518625592c640fc4d49d78dbfeee1a261df3e0f085c413bea4d00ea3a1362", "", kUid1}},
        Layout{
            "crio-guaranteed-v2",
            {"7890cac35f8ab1abd6912b5fd90a5e4a3ba98310ed7a5773b0145c60b237297f", "cri-o", kUid2}},
        Layout{"crio-conmon-v2", {}},
        Layout{"podman-rootful-v2",
               {"5a26e180ab6b1a5744371028c329208682c08c88ecd67ef80589738a5653701f", "podman", ""}},
        Layout{"podman-rootless-v2",
               {"a6597b440e96ea239414609b23aa6c987a6d06a96e30d5af887fe3d4cdc1da4e", "podman", ""}},
        Layout{"podman-rootless-conmon-v2", {}},
        Layout{
            "nerdctl-systemd-v2",
            {"516172503ff833c4bb6137f87f4baf1746624cc5259f2550d54a643a4be8f8db", "containerd", ""}},
        Layout{
            "nerdctl-cgroupfs-v1",
            {"29a1cd509ef12885508001e0e0a77078340cdd9081a78a36768a3de4c6c0c729", "containerd", ""}},
        Layout{"host-service-v2", {}}, Layout{"host-session-v1", {}},
        // Slurm jobs: no container, the job id.
        Layout{"slurm-v2", {"", "", "", "1234"}}, Layout{"slurm-stepd-v2", {"", "", "", "1234"}},
        Layout{"slurm-batch-multiple-slurmd-v2", {"", "", "", "4294967294"}},
        Layout{"slurm-v1", {"", "", "", "5678"}}),
    [](const ::testing::TestParamInfo<Layout> &info) {
      std::string name = info.param.fixture;
      for (auto &c : name)
        if (c == '-')
          c = '_';
      return name;
    });

constexpr const char *kId = "3f4e9c1d2b7a8e6f5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e";
constexpr const char *kId2 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

ContainerIdentity parse(const std::string &text) { return container_identity_from_cgroup(text); }

TEST(ContainerIdentity, ContainerdCgroupsPathLeftAsOneDirectory) {
  // kind nodes: containerd's "slice:prefix:id" under containerd.service.
  const auto identity =
      parse(std::string("0::/system.slice/containerd.service/"
                        "kubepods-besteffort-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice:"
                        "cri-containerd:") +
            kId + "\n");
  EXPECT_EQ(identity,
            (ContainerIdentity{kId, "containerd", "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d"}));
}

TEST(ContainerIdentity, StaticPodUidIsAManifestHash) {
  const auto identity = parse(std::string("0::/kubepods.slice/kubepods-burstable.slice/"
                                          "kubepods-burstable-pod6c8d1f8e2b3a4c5d9e0f1a2b3c4d5e6f"
                                          ".slice/cri-containerd-") +
                              kId + ".scope\n");
  EXPECT_EQ(identity.pod_uid, "6c8d1f8e2b3a4c5d9e0f1a2b3c4d5e6f");
}

TEST(ContainerIdentity, MalformedPodUidIsLeftOut) {
  // One hex digit short: the container is still found, the pod uid is not invented.
  const auto identity =
      parse(std::string("0::/kubepods/burstable/pod5f3e1a2b-4c6d-4e8f-9a0b-1c2d3e4f5a6/") + kId);
  EXPECT_EQ(identity, (ContainerIdentity{kId, "", ""}));
}

TEST(ContainerIdentity, PodmanInitSubgroupAndCgroupfsParent) {
  EXPECT_EQ(parse(std::string("0::/machine.slice/libpod-") + kId + ".scope/container\n"),
            (ContainerIdentity{kId, "podman", ""}));
  EXPECT_EQ(parse(std::string("0::/libpod_parent/") + kId + "\n"),
            (ContainerIdentity{kId, "podman", ""}));
}

TEST(ContainerIdentity, CrioUnderTheCgroupfsDriver) {
  EXPECT_EQ(parse(std::string("0::/kubepods/besteffort/pod12345678-aaaa-bbbb-cccc-1234567890ab/"
                              "crio-") +
                  kId + "\n"),
            (ContainerIdentity{kId, "cri-o", "12345678-aaaa-bbbb-cccc-1234567890ab"}));
}

TEST(ContainerIdentity, NestedContainersGiveTheInnermost) {
  EXPECT_EQ(parse(std::string("0::/docker/") + kId + "/docker/" + kId2 + "\n"),
            (ContainerIdentity{kId2, "docker", ""}));
}

TEST(ContainerIdentity, UnknownLayoutGivesTheIdWithoutRuntime) {
  EXPECT_EQ(parse(std::string("0::/ecs/task-7/") + kId + "\n"), (ContainerIdentity{kId, "", ""}));
  EXPECT_EQ(parse(std::string("0::/custom.slice/job-") + kId + ".scope\n"),
            (ContainerIdentity{kId, "", ""}));
}

TEST(ContainerIdentity, HybridRootLineDoesNotHideTheContainer) {
  // cgroup v1 with an unused unified hierarchy listed first.
  EXPECT_EQ(parse(std::string("0::/\n4:memory:/docker/") + kId + "\n1:name=systemd:/docker/" + kId),
            (ContainerIdentity{kId, "docker", ""}));
}

TEST(ContainerIdentity, CarriageReturnsAreIgnored) {
  EXPECT_EQ(parse(std::string("0::/system.slice/docker-") + kId + ".scope\r\n"),
            (ContainerIdentity{kId, "docker", ""}));
}

TEST(ContainerIdentity, NotAContainer) {
  const std::string id = kId;
  const std::vector<std::string> texts = {
      "", "\n\n", "0::/\n", "0::/system.slice/docker.service\n", "0::/init.scope\n",
      "garbage without colons\n", "12:pids\n", "0::/docker/" + id.substr(1),
      "0::/docker/" + id + "a", "0::/docker/x" + id, "0::/docker/" + id + "z",
      // Upper-case hex is not how runtimes write ids.
      "0::/docker/3F4E9C1D2B7A8E6F5D4C3B2A1F0E9D8C7B6A5F4E3D2C1B0A9F8E7D6C5B4A3F2E",
      "0::/system.slice/crio-conmon-" + id + ".scope",
      "0::/kubepods/burstable/pod12345678-aaaa-bbbb-cccc-1234567890ab\n"};
  for (const auto &text : texts)
    EXPECT_EQ(parse(text), ContainerIdentity{}) << text;
}

TEST(SlurmJob, InAndAroundContainers) {
  // A container started inside a job's step (Slurm's scope is the container's parent) and a
  // Slurm node running in a container (the cgroup namespace's root is the container's).
  EXPECT_EQ(parse(std::string("0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0/"
                              "docker-") +
                  kId + ".scope\n"),
            (ContainerIdentity{kId, "docker", "", "42"}));
  EXPECT_EQ(
      parse(std::string("0::/docker/") + kId + "/system.slice/slurmstepd.scope/job_42/step_0\n"),
      (ContainerIdentity{kId, "docker", "", "42"}));
  // Nested jobs (a Slurm cluster inside a job): the innermost, as with containers.
  EXPECT_EQ(slurm_job_from_cgroup("0::/system.slice/slurmstepd.scope/job_1/step_0/user/task_0/"
                                  "system.slice/slurmstepd.scope/job_2/step_0\n"),
            "2");
}

TEST(SlurmJob, LaterV1LineWhenTheFirstIsSlurmds) {
  EXPECT_EQ(slurm_job_from_cgroup("1:name=systemd:/system.slice/slurmd.service\n"
                                  "4:memory:/slurm_node3/uid_0/job_9/step_extern/task_0\n"),
            "9");
  EXPECT_EQ(parse("0::/\r\n11:freezer:/slurm/uid_1000/job_77/step_batch\r\n").slurm_job, "77");
}

TEST(SlurmJob, OnlySlurmsJobDirectories) {
  const std::vector<std::string> texts = {
      "", "0::/\n", "0::/system.slice/slurmd.service\n",
      "0::/system.slice/slurmstepd.scope\n",         // slurmstepd's own scope, no job
      "0::/system.slice/slurmstepd.scope/system\n",  // the scope's idle leaf
      "0::/user.slice/job_1234\n",                   // a job_ directory not under Slurm
      "0::/batch/uid_1000/job_1234/step_0\n",        // v1 layout under another root
      "4:memory:/slurm/job_1234/step_0\n",           // no uid_ level
      "4:memory:/slurm/uid_x/job_1234/step_0\n",     // uid not numeric
      "4:memory:/slurmx/uid_1/job_1234/step_0\n",    // another root's name
      "4:memory:/slurm_/uid_1/job_1234/step_0\n",    // no node after the underscore
      "0::/system.slice/xslurmstepd.scope/job_1\n",  // not <node>_slurmstepd.scope
      "0::/system.slice/_slurmstepd.scope/job_1\n",  // empty node name
      "0::/system.slice/slurmstepd.scope/job_\n",    // no id
      "0::/system.slice/slurmstepd.scope/job_12a\n", // not decimal
      "0::/system.slice/slurmstepd.scope/job_-1\n",
      "0::/system.slice/slurmstepd.scope/job_12345678901\n", // 11 digits: not a 32-bit id
      // A SLUID directory (CgroupJobIdPaths=no in newer Slurm) is not a job_<id>.
      "0::/system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_0/user/task_0\n", "garbage\n",
      "0:/system.slice/slurmstepd.scope/job_1\n"};
  for (const auto &text : texts) {
    EXPECT_EQ(slurm_job_from_cgroup(text), "") << text;
    EXPECT_EQ(parse(text), ContainerIdentity{}) << text;
  }
}

TEST(ContainerIdentity, Predicates) {
  EXPECT_TRUE(is_container_id(kId));
  EXPECT_FALSE(is_container_id(std::string(kId).substr(1)));
  EXPECT_FALSE(is_container_id(std::string(kId).substr(1) + "g"));
  EXPECT_TRUE(is_pod_uid("92221d12-8329-4c28-ac5a-a59d6ab00aa1"));
  EXPECT_TRUE(is_pod_uid("6c8d1f8e2b3a4c5d9e0f1a2b3c4d5e6f"));
  EXPECT_FALSE(is_pod_uid("92221d12_8329_4c28_ac5a_a59d6ab00aa1"));
  EXPECT_FALSE(is_pod_uid("92221d1-28329-4c28-ac5a-a59d6ab00aa1"));
  EXPECT_FALSE(is_pod_uid(""));
}

} // namespace
} // namespace neutracer
