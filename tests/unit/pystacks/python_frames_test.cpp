// SPDX-License-Identifier: Apache-2.0
// The user-space frame walk and frame resolution over fake interpreters of each version:
// thread lists, frames (C-stack entry frames skipped), truncation, garbage, and the bounded
// code cache.
#include <gtest/gtest.h>

#include "pystacks/python_frame_resolver.h"
#include "pystacks/python_thread_walker.h"
#include "tests/unit/fake_python.h"

namespace neutracer {
namespace {

using test::FakePython;

// Byte offsets 0-3 on the first line, 4-7 on the next, 8-11 on the one after, in each format.
std::vector<std::uint8_t> three_line_table(int minor) {
  if (minor == 9)
    return {4, 1, 4, 1};
  if (minor == 10)
    return {4, 0, 4, 1, 4, 1};
  return {0xd1, 0, 0, 0xd9, 0, 0, 0xd9, 0, 0}; // one-line entries of 2 units: +0, +1, +1
}

class PythonFrames : public testing::TestWithParam<int> {
protected:
  int minor() const { return GetParam(); }
  FakePython python{PythonVersion{3, GetParam()}};

  // main thread: <module> (line 30) -> outer (line 21) -> inner (line 12), innermost first.
  struct Built {
    std::uint64_t runtime, interpreter, main_thread, worker_thread;
    std::uint64_t inner_code, outer_code, module_code;
  };
  Built build() {
    Built b{};
    const auto table = three_line_table(minor());
    b.module_code = python.code("/app/train.py", "<module>", 30, table);
    b.outer_code = python.code("/app/train.py", "outer", 19, table);
    b.inner_code = python.code("/app/model.py", "inner", 10, table, "Model.inner");
    const auto module_frame = python.frame(b.module_code, python.instr_at(b.module_code, 0), 0);
    const auto outer_frame =
        python.frame(b.outer_code, python.instr_at(b.outer_code, 8), module_frame);
    const auto inner_frame =
        python.frame(b.inner_code, python.instr_at(b.inner_code, 9), outer_frame);
    b.interpreter = python.interpreter();
    const auto worker_frame = python.frame(b.inner_code, python.instr_at(b.inner_code, 4), 0);
    b.main_thread = python.thread(b.interpreter, 1001, 0x7f0001, inner_frame);
    b.worker_thread = python.thread(b.interpreter, 1002, 0x7f0002, worker_frame, b.main_thread);
    python.set_threads(b.interpreter, b.worker_thread); // newest first
    b.runtime = python.runtime(b.interpreter);
    return b;
  }
};

TEST_P(PythonFrames, ThreadsAndTheirFramesAreWalkedInnermostFirst) {
  const auto b = build();
  const auto threads = walk_python_threads(python.memory, python.process(b.runtime));
  ASSERT_TRUE(threads.error.empty()) << threads.error;
  EXPECT_EQ(threads.interpreter, b.interpreter);
  ASSERT_EQ(threads.threads.size(), 2u);
  const auto &worker = threads.threads[0];
  const auto &main = threads.threads[1];
  EXPECT_EQ(worker.thread_state, b.worker_thread);
  EXPECT_EQ(main.pthread_id, 0x7f0001u);
  EXPECT_EQ(main.native_thread_id, minor() >= 11 ? 1001u : 0u);
  ASSERT_EQ(main.frames.size(), 3u);
  EXPECT_EQ(main.frames[0].code, b.inner_code);
  EXPECT_EQ(main.frames[1].code, b.outer_code);
  EXPECT_EQ(main.frames[2].code, b.module_code);
  EXPECT_FALSE(main.truncated);
  EXPECT_FALSE(main.read_failed);
  ASSERT_EQ(worker.frames.size(), 1u);
}

TEST_P(PythonFrames, FramesResolveToFileFunctionAndLine) {
  const auto b = build();
  const auto process = python.process(b.runtime);
  const auto threads = walk_python_threads(python.memory, process);
  PythonFrameResolver resolver;
  const auto &main = threads.threads.at(1).frames;
  const auto inner = resolver.resolve(process, python.memory, main.at(0));
  const auto outer = resolver.resolve(process, python.memory, main.at(1));
  const auto module = resolver.resolve(process, python.memory, main.at(2));
  EXPECT_TRUE(inner.readable);
  EXPECT_EQ(inner.file, "/app/model.py");
  EXPECT_EQ(inner.function, minor() >= 11 ? "Model.inner" : "inner");
  EXPECT_EQ(inner.line, 12); // byte 9: third line
  EXPECT_EQ(outer.function, "outer");
  EXPECT_EQ(outer.line, 21);
  EXPECT_EQ(module.file, "/app/train.py");
  EXPECT_EQ(module.line, 30);
  const auto worker = resolver.resolve(process, python.memory, threads.threads.at(0).frames.at(0));
  EXPECT_EQ(worker.line, 11);
}

TEST_P(PythonFrames, AFrameNotStartedYetIsOnItsFirstLine) {
  const auto code = python.code("/a.py", "f", 7, three_line_table(minor()));
  PythonFrameResolver resolver;
  const auto process = python.process(0);
  // 3.9/3.10: f_lasti -1; 3.11+: prev_instr one code unit before the code.
  const auto frame =
      resolver.resolve(process, python.memory, nt_python_frame{code, python.instr_at(code, -2)});
  EXPECT_EQ(frame.line, 7);
}

TEST_P(PythonFrames, DeepStacksAreTruncated) {
  const auto code = python.code("/a.py", "recurse", 1, three_line_table(minor()));
  std::uint64_t frame = 0;
  for (int i = 0; i < 100; ++i)
    frame = python.frame(code, python.instr_at(code, 0), frame);
  const auto interpreter = python.interpreter();
  python.set_threads(interpreter, python.thread(interpreter, 1, 1, frame));
  const auto threads =
      walk_python_threads(python.memory, python.process(python.runtime(interpreter)), 8, 16);
  ASSERT_EQ(threads.threads.size(), 1u);
  EXPECT_EQ(threads.threads[0].frames.size(), 16u);
  EXPECT_TRUE(threads.threads[0].truncated);
}

TEST_P(PythonFrames, CyclesInGarbageStayBounded) {
  const auto code = python.code("/a.py", "f", 1, three_line_table(minor()));
  const auto frame = python.frame(code, python.instr_at(code, 0), 0);
  python.memory.put<std::uint64_t>(frame + python.offsets.frame_previous, frame); // itself
  const auto interpreter = python.interpreter();
  const auto thread = python.thread(interpreter, 1, 1, frame);
  python.memory.put<std::uint64_t>(thread + python.offsets.thread_next, thread); // itself
  python.set_threads(interpreter, thread);
  const auto threads =
      walk_python_threads(python.memory, python.process(python.runtime(interpreter)), 5, 10);
  EXPECT_EQ(threads.threads.size(), 5u);
  EXPECT_TRUE(threads.truncated);
  EXPECT_EQ(threads.threads[0].frames.size(), 10u);
  EXPECT_TRUE(threads.threads[0].truncated);
}

TEST_P(PythonFrames, UnreadableMemoryEndsTheWalkWithoutFrames) {
  const auto interpreter = python.interpreter();
  python.set_threads(interpreter, python.thread(interpreter, 1, 1, 0xdead0000));
  const auto threads =
      walk_python_threads(python.memory, python.process(python.runtime(interpreter)));
  ASSERT_EQ(threads.threads.size(), 1u);
  EXPECT_TRUE(threads.threads[0].frames.empty());
  EXPECT_TRUE(threads.threads[0].read_failed);

  const auto no_runtime = walk_python_threads(python.memory, python.process(0xdead0000));
  EXPECT_FALSE(no_runtime.error.empty());
  EXPECT_TRUE(no_runtime.threads.empty());
}

TEST_P(PythonFrames, UnreadableCodeGivesAnUnreadableFrame) {
  PythonFrameResolver resolver;
  const auto frame =
      resolver.resolve(python.process(0), python.memory, nt_python_frame{0xdead0000, 0});
  EXPECT_FALSE(frame.readable);
  EXPECT_EQ(frame.file, "<unreadable>");
  EXPECT_EQ(frame.function, "<unreadable>");
  EXPECT_EQ(frame.line, 0);
  EXPECT_EQ(resolver.cached_codes(), 0u);
}

INSTANTIATE_TEST_SUITE_P(CPython, PythonFrames, testing::Values(9, 10, 11, 12, 13),
                         [](const auto &info) { return "v3_" + std::to_string(info.param); });

TEST(PythonFramesCStack, EntryFramesOfTheCStackAreSkipped) {
  FakePython python{PythonVersion{3, 12}};
  const auto code = python.code("/a.py", "f", 1, three_line_table(12));
  const auto outer = python.frame(code, python.instr_at(code, 0), 0);
  const auto entry = python.frame(0, 0, outer, 3); // FRAME_OWNED_BY_CSTACK: no code to read
  const auto inner = python.frame(code, python.instr_at(code, 4), entry);
  const auto interpreter = python.interpreter();
  python.set_threads(interpreter, python.thread(interpreter, 1, 1, inner));
  const auto threads =
      walk_python_threads(python.memory, python.process(python.runtime(interpreter)));
  ASSERT_EQ(threads.threads.size(), 1u);
  const auto &frames = threads.threads[0].frames;
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].instr, python.instr_at(code, 4));
  EXPECT_EQ(frames[1].instr, python.instr_at(code, 0));
}

