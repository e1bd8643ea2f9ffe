// SPDX-License-Identifier: Apache-2.0
#include "nvml/nvml_process_layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace neutracer {
namespace {

// A buffer for `capacity` entries, pre-filled as the loader does, with `entries` written at
// `stride` the way a driver of that layout writes them.
template <typename Entry>
std::vector<std::byte> written(const std::vector<Entry> &entries, unsigned capacity = 8) {
  std::vector<std::byte> buffer(nvml_process_buffer_bytes(capacity), kNvmlUnwrittenByte);
  std::memcpy(buffer.data(), entries.data(), entries.size() * sizeof(Entry));
  return buffer;
}

const std::vector<NvmlProcessMemory> kExpected = {
    {4242, 536870912}, {77, NT_NVML_VALUE_NOT_AVAILABLE}, {4194304, 0}};

TEST(NvmlProcessLayout, ReadsCurrentTwentyFourByteEntries) {
  const std::vector<nt_nvml_process_v2> entries = {{4242, 536870912, 0xFFFFFFFF, 0xFFFFFFFF},
                                                   {77, NT_NVML_VALUE_NOT_AVAILABLE, 1, 0},
                                                   {4194304, 0, 0xFFFFFFFF, 0xFFFFFFFF}};
  const auto buffer = written(entries);
  EXPECT_EQ(nvml_process_stride(buffer, 3), 24u);
  EXPECT_EQ(decode_nvml_processes(buffer, 3), kExpected);
}

TEST(NvmlProcessLayout, ReadsR535ThirtyTwoByteEntries) {
  const std::vector<nt_nvml_process_v3_r535> entries = {
      {4242, 536870912, 0xFFFFFFFF, 0xFFFFFFFF, 0},
      {77, NT_NVML_VALUE_NOT_AVAILABLE, 1, 0, 0},
      {4194304, 0, 0xFFFFFFFF, 0xFFFFFFFF, 0}};
  const auto buffer = written(entries);
  EXPECT_EQ(nvml_process_stride(buffer, 3), 32u);
  EXPECT_EQ(decode_nvml_processes(buffer, 3), kExpected);
}

TEST(NvmlProcessLayout, ReadsLegacySixteenByteEntries) {
  const std::vector<nt_nvml_process_v1> entries = {
      {4242, 536870912}, {77, NT_NVML_VALUE_NOT_AVAILABLE}, {4194304, 0}};
  const auto buffer = written(entries);
  EXPECT_EQ(nvml_process_stride(buffer, 3), 16u);
  EXPECT_EQ(decode_nvml_processes(buffer, 3), kExpected);
}

TEST(NvmlProcessLayout, OneEntryOfEachLayoutIsToldApart) {
  EXPECT_EQ(nvml_process_stride(written(std::vector<nt_nvml_process_v1>{{9, 1}}), 1), 16u);
  EXPECT_EQ(nvml_process_stride(written(std::vector<nt_nvml_process_v2>{{9, 1, 0, 0}}), 1), 24u);
  EXPECT_EQ(nvml_process_stride(written(std::vector<nt_nvml_process_v3_r535>{{9, 1, 0, 0, 0}}), 1),
            32u);
}

TEST(NvmlProcessLayout, NoProcessesIsAnEmptyList) {
  const std::vector<std::byte> untouched(nvml_process_buffer_bytes(8), kNvmlUnwrittenByte);
  const auto processes = decode_nvml_processes(untouched, 0);
  ASSERT_TRUE(processes.has_value());
  EXPECT_TRUE(processes->empty());
}

TEST(NvmlProcessLayout, RefusesACountThatMatchesNoLayout) {
  // Two 24-byte entries written (48 bytes), but the driver claims four.
  const std::vector<nt_nvml_process_v2> entries = {{1, 2, 0, 0}, {3, 4, 0, 0}};
  EXPECT_EQ(nvml_process_stride(written(entries), 4), std::nullopt);
  EXPECT_EQ(decode_nvml_processes(written(entries), 4), std::nullopt);
}

TEST(NvmlProcessLayout, APidCheckCatchesAWrongCountThatFitsAnotherStride) {
  // 48 written bytes also end three 16-byte entries; read that way, the second "pid" is the
  // first entry's GPU instance id (0).
  const std::vector<nt_nvml_process_v2> entries = {{1, 2, 0, 0}, {3, 4, 0, 0}};
  EXPECT_EQ(nvml_process_stride(written(entries), 3), 16u);
  EXPECT_EQ(decode_nvml_processes(written(entries), 3), std::nullopt);
}

TEST(NvmlProcessLayout, RefusesACountBeyondTheBuffer) {
  const std::vector<nt_nvml_process_v2> entries = {{1, 2, 0, 0}, {3, 4, 0, 0}};
  EXPECT_EQ(decode_nvml_processes(written(entries, 2), 5), std::nullopt);
}

TEST(NvmlProcessLayout, RefusesImpossiblePids) {
  EXPECT_EQ(decode_nvml_processes(written(std::vector<nt_nvml_process_v2>{{0, 2, 0, 0}}), 1),
            std::nullopt);
  EXPECT_EQ(decode_nvml_processes(written(std::vector<nt_nvml_process_v2>{{4194305, 2, 0, 0}}), 1),
            std::nullopt);
}

TEST(NvmlProcessLayout, NothingWrittenIsNotAnEntry) {
  const std::vector<std::byte> untouched(nvml_process_buffer_bytes(4), kNvmlUnwrittenByte);
  EXPECT_EQ(decode_nvml_processes(untouched, 1), std::nullopt);
}

} // namespace
} // namespace neutracer
