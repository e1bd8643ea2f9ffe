// SPDX-License-Identifier: Apache-2.0
#pragma once
// Finds the NVML device of a CUDA device by UUID: the CUDA driver gives a device's UUID as 16
// bytes (cuDeviceGetUuid), NVML as text ("GPU-8c1e0f3a-…"). Pure.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvml/nvml_sample.h"

namespace neutracer {

// "GPU-" and the bytes as lowercase hex grouped 8-4-4-4-12, as NVML writes a GPU's UUID.
std::string nvml_uuid_text(const std::array<std::uint8_t, 16> &bytes);

// The NVML index of the device with `uuid` (letter case ignored), or nullopt.
std::optional<unsigned> nvml_index_of_uuid(const std::vector<NvmlDevice> &devices,
                                           std::string_view uuid);

} // namespace neutracer