TEST(PythonFrameCache, CodeObjectsAreReadOnceWhileTheyStayTheSame) {
  FakePython python{PythonVersion{3, 11}};
  const auto code = python.code("/a.py", "f", 5, three_line_table(11));
  const auto process = python.process(0);
  PythonFrameResolver resolver;
  const nt_python_frame frame{code, python.instr_at(code, 4)};
  EXPECT_EQ(resolver.resolve(process, python.memory, frame).line, 6);
  const auto reads_first = python.memory.reads();
  EXPECT_EQ(resolver.resolve(process, python.memory, frame).line, 6);
  const auto reads_again = python.memory.reads() - reads_first;
  EXPECT_EQ(reads_again, 1u); // the header, to check the object is still the same
  EXPECT_EQ(resolver.cached_codes(), 1u);
  EXPECT_GT(resolver.cached_bytes(), 0u);
}

TEST(PythonFrameCache, ACodeObjectReplacedAtTheSameAddressIsReadAgain) {
  FakePython python{PythonVersion{3, 12}};
  const auto code = python.code("/a.py", "old", 5, three_line_table(12));
  const auto process = python.process(0);
  PythonFrameResolver resolver;
  EXPECT_EQ(resolver.resolve(process, python.memory, {code, python.instr_at(code, 0)}).function,
            "old");
  // Freed and reallocated: new strings at the same code address.
  python.memory.put<std::uint64_t>(code + python.offsets.code_qualname, python.str("new"));
  EXPECT_EQ(resolver.resolve(process, python.memory, {code, python.instr_at(code, 0)}).function,
            "new");
  EXPECT_EQ(resolver.cached_codes(), 1u);
}

