// SPDX-License-Identifier: Apache-2.0
#include "nvml/nvml_device_lookup.h"

#include <algorithm>
#include <cctype>

namespace neutracer {

std::string nvml_uuid_text(const std::array<std::uint8_t, 16> &bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text = "GPU-";
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      text += '-';
    text += kHex[bytes[i] >> 4];
    text += kHex[bytes[i] & 0xF];
  }
  return text;
}

std::optional<unsigned> nvml_index_of_uuid(const std::vector<NvmlDevice> &devices,
                                           std::string_view uuid) {
  const auto same = [uuid](const NvmlDevice &device) {
    return !uuid.empty() && std::equal(device.uuid.begin(), device.uuid.end(), uuid.begin(),
                                       uuid.end(), [](char a, char b) {
                                         return std::tolower(static_cast<unsigned char>(a)) ==
                                                std::tolower(static_cast<unsigned char>(b));
                                       });
  };
  const auto found = std::find_if(devices.begin(), devices.end(), same);
  if (found == devices.end())
    return std::nullopt;
  return found->index;
}

} // namespace neutracer
