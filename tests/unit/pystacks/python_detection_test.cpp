// SPDX-License-Identifier: Apache-2.0
// Finding the interpreter in a process's maps, and describing it from its symbols and fake
// memory: version, _PyRuntime, offsets (3.13 debug offsets) and the layout check.
#include "pystacks/python_detection.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/unit/fake_python.h"

namespace neutracer {
namespace {

using test::FakePython;

TEST(PythonInterpreterFiles, LibpythonComesBeforeExecutablesAndLoadsAtOffsetZero) {
  const auto files = python_interpreter_files(
      "55d0c0000000-55d0c0001000 r--p 00000000 fd:01 10 /usr/bin/python3.11\n"
      "55d0c0001000-55d0c0002000 r-xp 00001000 fd:01 10 /usr/bin/python3.11\n"
      "7f0000000000-7f0000100000 r--p 00000000 fd:01 20 /usr/lib/libpython3.11.so.1.0\n"
      "7f0000100000-7f0000300000 r-xp 00100000 fd:01 20 /usr/lib/libpython3.11.so.1.0\n"
      "7f0000400000-7f0000401000 r--p 00000000 fd:01 30 /usr/lib/libpython3.so\n"
      "7f0000500000-7f0000501000 r--p 00000000 fd:01 40 /usr/lib/libc.so.6\n"
      "7f0000600000-7f0000601000 rw-p 00000000 00:00 0 \n");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].path, "/usr/lib/libpython3.11.so.1.0");
  EXPECT_TRUE(files[0].library);
  EXPECT_EQ(files[0].load_start, 0x7f0000000000u);
  EXPECT_EQ(files[0].load_end, 0x7f0000100000u);
  ASSERT_TRUE(files[0].version_from_name.has_value());
  EXPECT_EQ(files[0].version_from_name->minor, 11);
  EXPECT_EQ(files[1].path, "/usr/bin/python3.11");
  EXPECT_FALSE(files[1].library);
  EXPECT_EQ(files[1].load_start, 0x55d0c0000000u);
}

TEST(PythonInterpreterFiles, UnversionedExecutablesAreCandidatesToo) {
  const auto files = python_interpreter_files(
      "400000-401000 r--p 00000000 fd:01 10 /opt/build/bin/python (deleted)\n");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_FALSE(files[0].version_from_name.has_value()); // Py_Version will tell
  EXPECT_TRUE(files[0].deleted);
}

TEST(PythonInterpreterFiles, FilesWithoutAMappingOfTheirStartAreSkipped) {
  EXPECT_TRUE(python_interpreter_files(
                  "7f0000100000-7f0000300000 r-xp 00100000 fd:01 20 /l/libpython3.12.so.1.0\n")
                  .empty());
  EXPECT_TRUE(python_interpreter_files("not a maps file\n\n").empty());
}

// An interpreter in fake memory, loaded with bias kBias: its symbols' link-time addresses are
// the fake addresses minus the bias.
constexpr std::uint64_t kBias = 0x10000;

class PythonDescribe : public testing::Test {
protected:
  explicit PythonDescribe(PythonVersion version = {3, 11}) : python(version) {}

  void build(std::uint64_t native_id = 500) {
    const auto code = python.code("/app/x.py", "f", 1, {0xd0, 0, 0});
    interpreter = python.interpreter();
    thread = python.thread(interpreter, native_id, 0x7f01,
                           python.frame(code, python.instr_at(code, 0), 0));
    python.set_threads(interpreter, thread);
    runtime = python.runtime(interpreter);
    version_address = python.allocate(8);
    python.memory.put<std::uint64_t>(version_address, 0x030b07f0);
    file.path = "/usr/lib/libpython3.11.so.1.0";
    file.library = true;
    file.version_from_name = PythonVersion{3, 11};
    file.load_start = 0x7f0000000000;
    symbols.first_load_address = file.load_start - kBias;
    symbols.runtime = runtime - kBias;
    symbols.version = version_address - kBias;
    symbols.code_type = python.types.code - kBias;
    symbols.unicode_type = python.types.unicode - kBias;
    symbols.bytes_type = python.types.bytes - kBias;
  }
  PythonDetection describe(std::vector<int> live = {500, 501}) {
    return describe_python(python.memory, ProcessId{77, 5}, file, symbols, live);
  }

