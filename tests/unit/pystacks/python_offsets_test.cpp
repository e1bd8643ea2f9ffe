// SPDX-License-Identifier: Apache-2.0
// The built-in offsets, 3.13's debug offsets block, and the BPF side's copy. That the numbers
// fit real interpreters is checked live (tests/privileged/py_frames).
#include "pystacks/python_offsets.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <set>
#include <vector>

namespace neutracer {
namespace {

TEST(BuiltinOffsets, CoverCPython3_9To3_13Only) {
  for (int minor = 9; minor <= 13; ++minor) {
    const auto offsets = builtin_offsets({3, minor});
    ASSERT_TRUE(offsets.has_value()) << minor;
    EXPECT_EQ(offsets->version.minor, minor);
    EXPECT_FALSE(offsets->from_debug_offsets);
  }
  EXPECT_FALSE(builtin_offsets({3, 8}).has_value());
  EXPECT_FALSE(builtin_offsets({3, 14}).has_value());
  EXPECT_FALSE(builtin_offsets({2, 7}).has_value());
}

TEST(BuiltinOffsets, FieldsOfOneStructureDoNotOverlap) {
  for (int minor = 9; minor <= 13; ++minor) {
    const auto o = *builtin_offsets({3, minor});
    // PyThreadState: pointers and ids, 8 bytes each.
    std::set<std::uint32_t> thread{o.thread_next, o.thread_interp, o.thread_pthread_id,
                                   o.thread_frame};
    if (o.thread_native_id != kNoField)
      thread.insert(o.thread_native_id);
    EXPECT_EQ(thread.size(), o.thread_native_id != kNoField ? 5u : 4u) << minor;
    for (const auto offset : thread)
      EXPECT_EQ(offset % 8, 0u) << minor;
    // Frame: code, previous, instruction.
    EXPECT_EQ((std::set<std::uint32_t>{o.frame_code, o.frame_previous, o.frame_instr}).size(), 3u);
    // Code object: names, table, first line.
    std::set<std::uint32_t> code{o.code_filename, o.code_name, o.code_linetable,
                                 o.code_firstlineno};
    if (o.code_qualname != kNoField)
      code.insert(o.code_qualname);
    EXPECT_EQ(code.size(), o.code_qualname != kNoField ? 5u : 4u) << minor;
    EXPECT_GT(o.unicode_ascii_size, o.unicode_state);
    EXPECT_GT(o.unicode_compact_size, o.unicode_ascii_size);
  }
}

TEST(BuiltinOffsets, FrameFieldsFitTheKernelWalksWindow) {
  for (int minor = 9; minor <= 13; ++minor)
    EXPECT_TRUE(frame_fields_fit_window(*builtin_offsets({3, minor}))) << minor;
  auto moved = *builtin_offsets({3, 12});
  moved.frame_instr = 60; // not 8-aligned
  EXPECT_FALSE(frame_fields_fit_window(moved));
  moved.frame_instr = 120; // ends at 128
  EXPECT_FALSE(frame_fields_fit_window(moved));
}

TEST(BuiltinOffsets, EachVersionWalksItsOwnWay) {
  const auto v39 = *builtin_offsets({3, 9});
  const auto v310 = *builtin_offsets({3, 10});
  const auto v311 = *builtin_offsets({3, 11});
  const auto v312 = *builtin_offsets({3, 12});
  const auto v313 = *builtin_offsets({3, 13});
  EXPECT_EQ(v39.instr_kind, InstructionKind::kLastiBytes);
  EXPECT_EQ(v310.instr_kind, InstructionKind::kLastiUnits);
  EXPECT_EQ(v39.line_format, LineTableFormat::kLnotab);
  EXPECT_EQ(v310.line_format, LineTableFormat::kLinetable310);
  for (const auto &o : {v311, v312, v313}) {
    EXPECT_EQ(o.instr_kind, InstructionKind::kPointer);
    EXPECT_EQ(o.line_format, LineTableFormat::kLocations311);
    EXPECT_NE(o.thread_native_id, kNoField);
    EXPECT_NE(o.code_qualname, kNoField);
    EXPECT_NE(o.code_adaptive, kNoField);
  }
  for (const auto &o : {v39, v310}) {
    EXPECT_EQ(o.thread_native_id, kNoField); // matched by pthread id
    EXPECT_EQ(o.code_adaptive, kNoField);
    EXPECT_EQ(o.cframe_current_frame, kNoField);
  }
  // Only 3.11 and 3.12 reach the frame through a _PyCFrame; only 3.12+ has C-stack frames.
  EXPECT_NE(v311.cframe_current_frame, kNoField);
  EXPECT_NE(v312.cframe_current_frame, kNoField);
  EXPECT_EQ(v313.cframe_current_frame, kNoField);
  EXPECT_EQ(v311.frame_owner_cstack, kNoField);
  EXPECT_EQ(v312.frame_owner_cstack, 3u);
  EXPECT_EQ(v313.frame_owner_cstack, 3u);
}

// A _Py_DebugOffsets block as a 3.13.0 release build writes it (values of that build).
std::vector<std::uint8_t> debug_block() {
  std::vector<std::uint8_t> block(kDebugOffsetsSize, 0);
  std::memcpy(block.data(), "xdebugpy", 8);
  const auto put = [&](std::size_t at, std::uint64_t value) {
    std::memcpy(block.data() + at, &value, 8);
  };
  put(8, 0x030d00f0); // 3.13.0 final
  put(24, 1000);      // runtime_state: size, finalizing, interpreters_head
  put(40, 632);
  put(48, 9000); // interpreter_state: size, id, next, threads_head
  put(64, 7264);
  put(72, 7344);
  put(152, 300); // thread_state: size, prev, next, interp, current_frame, thread_id, native id
  put(168, 8);
  put(176, 16);
  put(184, 72);
  put(192, 152);
  put(200, 160);
  put(224, 80); // interpreter_frame: size, previous, executable, instr_ptr, localsplus, owner
  put(232, 8);
  put(240, 0);
  put(248, 56);
  put(264, 70);
  put(272, 220); // code_object: size, filename, name, qualname, linetable, firstlineno, ...
  put(280, 112);
  put(288, 120);
  put(296, 128);
  put(304, 136);
  put(312, 68);
  put(344, 200); // co_code_adaptive
  put(352, 16);  // pyobject: size, ob_type
  put(360, 8);
  put(512, 40); // bytes_object: size, ob_size, ob_sval
  put(520, 16);
  put(528, 32);
  put(536, 56); // unicode_object: size, state, length, asciiobject_size
  put(544, 32);
  put(552, 16);
  put(560, 40);
  return block;
}

TEST(DebugOffsets, AValidBlockGivesTheOffsetsItHolds) {
  auto block = debug_block();
  // Move two fields, as another 3.13 build might: the block wins over the built-in table.
  const std::uint64_t moved_threads_head = 7352, moved_native_id = 168;
  std::memcpy(block.data() + 72, &moved_threads_head, 8);
  std::memcpy(block.data() + 200, &moved_native_id, 8);
  const auto result = offsets_from_debug_offsets(block);
  ASSERT_TRUE(result.offsets.has_value()) << result.error;
  const auto &o = *result.offsets;
  EXPECT_TRUE(o.from_debug_offsets);
  EXPECT_EQ(o.version.text(), "3.13.0");
  EXPECT_EQ(o.runtime_interpreters_head, 632u);
  EXPECT_EQ(o.interp_threads_head, 7352u);
  EXPECT_EQ(o.thread_native_id, 168u);
  EXPECT_EQ(o.thread_frame, 72u);
  EXPECT_EQ(o.frame_code, 0u);
  EXPECT_EQ(o.frame_instr, 56u);
  EXPECT_EQ(o.frame_owner, 70u);
  EXPECT_EQ(o.code_qualname, 128u);
  EXPECT_EQ(o.code_adaptive, 200u);
  EXPECT_EQ(o.unicode_ascii_size, 40u);
  EXPECT_EQ(o.unicode_compact_size, 56u);
  // What the block does not hold comes from the table.
  EXPECT_EQ(o.frame_owner_cstack, 3u);
  EXPECT_EQ(o.line_format, LineTableFormat::kLocations311);
}

TEST(DebugOffsets, BlocksThatAreNotWhatWeThinkAreRefused) {
  const auto refused = [](std::vector<std::uint8_t> block, const char *why) {
    const auto result = offsets_from_debug_offsets(block);
    EXPECT_FALSE(result.offsets.has_value()) << why;
    EXPECT_FALSE(result.error.empty()) << why;
  };
  auto block = debug_block();
  refused(std::vector<std::uint8_t>(block.begin(), block.begin() + 100), "truncated");
  block[0] = 'y';
  refused(block, "cookie");
  block = debug_block();
  const std::uint64_t v314 = 0x030e00f0, one = 1, huge = 1ull << 40, outside = 400;
  std::memcpy(block.data() + 8, &v314, 8);
  refused(block, "3.14 lays the block out differently");
  block = debug_block();
  std::memcpy(block.data() + 16, &one, 8);
  refused(block, "free-threaded");
  block = debug_block();
  std::memcpy(block.data() + 152, &huge, 8);
  refused(block, "a huge structure");
  block = debug_block();
  std::memcpy(block.data() + 200, &outside, 8);
  refused(block, "an offset past its structure's size");
  block = debug_block();
  const std::uint64_t far_frame = 1000, unaligned = 60;
  std::memcpy(block.data() + 224, &far_frame, 8); // interpreter_frame size
  std::memcpy(block.data() + 248, &outside, 8);   // instr_ptr at 400
  refused(block, "frame fields beyond the kernel walk's window");
  block = debug_block();
  std::memcpy(block.data() + 248, &unaligned, 8);
  refused(block, "a frame pointer field not 8-aligned");
}

// The ABI's layout, as the BPF side writes it (fixed-width fields, no hidden padding).
static_assert(sizeof(nt_python_frame) == 16);
static_assert(sizeof(nt_python_stack) == 8 + 16 * NT_PYTHON_FRAMES_MAX);
static_assert(sizeof(nt_python_offsets) == 3 * 8 + 14 * 4);
static_assert(offsetof(nt_python_offsets, version) == 24);

TEST(AbiOffsets, TheKernelSideGetsWhatItsWalkReads) {
  const auto v39 = to_abi_offsets(*builtin_offsets({3, 9}), 0x7f00, 123, 10'000'000);
  EXPECT_EQ(v39.runtime_address, 0x7f00u);
  EXPECT_EQ(v39.proc_start_ns, 1'230'000'000u);
  EXPECT_EQ(v39.ns_per_tick, 10'000'000u);
  EXPECT_EQ(v39.version, 0x309u);
  EXPECT_EQ(v39.thread_match, static_cast<nt_u32>(NT_PYTHON_MATCH_PTHREAD));
  EXPECT_EQ(v39.thread_id, 176u);
  EXPECT_EQ(v39.frame_instr_size, 4u);
  EXPECT_EQ(v39.cframe_current_frame, NT_PYTHON_NO_FIELD);
  EXPECT_EQ(v39.frame_owner, NT_PYTHON_NO_FIELD);

  const auto v311 = to_abi_offsets(*builtin_offsets({3, 11}), 1, 0, 10'000'000);
  EXPECT_EQ(v311.thread_match, static_cast<nt_u32>(NT_PYTHON_MATCH_NATIVE_ID));
  EXPECT_EQ(v311.thread_id, 160u);
  EXPECT_EQ(v311.frame_instr_size, 8u);
  EXPECT_EQ(v311.cframe_current_frame, 8u);
  EXPECT_EQ(v311.frame_owner, NT_PYTHON_NO_FIELD); // 3.11 has no frames to skip

  const auto v312 = to_abi_offsets(*builtin_offsets({3, 12}), 1, 0, 10'000'000);
  EXPECT_EQ(v312.frame_owner, 70u);
  EXPECT_EQ(v312.frame_owner_skip, 3u);
  EXPECT_EQ(v312.proc_start_ns, 0u); // any process of the PID
}

} // namespace
} // namespace neutracer
