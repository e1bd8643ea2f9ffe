// SPDX-License-Identifier: Apache-2.0
#include "common/proc_parsers.h"
#include "containers/container_identity.h"

#include <gtest/gtest.h>

#include <string>
#include <sys/sysmacros.h>

namespace neutracer {
namespace {

// ---------------------------------------------------------------------------------------------
// parse_maps_line

TEST(ParseMapsLine, FileBackedMapping) {
  const auto entry =
      parse_maps_line("7f3a1c000000-7f3a1c200000 r-xp 00000000 fd:01 1835423          "
                      "         /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->dev, makedev(0xfd, 0x01));
  EXPECT_EQ(major(entry->dev), 0xfdu);
  EXPECT_EQ(minor(entry->dev), 0x01u);
  EXPECT_EQ(entry->inode, 1835423u);
  EXPECT_EQ(entry->path, "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05");
  EXPECT_FALSE(entry->deleted);
}

TEST(ParseMapsLine, AddressRangeIsParsed) {
  const auto entry = parse_maps_line(
      "7f3a1c000000-7f3a1c200000 r-xp 00000000 fd:01 99 /usr/lib/libcuda.so.1 (deleted)");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->start, 0x7f3a1c000000u);
  EXPECT_EQ(entry->end, 0x7f3a1c200000u);
  const auto low = parse_maps_line("00400000-00401000 r--p 00000000 103:0a 42 /bin/true");
  ASSERT_TRUE(low.has_value());
  EXPECT_EQ(low->start, 0x400000u);
  EXPECT_EQ(low->end, 0x401000u);
}

TEST(ParseMapsLine, FileOffsetIsHex) {
  const auto entry = parse_maps_line(
      "7f3a1c000000-7f3a1c200000 r--p 0001c000 fd:01 99 /usr/lib/libpython3.11.so.1.0");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->offset, 0x1c000u);
  EXPECT_FALSE(parse_maps_line("7f3a1c000000-7f3a1c200000 r--p 0001g000 fd:01 99 /x/libpython3.so")
                  .has_value());
}

TEST(ParseMapsLine, OffsetAndExecutePermission) {
  const auto code =
      parse_maps_line("7f3a1c027000-7f3a1c1bc000 r-xp 00027000 fd:01 99 /lib/libc.so.6");
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(code->offset, 0x27000u);
  EXPECT_TRUE(code->executable);
  const auto data =
      parse_maps_line("7f3a1c1bc000-7f3a1c1c0000 r--p 001bb000 fd:01 99 /lib/libc.so.6");
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(data->offset, 0x1bb000u);
  EXPECT_FALSE(data->executable);
  EXPECT_FALSE(parse_maps_line("7f3a1c027000-7f3a1c1bc000 r-xp 0002g000 fd:01 99 /lib/libc.so.6")
                   .has_value());
}

TEST(ParseMapsLine, MalformedAddressRangeIsRejected) {
  for (const char *line :
       {"7f3a1c000000 r-xp 00000000 fd:01 99 /usr/lib/libcuda.so.1",
        "-7f3a1c200000 r-xp 00000000 fd:01 99 /usr/lib/libcuda.so.1",
        "7f3a1c000000- r-xp 00000000 fd:01 99 /usr/lib/libcuda.so.1",
        "7f3a1cz00000-7f3a1c200000 r-xp 00000000 fd:01 99 /usr/lib/libcuda.so.1"})
    EXPECT_FALSE(parse_maps_line(line).has_value()) << line;
}

TEST(ParseMapsLine, DeviceNumbersAreHex) {
  const auto entry = parse_maps_line("00400000-00401000 r--p 00000000 103:0a 42 /bin/true");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(major(entry->dev), 0x103u);
  EXPECT_EQ(minor(entry->dev), 0x0au);
  EXPECT_EQ(entry->inode, 42u);
  EXPECT_EQ(entry->path, "/bin/true");
}

TEST(ParseMapsLine, LargeInode) {
  const auto entry =
      parse_maps_line("00400000-00401000 r--p 00000000 00:2d 18446744073709551615 /x/libcuda.so.1");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->inode, 18446744073709551615ull);
  EXPECT_EQ(entry->dev, makedev(0, 0x2d));
}

TEST(ParseMapsLine, AnonymousMappingIsRejected) {
  EXPECT_FALSE(parse_maps_line("7f3a1c000000-7f3a1c200000 rw-p 00000000 00:00 0 ").has_value());
  EXPECT_FALSE(parse_maps_line("7f3a1c000000-7f3a1c200000 rw-p 00000000 00:00 0").has_value());
}