  FakePython python;
  std::uint64_t interpreter = 0, thread = 0, runtime = 0, version_address = 0;
  PythonInterpreterFile file;
  PythonSymbols symbols;
};

TEST_F(PythonDescribe, AWorkingInterpreterIsDescribed) {
  build();
  const auto detection = describe();
  ASSERT_TRUE(detection.process.has_value()) << detection.error;
  const auto &process = *detection.process;
  EXPECT_EQ(process.id, (ProcessId{77, 5}));
  EXPECT_EQ(process.version.text(), "3.11.7"); // Py_Version gives the micro version
  EXPECT_EQ(process.runtime_address, runtime);
  EXPECT_EQ(process.types.code, python.types.code);
  EXPECT_EQ(process.interpreter_path, file.path);
  EXPECT_FALSE(detection.retry_later);
}

TEST_F(PythonDescribe, TheNameAloneIsEnoughWithoutPyVersion) {
  build();
  symbols.version = 0; // 3.9 and 3.10 export none
  const auto detection = describe();
  ASSERT_TRUE(detection.process.has_value()) << detection.error;
  EXPECT_EQ(detection.process->version.text(), "3.11");
}

TEST_F(PythonDescribe, ANameThatContradictsPyVersionIsRefused) {
  build();
  file.version_from_name = PythonVersion{3, 12};
  const auto detection = describe();
  EXPECT_FALSE(detection.process.has_value());
  EXPECT_NE(detection.error.find("3.11.7"), std::string::npos) << detection.error;
}

TEST_F(PythonDescribe, UnsupportedAndUnknownVersionsAreNamed) {
  build();
  python.memory.put<std::uint64_t>(version_address, 0x030800f0);
  file.version_from_name.reset();
  auto detection = describe();
  EXPECT_FALSE(detection.process.has_value());
  EXPECT_NE(detection.error.find("3.8"), std::string::npos) << detection.error;
  symbols.version = 0;
  detection = describe();
  EXPECT_NE(detection.error.find("cannot tell the version"), std::string::npos) << detection.error;
}

TEST_F(PythonDescribe, AnInterpreterNotInitialisedYetIsRetriedLater) {
  build();
  python.memory.put<std::uint64_t>(runtime + python.offsets.runtime_interpreters_head, 0);
  auto detection = describe();
  EXPECT_FALSE(detection.process.has_value());
  EXPECT_TRUE(detection.retry_later);
  python.memory.put<std::uint64_t>(runtime + python.offsets.runtime_interpreters_head, interpreter);
  python.set_threads(interpreter, 0);
  detection = describe();
  EXPECT_TRUE(detection.retry_later);
}

TEST_F(PythonDescribe, OffsetsThatDoNotFitTheProcessAreRefused) {
  build();
  // A thread state that does not point back at its interpreter (another build's layout).
  python.memory.put<std::uint64_t>(thread + python.offsets.thread_interp, 0x1234);
  auto detection = describe();
  EXPECT_FALSE(detection.process.has_value());
  EXPECT_FALSE(detection.retry_later);
  EXPECT_NE(detection.error.find("do not fit"), std::string::npos) << detection.error;
}

TEST_F(PythonDescribe, ThreadIdsMustBeThreadsOfTheProcess) {
  build(/*native_id=*/9999);
  const auto missed = describe({500});
  EXPECT_FALSE(missed.process.has_value());
  // Threads come and go while the process runs: asked again, not refused for good.
  EXPECT_TRUE(missed.retry_later);
  EXPECT_TRUE(describe({500, 9999}).process.has_value());
  EXPECT_TRUE(describe({}).process.has_value()); // thread list unknown: not checked
}

