// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which host GPU each CUDA device ordinal of a process is: CUDA_VISIBLE_DEVICES and the
// container runtime's NVIDIA_VISIBLE_DEVICES applied to the host's GPUs. Pure.
#include <string>
#include <string_view>
#include <vector>

namespace neutracer {

struct HostGpu {
  int index = 0;          // as nvidia-smi and NVML number it: by PCI bus id
  std::string uuid;       // "GPU-…"
  std::string pci_bus_id; // "0000:18:00.0"
};

// The `gpu` label (host index) of each CUDA device ordinal 0, 1, … the process can use,
// from its NUL-separated /proc/<pid>/environ. `host` lists the host's GPUs (empty when
// unknown). Empty result: no restriction and no host list, so the ordinal is the index.
// Like the CUDA runtime, parsing a device list stops at its first invalid entry; devices
// named by UUID (or a unique UUID prefix) need `host` to be resolved.
std::vector<std::string> visible_gpu_labels(std::string_view environ,
                                            const std::vector<HostGpu> &host);

// The value of `name` in a NUL-separated environment block, or nullopt-like empty
// `found == false`.
struct EnvironmentValue {
  bool found = false;
  std::string value;
};
EnvironmentValue environment_value(std::string_view environ, std::string_view name);

} // namespace neutracer