TEST(ParseMapsLine, PseudoPathsWithInodeZeroAreRejected) {
  EXPECT_FALSE(parse_maps_line("55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                  "
                               "        [heap]")
                   .has_value());
  EXPECT_FALSE(
      parse_maps_line("7ffc5b3f1000-7ffc5b412000 rw-p 00000000 00:00 0   [stack]").has_value());
  EXPECT_FALSE(
      parse_maps_line("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]")
          .has_value());
}

TEST(ParseMapsLine, DeletedSuffixIsStrippedAndFlagged) {
  const auto entry = parse_maps_line(
      "7f3a1c000000-7f3a1c200000 r-xp 00000000 fd:01 99 /usr/lib/libcuda.so.1 (deleted)");
  ASSERT_TRUE(entry.has_value());
  EXPECT_TRUE(entry->deleted);
  EXPECT_EQ(entry->path, "/usr/lib/libcuda.so.1");
  EXPECT_EQ(entry->inode, 99u);
}

TEST(ParseMapsLine, DeletedOnlyAsSuffix) {
  const auto entry =
      parse_maps_line("7f3a1c000000-7f3a1c200000 r-xp 00000000 fd:01 99 /opt/a (deleted)/lib.so");
  ASSERT_TRUE(entry.has_value());
  EXPECT_FALSE(entry->deleted);
  EXPECT_EQ(entry->path, "/opt/a (deleted)/lib.so");
}

TEST(ParseMapsLine, PathWithSpacesIsKeptWhole) {
  const auto entry = parse_maps_line(
      "7f3a1c000000-7f3a1c200000 r-xp 00000000 fd:01 7   /opt/my cuda  dir/libcuda.so.1");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->path, "/opt/my cuda  dir/libcuda.so.1");
  EXPECT_FALSE(entry->deleted);
}

TEST(ParseMapsLine, PathWithSpacesAndDeleted) {
  const auto entry = parse_maps_line(
      "7f3a1c000000-7f3a1c200000 r-xp 00000000 fd:01 7 /opt/my dir/libcuda.so.1 (deleted)");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->path, "/opt/my dir/libcuda.so.1");
  EXPECT_TRUE(entry->deleted);
}

TEST(ParseMapsLine, TrailingNewlineIsStripped) {
  const auto entry = parse_maps_line("00400000-00401000 r--p 00000000 08:01 5 /lib/libcuda.so.1\n");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->path, "/lib/libcuda.so.1");
  const auto crlf = parse_maps_line("00400000-00401000 r--p 00000000 08:01 5 /lib/x.so\r\n");
  ASSERT_TRUE(crlf.has_value());
  EXPECT_EQ(crlf->path, "/lib/x.so");
}

TEST(ParseMapsLine, MalformedLinesAreRejected) {
  EXPECT_FALSE(parse_maps_line("").has_value());
  EXPECT_FALSE(parse_maps_line("   ").has_value());
  EXPECT_FALSE(parse_maps_line("garbage").has_value());
  EXPECT_FALSE(parse_maps_line("00400000-00401000 r--p").has_value());
  EXPECT_FALSE(parse_maps_line("00400000-00401000 r--p 00000000").has_value());
  // Device without a colon.
  EXPECT_FALSE(parse_maps_line("00400000-00401000 r--p 00000000 0801 5 /lib/x.so").has_value());
  // Non-hex device numbers.
  EXPECT_FALSE(parse_maps_line("00400000-00401000 r--p 00000000 zz:01 5 /lib/x.so").has_value());
  EXPECT_FALSE(parse_maps_line("00400000-00401000 r--p 00000000 08:xy 5 /lib/x.so").has_value());
  EXPECT_FALSE(parse_maps_line("00400000-00401000 r--p 00000000 :01 5 /lib/x.so").has_value());
  EXPECT_FALSE(parse_maps_line("00400000-00401000 r--p 00000000 08: 5 /lib/x.so").has_value());
  // Non-decimal inode.
  EXPECT_FALSE(parse_maps_line("00400000-00401000 r--p 00000000 08:01 5a /lib/x.so").has_value());
  EXPECT_FALSE(parse_maps_line("00400000-00401000 r--p 00000000 08:01 -5 /lib/x.so").has_value());
  // Inode present but no path.
  EXPECT_FALSE(parse_maps_line("00400000-00401000 r--p 00000000 08:01 5").has_value());
  EXPECT_FALSE(parse_maps_line("00400000-00401000 r--p 00000000 08:01 5    ").has_value());
}