TEST_F(PythonDescribe, FramesMustLeadToCodeObjects) {
  build();
  const auto frame = python.frame(python.str("not code"), 0, 0);
  python.memory.put<std::uint64_t>(
      python.memory.read_value<std::uint64_t>(thread + python.offsets.thread_frame).value() +
          python.offsets.cframe_current_frame,
      frame);
  const auto detection = describe();
  EXPECT_FALSE(detection.process.has_value());
  EXPECT_NE(detection.error.find("code objects"), std::string::npos) << detection.error;
  // A frame popped under the reader looks the same: asked again, not refused for good.
  EXPECT_TRUE(detection.retry_later);
}

TEST_F(PythonDescribe, UnreadableRuntimeIsAnError) {
  build();
  symbols.runtime = 0xdead0000;
  const auto detection = describe();
  EXPECT_FALSE(detection.process.has_value());
  EXPECT_FALSE(detection.retry_later);
}

class PythonDescribe313 : public PythonDescribe {
protected:
  PythonDescribe313() : PythonDescribe(PythonVersion{3, 13}) {}
  void build313(bool debug_offsets_valid) {
    build();
    file.version_from_name = PythonVersion{3, 13};
    python.memory.put<std::uint64_t>(version_address, 0x030d00f0);
    // The runtime's first bytes: a _Py_DebugOffsets block (as the built-in table has it, with
    // the thread list moved by 8, where the fake builds it from then on).
    std::vector<std::uint8_t> block(kDebugOffsetsSize, 0);
    const auto put = [&](std::size_t at, std::uint64_t value) {
      std::memcpy(block.data() + at, &value, 8);
    };
    std::memcpy(block.data(), debug_offsets_valid ? "xdebugpy" : "garbage!", 8);
    const auto &o = python.offsets;
    put(8, 0x030d00f0);
    put(24, 4096), put(40, o.runtime_interpreters_head);
    put(48, 9000), put(64, o.interp_next), put(72, o.interp_threads_head + 8);
    put(152, 300), put(168, o.thread_next), put(176, o.thread_interp), put(184, o.thread_frame);
    put(192, o.thread_pthread_id), put(200, o.thread_native_id);
    put(224, 80), put(232, o.frame_previous), put(240, o.frame_code), put(248, o.frame_instr);
    put(264, o.frame_owner);
    put(272, 256), put(280, o.code_filename), put(288, o.code_name), put(296, o.code_qualname);
    put(304, o.code_linetable), put(312, o.code_firstlineno), put(344, o.code_adaptive);
    put(352, 16), put(360, o.object_type);
    put(512, 40), put(520, o.bytes_size), put(528, o.bytes_data);
    put(536, 64), put(544, o.unicode_state), put(552, o.unicode_length),
        put(560, o.unicode_ascii_size);
    python.memory.write(runtime, block);
    // The interpreter's thread list where the block says it is.
    python.memory.put<std::uint64_t>(interpreter + o.interp_threads_head + 8, thread);
    python.memory.put<std::uint64_t>(interpreter + o.interp_threads_head, 0);
  }
};

TEST_F(PythonDescribe313, DebugOffsetsInTheRuntimeWinOverTheTable) {
  build313(true);
  const auto detection = describe();
  ASSERT_TRUE(detection.process.has_value()) << detection.error;
  EXPECT_TRUE(detection.process->offsets.from_debug_offsets);
  EXPECT_EQ(detection.process->offsets.interp_threads_head, python.offsets.interp_threads_head + 8);
  EXPECT_TRUE(detection.note.empty()) << detection.note;
}

TEST_F(PythonDescribe313, UnusableDebugOffsetsFallBackToTheTableWithANote) {
  build313(false);
  const auto detection = describe();
  // The table's thread list is empty here, so the fallback says so: not initialised yet.
  EXPECT_FALSE(detection.process.has_value());
  EXPECT_TRUE(detection.retry_later);
  EXPECT_NE(detection.note.find("cookie"), std::string::npos) << detection.note;
}

} // namespace
} // namespace neutracer