TEST(PythonFrameCache, StaysWithinItsLimitsAndForgetsExitedProcesses) {
  FakePython python{PythonVersion{3, 11}};
  PythonFrameResolver resolver(PythonFrameResolver::Limits{4, 1 << 20});
  auto first = python.process(0, 100);
  auto second = python.process(0, 200);
  std::vector<std::uint64_t> codes;
  for (int i = 0; i < 10; ++i)
    codes.push_back(python.code("/a.py", "f" + std::to_string(i), 1, three_line_table(11)));
  for (const auto code : codes)
    resolver.resolve(first, python.memory, {code, 0});
  EXPECT_EQ(resolver.cached_codes(), 4u);
  resolver.resolve(second, python.memory, {codes[0], 0});
  EXPECT_EQ(resolver.cached_codes(), 4u);
  resolver.forget(first.id);
  EXPECT_EQ(resolver.cached_codes(), 1u);
  resolver.forget(second.id);
  EXPECT_EQ(resolver.cached_codes(), 0u);
  EXPECT_EQ(resolver.cached_bytes(), 0u);

  PythonFrameResolver tiny(PythonFrameResolver::Limits{100, 200}); // 200 bytes in all
  for (const auto code : codes)
    EXPECT_TRUE(tiny.resolve(first, python.memory, {code, 0}).readable);
  EXPECT_LE(tiny.cached_bytes(), 200u);
}

} // namespace
} // namespace neutracer
