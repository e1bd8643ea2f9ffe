// SPDX-License-Identifier: Apache-2.0
// Native symbolisation on a real ELF file: the fixture library (tests/fixtures/symbols), loaded
// into this test process with dlopen, its addresses named back from /proc/self/maps and its
// symbols. Observes only this process.
#include "stacks/symbolizer.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include "common/elf_file.h"
#include "common/proc_parsers.h"
#include "cuda/cuda_discovery.h"
#include "stacks/function_table.h"

namespace neutracer {
namespace {

constexpr const char *kBuildId = "6e657574726163657273796d626f6c73";

class SymbolizerTest : public ::testing::Test {
protected:
  void SetUp() override {
    library_ = dlopen(NEUTRACER_SYMBOLS_FIXTURE, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << dlerror();
    work_item_ = reinterpret_cast<std::uint64_t>(dlsym(library_, "_ZN7fixture9work_itemEi"));
    plain_ = reinterpret_cast<std::uint64_t>(dlsym(library_, "fixture_plain"));
    ASSERT_NE(work_item_, 0u);
    ASSERT_NE(plain_, 0u);
    self_ = {static_cast<int>(::getpid()), process_start_ticks(procfs_, ::getpid()).value_or(0)};
  }
  void TearDown() override {
    if (library_)
      dlclose(library_);
  }

  ProcFs procfs_{"/proc"};
  void *library_ = nullptr;
  std::uint64_t work_item_ = 0, plain_ = 0;
  ProcessId self_;
};

TEST_F(SymbolizerTest, ElfFileReadsTheBuildIdAndMapsOffsetsBothWays) {
  std::string error;
  const auto file = ElfFile::open(NEUTRACER_SYMBOLS_FIXTURE, error);
  ASSERT_TRUE(file.has_value()) << error;
  EXPECT_EQ(file->build_id(), kBuildId);
  std::optional<std::uint64_t> address;
  file->for_each_function([&](const char *name, std::uint64_t value, std::uint64_t) {
    if (std::string_view(name) == "fixture_plain")
      address = value;
  });
  ASSERT_TRUE(address.has_value());
  const auto offset = file->file_offset(*address);
  ASSERT_TRUE(offset.has_value());
  EXPECT_EQ(file->address_at(*offset), address);
  EXPECT_EQ(file->address_at(file->size() + 10), std::nullopt);
}

TEST_F(SymbolizerTest, FunctionTableFindsTheFunctionHoldingAnOffset) {
  std::string error;
  auto file = ElfFile::open(NEUTRACER_SYMBOLS_FIXTURE, error);
  ASSERT_TRUE(file.has_value()) << error;
  std::uint64_t plain_address = 0;
  file->for_each_function([&](const char *name, std::uint64_t value, std::uint64_t) {
    if (std::string_view(name) == "fixture_plain")
      plain_address = value;
  });
  const auto plain_offset = file->file_offset(plain_address);
  ASSERT_TRUE(plain_offset.has_value());
  auto table = FunctionTable::load(std::move(*file), 1000);
  ASSERT_TRUE(table.has_value());
  const auto hit = table->find(*plain_offset + 3);
  ASSERT_TRUE(hit.has_value());
  EXPECT_STREQ(hit->name, "fixture_plain");
  EXPECT_EQ(hit->offset, 3u);
  // A table over its symbol limit is refused rather than cut.
  std::string again;
  EXPECT_FALSE(FunctionTable::load(*ElfFile::open(NEUTRACER_SYMBOLS_FIXTURE, again), 1));
}

TEST_F(SymbolizerTest, NamesReturnAddressesInALoadedLibrary) {
  Symbolizer symbolizer(procfs_);
  // Return addresses point after a call: +5 and +9 into each function.
  const auto stack = symbolizer.symbolize(self_, CallSiteStack{{work_item_ + 5, plain_ + 9}});
  ASSERT_EQ(stack.frames.size(), 2u);
  const auto &inner = stack.frames[0];
  ASSERT_TRUE(inner.function);
  EXPECT_EQ(*inner.function, "fixture::work_item(int)"); // demangled
  EXPECT_EQ(inner.function_offset, 5u);
  ASSERT_TRUE(inner.module);
  EXPECT_TRUE(inner.module->ends_with("/libneutracer_symbols_fixture.so")) << *inner.module;
  EXPECT_EQ(inner.address, work_item_ + 5);
  ASSERT_TRUE(stack.frames[1].function);
  EXPECT_EQ(*stack.frames[1].function, "fixture_plain");
  EXPECT_EQ(stack.frames[1].function_offset, 9u);
  // The walk ended in the library, not at an entry function: frames are missing beyond it.
  EXPECT_EQ(stack.end, StackEnd::no_frame_pointer);
  EXPECT_TRUE(
      frame_text(inner).starts_with("fixture::work_item(int) (libneutracer_symbols_fixture.so+0x"))
      << frame_text(inner);
  EXPECT_GE(symbolizer.stats().tables, 1u);
}

TEST_F(SymbolizerTest, ModuleOffsetsAreFileOffsets) {
  Symbolizer symbolizer(procfs_);
  const auto stack = symbolizer.symbolize(self_, CallSiteStack{{plain_ + 1}});
  ASSERT_EQ(stack.frames.size(), 1u);
  std::string error;
  const auto file = ElfFile::open(NEUTRACER_SYMBOLS_FIXTURE, error);
  ASSERT_TRUE(file);
  std::uint64_t plain_address = 0;
  file->for_each_function([&](const char *name, std::uint64_t value, std::uint64_t) {
    if (std::string_view(name) == "fixture_plain")
      plain_address = value;
  });
  EXPECT_EQ(stack.frames[0].module_offset, *file->file_offset(plain_address) + 1);
}

TEST_F(SymbolizerTest, StaticFunctionsAreNamedFromSymtab) {
  std::string error;
  auto file = ElfFile::open(NEUTRACER_SYMBOLS_FIXTURE, error);
  ASSERT_TRUE(file);
  std::uint64_t local = 0;
  file->for_each_function([&](const char *name, std::uint64_t value, std::uint64_t) {
    if (std::string_view(name) == "_ZN12_GLOBAL__N_112local_helperEi")
      local = value;
  });
  ASSERT_NE(local, 0u) << "the fixture keeps its .symtab";
  // Place it in this process: same distance from fixture_plain as in the file.
  std::uint64_t plain_in_file = 0;
  file->for_each_function([&](const char *name, std::uint64_t value, std::uint64_t) {
    if (std::string_view(name) == "fixture_plain")
      plain_in_file = value;
  });
  Symbolizer symbolizer(procfs_);
  const auto stack =
      symbolizer.symbolize(self_, CallSiteStack{{plain_ - plain_in_file + local + 2}});
  ASSERT_EQ(stack.frames.size(), 1u);
  ASSERT_TRUE(stack.frames[0].function);
  EXPECT_EQ(*stack.frames[0].function, "(anonymous namespace)::local_helper(int)");
}

TEST_F(SymbolizerTest, AStackReachingTheCLibraryIsComplete) {
  const auto in_libc = reinterpret_cast<std::uint64_t>(dlsym(RTLD_DEFAULT, "qsort"));
  ASSERT_NE(in_libc, 0u);
  Symbolizer symbolizer(procfs_);
  const auto stack = symbolizer.symbolize(self_, CallSiteStack{{plain_ + 4, in_libc + 4}});
  ASSERT_EQ(stack.frames.size(), 2u);
  EXPECT_EQ(stack.end, StackEnd::complete);
  // A walk that filled every slot says so, wherever it stopped.
  const auto limited = symbolizer.symbolize(self_, CallSiteStack{{plain_ + 4, in_libc + 4}, true});
  EXPECT_EQ(limited.end, StackEnd::depth_limit);
}

TEST_F(SymbolizerTest, AnAddressOutsideAnyFileEndsTheStack) {
  Symbolizer symbolizer(procfs_);
  const int on_stack = 0;
  const auto garbage = reinterpret_cast<std::uint64_t>(&on_stack); // the stack is no code
  const auto stack =
      symbolizer.symbolize(self_, CallSiteStack{{plain_ + 4, garbage, work_item_ + 4}});
  ASSERT_EQ(stack.frames.size(), 2u) << "frames past garbage cannot be trusted";
  EXPECT_FALSE(stack.frames[1].module);
  EXPECT_EQ(stack.end, StackEnd::no_frame_pointer);
  EXPECT_EQ(frame_text(stack.frames[1]).substr(0, 2), "0x");
}

TEST_F(SymbolizerTest, AGoneProcessLeavesBareAddresses) {
  Symbolizer symbolizer(procfs_);
  // PIDs above pid_max never exist.
  const auto stack = symbolizer.symbolize(ProcessId{1 << 30, 1}, CallSiteStack{{0x1234, 0x5678}});
  ASSERT_EQ(stack.frames.size(), 2u);
  EXPECT_EQ(stack.end, StackEnd::unresolved);
  EXPECT_FALSE(stack.frames[0].function);
  EXPECT_EQ(stack.frames[0].address, 0x1234u);
}

TEST_F(SymbolizerTest, AReusedPidIsNotReadAsTheProcessItWas) {
  Symbolizer symbolizer(procfs_);
  const auto stack = symbolizer.symbolize(ProcessId{self_.pid, self_.start_ticks + 1},
                                          CallSiteStack{{plain_ + 4}});
  EXPECT_EQ(stack.end, StackEnd::unresolved);
  EXPECT_FALSE(stack.frames.at(0).function);
}

TEST_F(SymbolizerTest, NameCacheStaysWithinItsBound) {
  SymbolizerSettings settings;
  settings.max_names = 4;
  settings.max_tables = 1;
  Symbolizer symbolizer(procfs_, settings);
  for (std::uint64_t i = 1; i < 20; ++i)
    symbolizer.symbolize(self_, CallSiteStack{{plain_ + i}});
  EXPECT_LE(symbolizer.stats().names, 4u);
  EXPECT_LE(symbolizer.stats().tables, 1u);
  // Still right after evictions.
  const auto stack = symbolizer.symbolize(self_, CallSiteStack{{work_item_ + 2}});
  ASSERT_TRUE(stack.frames.at(0).function);
  EXPECT_EQ(*stack.frames[0].function, "fixture::work_item(int)");
}

} // namespace
} // namespace neutracer