// ---------------------------------------------------------------------------------------------
// is_cuda_driver_library

TEST(IsCudaDriverLibrary, AcceptsDriverNames) {
  EXPECT_TRUE(is_cuda_driver_library("libcuda.so"));
  EXPECT_TRUE(is_cuda_driver_library("libcuda.so.1"));
  EXPECT_TRUE(is_cuda_driver_library("libcuda.so.580.95.05"));
  EXPECT_TRUE(is_cuda_driver_library("/x/libcuda.so.1"));
  EXPECT_TRUE(is_cuda_driver_library("/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"));
  EXPECT_TRUE(is_cuda_driver_library("/opt/dir with space/libcuda.so"));
}

TEST(IsNcclLibrary, AcceptsNcclWhereverItLies) {
  EXPECT_TRUE(is_nccl_library(
      "/opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"));
  EXPECT_TRUE(is_nccl_library("/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.9"));
  EXPECT_TRUE(is_nccl_library("libnccl.so"));
  EXPECT_FALSE(is_nccl_library("libnccl-net.so"));
  EXPECT_FALSE(is_nccl_library("libnccl_static.a"));
  EXPECT_FALSE(is_nccl_library("libnccl.so.2.bak"));
  EXPECT_FALSE(is_nccl_library("libcuda.so.1"));
}

TEST(IsCudaDriverLibrary, RejectsOtherLibraries) {
  EXPECT_FALSE(is_cuda_driver_library("libcudart.so.12"));
  EXPECT_FALSE(is_cuda_driver_library("/usr/local/cuda/lib64/libcudart.so.12.4.127"));
  EXPECT_FALSE(is_cuda_driver_library("libcuda.so.bak"));
  EXPECT_FALSE(is_cuda_driver_library("libcuda.so.1.bak"));
  EXPECT_FALSE(is_cuda_driver_library("libcudadebugger.so.1"));
  EXPECT_FALSE(is_cuda_driver_library("/usr/lib/libcudadebugger.so.580.95.05"));
  EXPECT_FALSE(is_cuda_driver_library("libcuda.so."));
  EXPECT_FALSE(is_cuda_driver_library("libcuda.so.1."));
  EXPECT_FALSE(is_cuda_driver_library("libcuda.so..1"));
  EXPECT_FALSE(is_cuda_driver_library("libcuda.so1"));
  EXPECT_FALSE(is_cuda_driver_library("libcuda.sox"));
  EXPECT_FALSE(is_cuda_driver_library("libcuda.so.1a"));
  EXPECT_FALSE(is_cuda_driver_library("mylibcuda.so.1"));
  EXPECT_FALSE(is_cuda_driver_library("/x/libcuda.so.1/other.so"));
  EXPECT_FALSE(is_cuda_driver_library("/libcuda.so.1/"));
  EXPECT_FALSE(is_cuda_driver_library(""));
  EXPECT_FALSE(is_cuda_driver_library("libcuda"));
}

// ---------------------------------------------------------------------------------------------
// parse_proc_stat

// A /proc/<pid>/stat line with the given comm; fields 14, 15, 20 and 22 are set from the
// arguments, the rest are distinct filler numbers so an off-by-one shows.
std::string make_stat(const std::string &comm, char state = 'S', std::uint64_t utime = 1401,
                      std::uint64_t stime = 1502, std::uint64_t threads = 2003,
                      std::uint64_t start = 2205) {
  std::string text = "4242 (" + comm + ") " + state;
  for (int field = 4; field <= 52; ++field) {
    std::uint64_t value = static_cast<std::uint64_t>(field) * 100 + field;
    if (field == 14)
      value = utime;
    else if (field == 15)
      value = stime;
    else if (field == 20)
      value = threads;
    else if (field == 22)
      value = start;
    text += " " + std::to_string(value);
  }
  return text + "\n";
}

TEST(ParseProcStat, ReadsFields) {
  const auto stat = parse_proc_stat(make_stat("python3", 'R', 111, 222, 17, 98765432));
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->comm, "python3");
  EXPECT_EQ(stat->state, 'R');
  EXPECT_EQ(stat->utime_ticks, 111u);
  EXPECT_EQ(stat->stime_ticks, 222u);
  EXPECT_EQ(stat->num_threads, 17u);
  EXPECT_EQ(stat->start_ticks, 98765432u);
}

