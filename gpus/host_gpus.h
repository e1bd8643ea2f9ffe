// SPDX-License-Identifier: Apache-2.0
#pragma once
// The host's NVIDIA GPUs as the kernel driver lists them under /proc/driver/nvidia/gpus,
// numbered like nvidia-smi and NVML (by PCI bus id). Needs neither NVML nor a device node.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpus/visible_gpus.h"

namespace neutracer {

// The "GPU UUID:" value of a /proc/driver/nvidia/gpus/<bus id>/information file.
std::optional<std::string> gpu_uuid_from_information(std::string_view text);

// Reads <proc_root>/driver/nvidia/gpus; empty when the driver is not loaded.
std::vector<HostGpu> read_host_gpus(const std::filesystem::path &proc_root);

} // namespace neutracer
