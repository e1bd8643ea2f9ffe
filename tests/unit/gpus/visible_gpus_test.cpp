// SPDX-License-Identifier: Apache-2.0
#include "gpus/host_gpus.h"
#include "gpus/visible_gpus.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace neutracer {
namespace {

using namespace std::string_literals;
using Labels = std::vector<std::string>;

const std::vector<HostGpu> kFourGpus = {
    {0, "GPU-0a1b2c3d-0000-1111-2222-333344445555", "0000:18:00.0"},
    {1, "GPU-1a1b2c3d-0000-1111-2222-333344445555", "0000:2a:00.0"},
    {2, "GPU-2a1b2c3d-0000-1111-2222-333344445555", "0000:3a:00.0"},
    {3, "GPU-2a9b2c3d-0000-1111-2222-333344445555", "0000:5d:00.0"},
};

std::string environ_of(std::initializer_list<std::string> entries) {
  std::string text;
  for (const auto &entry : entries)
    text += entry + '\0';
  return text;
}

TEST(VisibleGpus, NoRestrictionGivesEveryHostGpuOrNothing) {
  const auto env = environ_of({"PATH=/usr/bin", "HOME=/root"});
  EXPECT_EQ(visible_gpu_labels(env, kFourGpus), (Labels{"0", "1", "2", "3"}));
  EXPECT_TRUE(visible_gpu_labels(env, {}).empty());
  EXPECT_EQ(visible_gpu_labels(environ_of({"NVIDIA_VISIBLE_DEVICES=all"}), kFourGpus).size(), 4u);
}

TEST(VisibleGpus, CudaVisibleDevicesReordersAndStopsAtTheFirstInvalidEntry) {
  EXPECT_EQ(visible_gpu_labels(environ_of({"CUDA_VISIBLE_DEVICES=2,0"}), kFourGpus),
            (Labels{"2", "0"}));
  EXPECT_EQ(visible_gpu_labels(environ_of({"CUDA_VISIBLE_DEVICES=1, 3 ,x,0"}), kFourGpus),
            (Labels{"1", "3"}));
  EXPECT_EQ(visible_gpu_labels(environ_of({"CUDA_VISIBLE_DEVICES=1,7,0"}), kFourGpus),
            (Labels{"1"}));
  EXPECT_EQ(visible_gpu_labels(environ_of({"CUDA_VISIBLE_DEVICES=1,1"}), kFourGpus), (Labels{"1"}));
  // Without a host list the indices cannot be checked, but they are still host indices.
  EXPECT_EQ(visible_gpu_labels(environ_of({"CUDA_VISIBLE_DEVICES=5,4"}), {}), (Labels{"5", "4"}));
}

TEST(VisibleGpus, UuidsAndUniquePrefixesNameHostGpus) {
  EXPECT_EQ(visible_gpu_labels(environ_of({"CUDA_VISIBLE_DEVICES=GPU-1a1b,GPU-2a9"}), kFourGpus),
            (Labels{"1", "3"}));
  // "GPU-2a" matches two GPUs: invalid, so the list ends there.
  EXPECT_EQ(visible_gpu_labels(environ_of({"CUDA_VISIBLE_DEVICES=0,GPU-2a,1"}), kFourGpus),
            (Labels{"0"}));
  EXPECT_TRUE(visible_gpu_labels(environ_of({"CUDA_VISIBLE_DEVICES=MIG-abc"}), kFourGpus).empty());
}

TEST(VisibleGpus, ContainerRuntimeListComesFirstAndCudaIndexesIntoIt) {
  // The container sees host GPUs 1 and 3 as its devices 0 and 1.
  const auto in_container = environ_of({"NVIDIA_VISIBLE_DEVICES=1,3"});
  EXPECT_EQ(visible_gpu_labels(in_container, kFourGpus), (Labels{"1", "3"}));
  EXPECT_EQ(visible_gpu_labels(environ_of({"NVIDIA_VISIBLE_DEVICES=1,3", "CUDA_VISIBLE_DEVICES=1"}),
                               kFourGpus),
            (Labels{"3"}));
  EXPECT_EQ(visible_gpu_labels(environ_of({"NVIDIA_VISIBLE_DEVICES=GPU-2a9b"}), kFourGpus),
            (Labels{"3"}));
  // A UUID outside the container's GPUs is invalid.
  EXPECT_TRUE(
      visible_gpu_labels(environ_of({"NVIDIA_VISIBLE_DEVICES=1", "CUDA_VISIBLE_DEVICES=GPU-0a1b"}),
                         kFourGpus)
          .empty());
}

TEST(VisibleGpus, EnvironmentValueMatchesWholeNamesOnly) {
  const auto env = environ_of({"XCUDA_VISIBLE_DEVICES=9", "CUDA_VISIBLE_DEVICES=", "A=b=c"});
  EXPECT_FALSE(environment_value(env, "CUDA_VISIBLE").found);
  EXPECT_TRUE(environment_value(env, "CUDA_VISIBLE_DEVICES").found);
  EXPECT_EQ(environment_value(env, "CUDA_VISIBLE_DEVICES").value, "");
  EXPECT_EQ(environment_value(env, "A").value, "b=c");
  EXPECT_FALSE(environment_value("", "A").found);
  EXPECT_EQ(environment_value("A=1"s, "A").value, "1"); // no trailing NUL
}

TEST(HostGpus, ReadsUuidsFromTheDriverInformationFiles) {
  EXPECT_EQ(
      gpu_uuid_from_information("Model: \t\t NVIDIA H200\nIRQ: 52\nGPU UUID: \t "
                                "GPU-6c3d3e43-1111-2222-3333-444455556666\r\nVideo BIOS: x\n"),
      "GPU-6c3d3e43-1111-2222-3333-444455556666");
  EXPECT_FALSE(gpu_uuid_from_information("Model: NVIDIA H200\n").has_value());
  EXPECT_FALSE(gpu_uuid_from_information("GPU UUID:   \n").has_value());

  const auto root =
      std::filesystem::temp_directory_path() / ("neutracer-host-gpus-" + std::to_string(getpid()));
  std::filesystem::remove_all(root);
  for (const auto &[bus, uuid] :
       {std::pair{"0000:9a:00.0", "GPU-bbbb"}, std::pair{"0000:1b:00.0", "GPU-aaaa"}}) {
    const auto dir = root / "driver/nvidia/gpus" / bus;
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "information") << "Model: H200\nGPU UUID: " << uuid << "\n";
  }
  const auto gpus = read_host_gpus(root);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].index, 0); // numbered by PCI bus id, like nvidia-smi
  EXPECT_EQ(gpus[0].pci_bus_id, "0000:1b:00.0");
  EXPECT_EQ(gpus[0].uuid, "GPU-aaaa");
  EXPECT_EQ(gpus[1].uuid, "GPU-bbbb");
  EXPECT_TRUE(read_host_gpus(root / "nothing").empty());
  std::filesystem::remove_all(root);
}

} // namespace
} // namespace neutracer
