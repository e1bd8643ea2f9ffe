// SPDX-License-Identifier: Apache-2.0
#include "common/procfs.h"
#include "cuda/cuda_discovery.h"
#include "descriptors_exhausted.h"
#include "temp_proc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <vector>

namespace neutracer {
namespace {

namespace fs = std::filesystem;

constexpr const char *kId1 = "3f4e9c1d2b7a8e6f5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e";
constexpr const char *kId2 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

const LibraryId kLibA{makedev(0xfd, 0x01), 1835423};
const LibraryId kLibB{makedev(0x103, 0x02), 77001};
const LibraryId kLibDeleted{makedev(0xfd, 0x01), 1835999};

std::string libcuda_line(const std::string &dev, std::uint64_t inode, const std::string &path) {
  return "7f3a1c000000-7f3a1c200000 r-xp 00000000 " + dev + " " + std::to_string(inode) +
         "                    " + path + "\n";
}

const CudaProcess *find_process(const DiscoveryResult &result, int pid) {
  for (const auto &process : result.processes)
    if (process.id.pid == pid)
      return &process;
  return nullptr;
}

const CudaLibrary *find_library(const DiscoveryResult &result, const LibraryId &id) {
  for (const auto &library : result.libraries)
    if (library.id == id)
      return &library;
  return nullptr;
}

std::vector<int> pids_of(const DiscoveryResult &result) {
  std::vector<int> pids;
  for (const auto &process : result.processes)
    pids.push_back(process.id.pid);
  return pids;
}

// ---------------------------------------------------------------------------------------------
// Fixture scenarios

TEST(CudaDiscovery, TwoProcessesShareOneLibrary) {
  TempProc proc;
  proc.copy_scenario("shared_library");
  const ProcFs procfs(proc.root());
  const auto result = discover_cuda_processes(procfs);

  EXPECT_EQ(result.unreadable, 0u);
  ASSERT_EQ(pids_of(result), (std::vector<int>{100, 200}));

  const auto &first = result.processes[0];
  EXPECT_EQ(first.id.start_ticks, 123456u);
  EXPECT_EQ(first.comm, "python3");
  EXPECT_EQ(first.exe, "/usr/bin/exe-of-100");
  EXPECT_EQ(first.container.identity.id, "");
  // Three segments of the same file give one library entry.
  EXPECT_EQ(first.libraries, (std::vector<LibraryId>{kLibA}));

  const auto &second = result.processes[1];
  EXPECT_EQ(second.id.start_ticks, 234567u);
  EXPECT_EQ(second.comm, "pt main thread");
  EXPECT_EQ(second.exe, "/usr/bin/exe-of-200");
  EXPECT_EQ(second.container.identity.id, kId1);
  EXPECT_EQ(second.libraries, (std::vector<LibraryId>{kLibA}));

  ASSERT_EQ(result.libraries.size(), 1u);
  const auto &library = result.libraries[0];
  EXPECT_EQ(library.id, kLibA);
  // The path as the first (lowest pid) process maps it, opened through that process's root.
  EXPECT_EQ(library.path, "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05");
  EXPECT_EQ(
      library.open_path,
      (proc.root() / "100" / "root" / "usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05").string());
}

TEST(CudaDiscovery, MixedScenario) {
  TempProc proc;
  proc.copy_scenario("mixed");
  const ProcFs procfs(proc.root());
  const auto result = discover_cuda_processes(procfs);

  // 400 maps no driver, 600 has no maps, 700 has no stat; self/1a/sys/uptime are not pids.
  EXPECT_EQ(pids_of(result), (std::vector<int>{100, 200, 300, 500}));
  EXPECT_EQ(result.unreadable, 1u); // pid 600 only

  const auto *p300 = find_process(result, 300);
  ASSERT_NE(p300, nullptr);
  EXPECT_EQ(p300->comm, "a) (b");
  EXPECT_EQ(p300->id.start_ticks, 345678u);
  EXPECT_EQ(p300->container.identity.id, kId2);
  EXPECT_EQ(p300->libraries, (std::vector<LibraryId>{kLibB}));

  const auto *p500 = find_process(result, 500);
  ASSERT_NE(p500, nullptr);
  EXPECT_EQ(p500->comm, "old_trainer");
  EXPECT_EQ(p500->container.identity.id, kId1);
  EXPECT_EQ(p500->libraries, (std::vector<LibraryId>{kLibDeleted}));

  // Three distinct libraries; the deleted one is reached through its mapping.
  ASSERT_EQ(result.libraries.size(), 3u);
  EXPECT_NE(find_library(result, kLibA), nullptr);
  const auto *deleted = find_library(result, kLibDeleted);
  ASSERT_NE(deleted, nullptr);
  EXPECT_EQ(deleted->open_path,
            (proc.root() / "500" / "map_files" / "7f7700000000-7f7700200000").string());
  const auto *b = find_library(result, kLibB);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->path, "/opt/nvidia/driver 580/libcuda.so.1");
  EXPECT_EQ(b->open_path,
            (proc.root() / "300" / "root" / "opt/nvidia/driver 580/libcuda.so.1").string());
  // Distinct by (dev, inode), ordered.
  EXPECT_LT(result.libraries[0].id, result.libraries[1].id);
}

// ---------------------------------------------------------------------------------------------
// Trees built at test time

TEST(CudaDiscovery, DifferentInodeIsASecondLibrary) {
  TempProc proc;
  proc.write(10, "maps", libcuda_line("fd:01", 11, "/usr/lib/libcuda.so.1"));
  proc.write_stat(10, "a", 1000);
  proc.write(20, "maps", libcuda_line("fd:01", 12, "/usr/lib/libcuda.so.1"));
  proc.write_stat(20, "b", 2000);
  // Same inode on another device: also distinct.
  proc.write(30, "maps", libcuda_line("fd:02", 11, "/usr/lib/libcuda.so.1"));
  proc.write_stat(30, "c", 3000);
  const auto result = discover_cuda_processes(ProcFs(proc.root()));
  ASSERT_EQ(result.processes.size(), 3u);
  ASSERT_EQ(result.libraries.size(), 3u);
  EXPECT_EQ(result.processes[0].libraries, (std::vector<LibraryId>{{makedev(0xfd, 1), 11}}));
  EXPECT_EQ(result.processes[1].libraries, (std::vector<LibraryId>{{makedev(0xfd, 1), 12}}));
  EXPECT_EQ(result.processes[2].libraries, (std::vector<LibraryId>{{makedev(0xfd, 2), 11}}));
  // Each library is reached through the process that maps it.
  const auto *lib12 = find_library(result, {makedev(0xfd, 1), 12});
  ASSERT_NE(lib12, nullptr);
  EXPECT_EQ(lib12->open_path, (proc.root() / "20/root/usr/lib/libcuda.so.1").string());
  // No exe link: empty, not an error.
  EXPECT_EQ(result.processes[0].exe, "");
}

TEST(CudaDiscovery, ProcessMappingTwoDriverFiles) {
  TempProc proc;
  proc.write(10, "maps",
             libcuda_line("fd:01", 11, "/usr/lib/libcuda.so.1") +
                 libcuda_line("fd:01", 12, "/opt/other/libcuda.so") +
                 libcuda_line("fd:01", 11, "/usr/lib/libcuda.so.1"));
  proc.write_stat(10, "two", 5);
  const auto result = discover_cuda_processes(ProcFs(proc.root()));
  ASSERT_EQ(result.processes.size(), 1u);
  EXPECT_EQ(result.processes[0].libraries,
            (std::vector<LibraryId>{{makedev(0xfd, 1), 11}, {makedev(0xfd, 1), 12}}));
  EXPECT_EQ(result.libraries.size(), 2u);
}

TEST(CudaDiscovery, DeletedAndLiveCopiesOfTheSameFile) {
  // pid 10 maps it after it was deleted; pid 20 still shows the path. Pid 20 makes it attachable.
  TempProc proc;
  proc.write(10, "maps", libcuda_line("fd:01", 11, "/usr/lib/libcuda.so.1 (deleted)"));
  proc.write_stat(10, "a", 1);
  proc.write(20, "maps", libcuda_line("fd:01", 11, "/usr/lib/libcuda.so.1"));
  proc.write_stat(20, "b", 2);
  const auto result = discover_cuda_processes(ProcFs(proc.root()));
  ASSERT_EQ(result.processes.size(), 2u);
  ASSERT_EQ(result.libraries.size(), 1u);
  EXPECT_EQ(result.libraries[0].path, "/usr/lib/libcuda.so.1");
  EXPECT_EQ(result.libraries[0].open_path, (proc.root() / "20/root/usr/lib/libcuda.so.1").string());
}

TEST(CudaDiscovery, DeletedLibraryIsOpenedThroughItsMapping) {
  // After an upgrade renamed a new file over it, the old inode is only reachable through the
  // mapping: map_files names use unpadded hex, unlike the maps file.
  TempProc proc;
  proc.write(10, "maps",
             "00a00000-00b00000 r--p 00000000 fd:01 11 /usr/lib/libcuda.so.1 (deleted)\n"
             "00b00000-00c00000 r-xp 00100000 fd:01 11 /usr/lib/libcuda.so.1 (deleted)\n");
  proc.write_stat(10, "old", 1);
  proc.write(20, "maps", libcuda_line("fd:01", 12, "/usr/lib/libcuda.so.1"));
  proc.write_stat(20, "new", 2);
  const auto result = discover_cuda_processes(ProcFs(proc.root()));
  ASSERT_EQ(result.libraries.size(), 2u);
  const auto *old_file = find_library(result, {makedev(0xfd, 1), 11});
  ASSERT_NE(old_file, nullptr);
  EXPECT_EQ(old_file->path, "/usr/lib/libcuda.so.1");
  EXPECT_EQ(old_file->open_path, (proc.root() / "10/map_files/a00000-b00000").string());
  const auto *new_file = find_library(result, {makedev(0xfd, 1), 12});
  ASSERT_NE(new_file, nullptr);
  EXPECT_EQ(new_file->open_path, (proc.root() / "20/root/usr/lib/libcuda.so.1").string());
}

TEST(CudaDiscovery, UnreadableMapsAreCountedNotFatal) {
  TempProc proc;
  // Missing maps.
  proc.write_stat(10, "gone", 1);
  // Dangling maps link: opening it fails like a hidden file (the tests may run as root, where
  // permission bits would not stop the read).
  proc.write_stat(20, "hidden", 2);
  fs::create_symlink(proc.root() / "nowhere", proc.root() / "20" / "maps");
  // A readable CUDA process next to them is still found.
  proc.write(30, "maps", libcuda_line("fd:01", 11, "/usr/lib/libcuda.so.1"));
  proc.write_stat(30, "ok", 3);
  // An empty pid directory.
  fs::create_directories(proc.root() / "40");
  const auto result = discover_cuda_processes(ProcFs(proc.root()));
  EXPECT_EQ(result.unreadable, 3u);
  EXPECT_EQ(pids_of(result), (std::vector<int>{30}));
  EXPECT_EQ(result.libraries.size(), 1u);
}

TEST(CudaDiscovery, EmptyOrMissingRoot) {
  TempProc proc;
  const auto empty = discover_cuda_processes(ProcFs(proc.root()));
  EXPECT_TRUE(empty.processes.empty());
  EXPECT_TRUE(empty.libraries.empty());
  EXPECT_EQ(empty.unreadable, 0u);
  const auto missing = discover_cuda_processes(ProcFs(proc.root() / "does-not-exist"));
  EXPECT_TRUE(missing.processes.empty());
  EXPECT_EQ(missing.unreadable, 0u);
}

TEST(CudaDiscovery, NonNumericEntriesAreIgnored) {
  TempProc proc;
  for (const std::string name : {"self", "thread-self", "1a", "a1", "-5", "0", "net", "12.5"}) {
    fs::create_directories(proc.root() / name);
    std::ofstream(proc.root() / name / "maps")
        << libcuda_line("fd:01", 11, "/usr/lib/libcuda.so.1");
    std::ofstream(proc.root() / name / "stat") << "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 "
                                                  "17 18 19\n";
  }
  std::ofstream(proc.root() / "uptime") << "1.0 2.0\n";
  std::ofstream(proc.root() / "77") << "a numeric file, not a directory\n";
  const ProcFs procfs(proc.root());
  auto pids = procfs.list_pids();
  std::sort(pids.begin(), pids.end());
  // "77" is numeric: list_pids reports it; discovery then cannot read 77/maps.
  EXPECT_EQ(pids, (std::vector<int>{77}));
  const auto result = discover_cuda_processes(procfs);
  EXPECT_TRUE(result.processes.empty());
  EXPECT_TRUE(result.libraries.empty());
  EXPECT_EQ(result.unreadable, 1u);
}

TEST(CudaDiscovery, HugeMapsFileIsScanned) {
  TempProc proc;
  const auto dir = proc.root() / "4242";
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "maps", std::ios::binary);
    char line[256];
    for (int i = 0; i < 200'000; ++i) {
      const int n = std::snprintf(line, sizeof line,
                                  "%012x-%012x r--p 00000000 fd:01 %d                    "
                                  "/usr/lib/python3/site-packages/mod_%d.so\n",
                                  0x10000000 + i * 0x1000, 0x10001000 + i * 0x1000, 900000 + i, i);
      out.write(line, n);
      if (i == 150'000)
        out << libcuda_line("fd:01", 11, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
    }
  }
  ASSERT_GT(fs::file_size(dir / "maps"), 1u << 20); // bigger than ProcFs::read's default bound
  proc.write_stat(4242, "big", 77);
  const auto result = discover_cuda_processes(ProcFs(proc.root()));
  ASSERT_EQ(result.processes.size(), 1u);
  EXPECT_EQ(result.processes[0].id, (ProcessId{4242, 77}));
  EXPECT_EQ(result.processes[0].libraries, (std::vector<LibraryId>{{makedev(0xfd, 1), 11}}));
  ASSERT_EQ(result.libraries.size(), 1u);
  EXPECT_EQ(result.libraries[0].path, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
}

// ---------------------------------------------------------------------------------------------
// ProcFs and process_start_ticks

TEST(ProcFs, PathInProcessRoot) {
  const ProcFs procfs("/some/proc");
  EXPECT_EQ(procfs.path_in_process_root(42, "/usr/lib/libcuda.so.1").string(),
            "/some/proc/42/root/usr/lib/libcuda.so.1");
  EXPECT_EQ(procfs.path_in_process_root(7, "/opt/a b/libcuda.so").string(),
            "/some/proc/7/root/opt/a b/libcuda.so");
  EXPECT_EQ(ProcFs().path_in_process_root(1, "/lib/x").string(), "/proc/1/root/lib/x");
  EXPECT_EQ(ProcFs().root(), fs::path("/proc"));
}

TEST(ProcFs, ReadIsBoundedAndLinesAreStreamed) {
  TempProc proc;
  proc.write(5, "maps", "one\ntwo\nthree\n");
  const ProcFs procfs(proc.root());
  EXPECT_EQ(procfs.read(5, "maps"), "one\ntwo\nthree\n");
  EXPECT_EQ(procfs.read(5, "maps", 5), "one\nt");
  EXPECT_FALSE(procfs.read(5, "nope").has_value());
  EXPECT_FALSE(procfs.read(6, "maps").has_value());
  std::vector<std::string> lines;
  EXPECT_TRUE(procfs.for_each_line(5, "maps", [&](std::string_view l) { lines.emplace_back(l); }));
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_FALSE(procfs.for_each_line(6, "maps", [](std::string_view) {}));
  EXPECT_FALSE(procfs.read_link(5, "exe").has_value());
}

TEST(ProcessStartTicks, ReadsFieldTwentyTwo) {
  TempProc proc;
  proc.write_stat(10, "x y) (z", 987654321);
  proc.write(11, "stat", "11 (short) S 1 2 3\n");
  const ProcFs procfs(proc.root());
  EXPECT_EQ(process_start_ticks(procfs, 10), 987654321u);
  EXPECT_FALSE(process_start_ticks(procfs, 11).has_value()); // malformed
  EXPECT_FALSE(process_start_ticks(procfs, 12).has_value()); // gone
}

TEST(ProcessStartTicks, FromFixture) {
  TempProc proc;
  proc.copy_scenario("mixed");
  const ProcFs procfs(proc.root());
  EXPECT_EQ(process_start_ticks(procfs, 100), 123456u);
  EXPECT_EQ(process_start_ticks(procfs, 600), 678901u);
  EXPECT_FALSE(process_start_ticks(procfs, 700).has_value());
}

TEST(ProcessStartTicks, LiveSelf) {
  // Against the real /proc: our own start time is readable and stable.
  const ProcFs procfs;
  const auto first = process_start_ticks(procfs, ::getpid());
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(process_start_ticks(procfs, ::getpid()), first);
}

// Discovery while every descriptor the process may open is taken.
DiscoveryResult discover_without_descriptors(const ProcFs &procfs,
                                             const std::vector<int> &traced = {}) {
  const DescriptorsExhausted exhausted;
  return discover_cuda_processes(procfs, traced);
}

// Out of descriptors (issue 20): a process not read is unknown this scan, not gone.
TEST(DiscoveryFdLimit, ProcessesNotListedAreUnknownNotGone) {
  TempProc proc;
  proc.copy_scenario("shared_library");
  const ProcFs procfs(proc.root());
  const auto discovery = discover_without_descriptors(procfs);
  EXPECT_TRUE(discovery.processes.empty());
  EXPECT_TRUE(discovery.pids_unlisted);
  EXPECT_TRUE(discovery.hit_fd_limit());
  EXPECT_TRUE(discovery.unknown(100));
  EXPECT_EQ(discovery.unreadable, 0u) << "out of descriptors is not unreadable (hidden, gone)";

  const auto complete = discover_cuda_processes(procfs);
  EXPECT_FALSE(complete.hit_fd_limit());
  EXPECT_FALSE(complete.unknown(100));
  EXPECT_EQ(complete.processes.size(), 2u);
}

// Issue 33: out of descriptors, a traced process whose /proc folder is missing is still seen
// to have exited (its links can then be closed); one still there stays unknown.
TEST(DiscoveryFdLimit, TracedProcessesMissingFromProcAreGoneWithoutDescriptors) {
  TempProc proc;
  proc.copy_scenario("shared_library");
  const ProcFs procfs(proc.root());
  const auto discovery = discover_without_descriptors(procfs, {100, 4242, 77});
  ASSERT_TRUE(discovery.pids_unlisted);
  EXPECT_EQ(discovery.gone, (std::vector<int>{77, 4242}));
  EXPECT_TRUE(discovery.unknown(100)) << "still in /proc: not read, so not gone";
  EXPECT_FALSE(discovery.unknown(4242));
  EXPECT_FALSE(discovery.unknown(77));
  EXPECT_TRUE(discovery.unknown(5000)) << "not traced, not checked";
  EXPECT_TRUE(discovery.seen_gone(4242));
  EXPECT_FALSE(discovery.seen_gone(100));
  // Listed normally, the list says it all: nothing is checked one by one.
  EXPECT_TRUE(discover_cuda_processes(procfs, {4242}).gone.empty());
}

TEST(DiscoveryFdLimit, UnknownIsPerProcess) {
  DiscoveryResult discovery;
  discovery.fd_limited = {100, 300};
  EXPECT_TRUE(discovery.unknown(100));
  EXPECT_TRUE(discovery.unknown(300));
  EXPECT_FALSE(discovery.unknown(200));
  EXPECT_TRUE(discovery.hit_fd_limit());
}

} // namespace
} // namespace neutracer