TEST(ParseProcStat, FillerFieldsAreNotConfused) {
  // With the defaults, every field of interest has a value unlike its neighbours.
  const auto stat = parse_proc_stat(make_stat("a"));
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->utime_ticks, 1401u);
  EXPECT_EQ(stat->stime_ticks, 1502u);
  EXPECT_EQ(stat->num_threads, 2003u);
  EXPECT_EQ(stat->start_ticks, 2205u);
}

TEST(ParseProcStat, RealKernelLine) {
  const std::string line =
      "1 (systemd) S 0 1 1 0 -1 4194560 50363 6158402 103 1702 163 251 13657 4349 20 0 1 0 4 "
      "172703744 3238 18446744073709551615 1 1 0 0 0 0 671173123 4096 1260 0 0 0 17 3 0 0 0 0 0 "
      "0 0 0 0 0 0 0 0\n";
  const auto stat = parse_proc_stat(line);
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->comm, "systemd");
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->utime_ticks, 163u);
  EXPECT_EQ(stat->stime_ticks, 251u);
  EXPECT_EQ(stat->num_threads, 1u);
  EXPECT_EQ(stat->start_ticks, 4u);
}

TEST(ParseProcStat, CommWithSpaces) {
  const auto stat = parse_proc_stat(make_stat("my cuda app", 'S', 1, 2, 3, 4));
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->comm, "my cuda app");
  EXPECT_EQ(stat->start_ticks, 4u);
  EXPECT_EQ(stat->num_threads, 3u);
}

TEST(ParseProcStat, CommWithParentheses) {
  const auto stat = parse_proc_stat(make_stat("a) (b", 'D', 5, 6, 7, 8));
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->comm, "a) (b");
  EXPECT_EQ(stat->state, 'D');
  EXPECT_EQ(stat->utime_ticks, 5u);
  EXPECT_EQ(stat->stime_ticks, 6u);
  EXPECT_EQ(stat->num_threads, 7u);
  EXPECT_EQ(stat->start_ticks, 8u);

  const auto tricky = parse_proc_stat(make_stat(") S 1 2 3 (", 'Z', 9, 10, 11, 12));
  ASSERT_TRUE(tricky.has_value());
  EXPECT_EQ(tricky->comm, ") S 1 2 3 (");
  EXPECT_EQ(tricky->state, 'Z');
  EXPECT_EQ(tricky->start_ticks, 12u);
}

TEST(ParseProcStat, EmptyComm) {
  const auto stat = parse_proc_stat(make_stat("", 'S', 1, 2, 3, 4));
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->comm, "");
  EXPECT_EQ(stat->start_ticks, 4u);
}

TEST(ParseProcStat, ExactlyTwentyTwoFields) {
  const std::string line = "7 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19";
  const auto stat = parse_proc_stat(line);
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->utime_ticks, 11u);
  EXPECT_EQ(stat->stime_ticks, 12u);
  EXPECT_EQ(stat->num_threads, 17u);
  EXPECT_EQ(stat->start_ticks, 19u);
}

TEST(ParseProcStat, TruncatedInputIsRejected) {
  const std::string full = make_stat("proc");
  // Cut before field 22 ends: every prefix that drops a needed field fails.
  const auto field22 = full.find(" 2205");
  ASSERT_NE(field22, std::string::npos);
  for (std::size_t cut = 0; cut < field22; cut += 3)
    EXPECT_FALSE(parse_proc_stat(full.substr(0, cut)).has_value()) << "cut at " << cut;
  EXPECT_FALSE(parse_proc_stat("7 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18").has_value());
  EXPECT_FALSE(parse_proc_stat("").has_value());
  EXPECT_FALSE(parse_proc_stat("7 (x").has_value());
  EXPECT_FALSE(parse_proc_stat("7 x) S").has_value());
}

TEST(ParseProcStat, MalformedFieldsAreRejected) {
  // State must be one character.
  EXPECT_FALSE(
      parse_proc_stat("7 (x) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19").has_value());
  // Non-numeric start time.
  EXPECT_FALSE(
      parse_proc_stat("7 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 abc").has_value());
  // Non-numeric utime.
  EXPECT_FALSE(
      parse_proc_stat("7 (x) S 1 2 3 4 5 6 7 8 9 10 u 12 13 14 15 16 17 18 19").has_value());
  // Negative thread count.
  EXPECT_FALSE(
      parse_proc_stat("7 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 -17 18 19").has_value());
}

// ---------------------------------------------------------------------------------------------
// container ids from /proc/<pid>/cgroup

std::string container_id_from_cgroup(std::string_view cgroup_text) {
  return container_identity_from_cgroup(cgroup_text).id;
}

constexpr const char *kId = "3f4e9c1d2b7a8e6f5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e";
constexpr const char *kId2 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

