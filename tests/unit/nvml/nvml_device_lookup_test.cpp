// SPDX-License-Identifier: Apache-2.0
#include "nvml/nvml_device_lookup.h"

#include <gtest/gtest.h>

namespace neutracer {
namespace {

TEST(NvmlDeviceLookup, FormatsCudaUuidBytesTheWayNvmlWritesThem) {
  const std::array<std::uint8_t, 16> bytes = {0x8c, 0x1e, 0x0f, 0x3a, 0x11, 0x22, 0x33, 0x44,
                                              0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc};
  EXPECT_EQ(nvml_uuid_text(bytes), "GPU-8c1e0f3a-1122-3344-5566-778899aabbcc");
  EXPECT_EQ(nvml_uuid_text({}), "GPU-00000000-0000-0000-0000-000000000000");
}

TEST(NvmlDeviceLookup, FindsTheIndexByUuidIgnoringCase) {
  const std::vector<NvmlDevice> devices = {
      {0, "GPU-11111111-2222-3333-4444-555555555555", "A", "00000000:17:00.0", 3u},
      {2, "GPU-8c1e0f3a-1122-3344-5566-778899aabbcc", "B", "00000000:65:00.0", 1u}};
  EXPECT_EQ(nvml_index_of_uuid(devices, "GPU-8c1e0f3a-1122-3344-5566-778899aabbcc"), 2u);
  EXPECT_EQ(nvml_index_of_uuid(devices, "GPU-8C1E0F3A-1122-3344-5566-778899AABBCC"), 2u);
  EXPECT_EQ(nvml_index_of_uuid(devices, "GPU-11111111-2222-3333-4444-555555555555"), 0u);
  EXPECT_EQ(nvml_index_of_uuid(devices, "GPU-8c1e0f3a"), std::nullopt); // no prefix matching
  EXPECT_EQ(nvml_index_of_uuid(devices, ""), std::nullopt);
  EXPECT_EQ(nvml_index_of_uuid({}, "GPU-8c1e0f3a-1122-3344-5566-778899aabbcc"), std::nullopt);
}

TEST(NvmlDeviceLookup, ADeviceWithoutAUuidMatchesNothing) {
  const std::vector<NvmlDevice> devices = {{0, "", "A", "", std::nullopt}};
  EXPECT_EQ(nvml_index_of_uuid(devices, ""), std::nullopt);
  EXPECT_EQ(nvml_index_of_uuid(devices, "GPU-x"), std::nullopt);
}

} // namespace
} // namespace neutracer