TEST(ContainerId, IdsAreSixtyFourHex) {
  EXPECT_EQ(std::string(kId).size(), 64u);
  EXPECT_EQ(std::string(kId2).size(), 64u);
}

TEST(ContainerId, DockerCgroupV1) {
  const std::string text = std::string("12:memory:/docker/") + kId + "\n" +
                           "11:cpu,cpuacct:/docker/" + kId + "\n" + "1:name=systemd:/docker/" +
                           kId + "\n0::/\n";
  EXPECT_EQ(container_id_from_cgroup(text), kId);
}

TEST(ContainerId, SystemdDockerScope) {
  const std::string text = std::string("0::/system.slice/docker-") + kId + ".scope\n";
  EXPECT_EQ(container_id_from_cgroup(text), kId);
}

TEST(ContainerId, Containerd) {
  const std::string text = std::string("0::/system.slice/containerd.service/"
                                       "kubepods-besteffort-pod1a2b3c4d_5e6f_7a8b_9c0d_"
                                       "1e2f3a4b5c6d.slice:cri-containerd:") +
                           kId + "\n";
  EXPECT_EQ(container_id_from_cgroup(text), kId);
  const std::string scope =
      std::string("0::/kubepods.slice/kubepods-burstable.slice/"
                  "kubepods-burstable-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice/"
                  "cri-containerd-") +
      kId + ".scope\n";
  EXPECT_EQ(container_id_from_cgroup(scope), kId);
}

TEST(ContainerId, CriO) {
  const std::string text = std::string("0::/kubepods.slice/kubepods-pod0a1b2c3d_4e5f_6071_8293_"
                                       "a4b5c6d7e8f9.slice/crio-") +
                           kId + ".scope\n";
  EXPECT_EQ(container_id_from_cgroup(text), kId);
}

TEST(ContainerId, Podman) {
  const std::string text =
      std::string("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-") + kId +
      ".scope/container\n";
  EXPECT_EQ(container_id_from_cgroup(text), kId);
  const std::string rootful = std::string("0::/machine.slice/libpod-") + kId2 + ".scope\n";
  EXPECT_EQ(container_id_from_cgroup(rootful), kId2);
}

TEST(ContainerId, KubepodsCgroupV1) {
  const std::string text =
      std::string("11:memory:/kubepods/burstable/pod5f3e1a2b-4c6d-4e8f-9a0b-1c2d3e4f5a6b/") + kId2 +
      "\n" + "3:cpu,cpuacct:/kubepods/burstable/pod5f3e1a2b-4c6d-4e8f-9a0b-1c2d3e4f5a6b/" + kId2 +
      "\n";
  EXPECT_EQ(container_id_from_cgroup(text), kId2);
  const std::string besteffort = std::string("0::/kubepods/besteffort/pod12345678-aaaa-bbbb-cccc-"
                                             "1234567890ab/") +
                                 kId + "\n";
  EXPECT_EQ(container_id_from_cgroup(besteffort), kId);
}

TEST(ContainerId, NonContainerPathsAreEmpty) {
  EXPECT_EQ(container_id_from_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n"), "");
  EXPECT_EQ(container_id_from_cgroup("0::/system.slice/docker.service\n"), "");
  EXPECT_EQ(container_id_from_cgroup("0::/\n"), "");
  EXPECT_EQ(container_id_from_cgroup(""), "");
  EXPECT_EQ(container_id_from_cgroup("12:pids:/init.scope\n1:name=systemd:/init.scope\n"), "");
}

TEST(ContainerId, WrongLengthHexRunsAreIgnored) {
  const std::string id63 = std::string(kId).substr(1);
  const std::string id65 = std::string(kId) + "a";
  EXPECT_EQ(container_id_from_cgroup("0::/docker/" + id63 + "\n"), "");
  EXPECT_EQ(container_id_from_cgroup("0::/docker/" + id65 + "\n"), "");
  // A 64-hex run glued to other letters is not a container id.
  EXPECT_EQ(container_id_from_cgroup("0::/docker/x" + std::string(kId) + "\n"), "");
  EXPECT_EQ(container_id_from_cgroup("0::/docker/" + std::string(kId) + "z\n"), "");
}

TEST(ContainerId, LastIdWins) {
  // Nested containers (docker-in-docker): the innermost id is the last one in the path.
  const std::string text = std::string("0::/docker/") + kId + "/docker/" + kId2 + "\n";
  EXPECT_EQ(container_id_from_cgroup(text), kId2);
}

} // namespace
} // namespace neutracer
