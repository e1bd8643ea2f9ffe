// SPDX-License-Identifier: Apache-2.0
#include "os/os_proc_parsers.h"

#include <gtest/gtest.h>

#include <string>

namespace neutracer {
namespace {

// Real text from Linux 6.18 (/proc/self/stat of cat), with the fields the parser reads.
constexpr const char *kStat =
    "17932 (cat) R 17930 17930 8885 0 -1 4194304 100 0 7 0 11 3 0 0 20 0 1 0 435729 3133440 381 "
    "18446744073709551615 94137137180672 94137137200553 140735187775120 0 0 0 0 0 0 0 0 0 17 1 0 "
    "0 0 0 0 94137137216560 94137137218176 94137847332864 140735187778186 140735187778206 "
    "140735187778206 140735187779563 0\n";

TEST(OsProcParsers, StatFields) {
  const auto stat = parse_process_stat(kStat);
  ASSERT_TRUE(stat) << stat.error;
  EXPECT_EQ(stat->state, 'R');
  EXPECT_EQ(stat->minor_faults, 100u);
  EXPECT_EQ(stat->major_faults, 7u);
  EXPECT_EQ(stat->utime_ticks, 11u);
  EXPECT_EQ(stat->stime_ticks, 3u);
  EXPECT_EQ(stat->num_threads, 1u);
  EXPECT_EQ(stat->start_ticks, 435729u);
  EXPECT_EQ(stat->vsize_bytes, 3133440u);
  EXPECT_EQ(stat->rss_pages, 381u);
  EXPECT_TRUE(stat.error.empty());
}

TEST(OsProcParsers, StatCommWithSpacesAndParentheses) {
  const auto stat =
      parse_process_stat("42 (a) b (c)) S 1 1 1 0 -1 0 5 0 6 0 7 8 0 0 20 0 4 0 99 4096 2 0 0 0\n");
  ASSERT_TRUE(stat) << stat.error;
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->minor_faults, 5u);
  EXPECT_EQ(stat->major_faults, 6u);
  EXPECT_EQ(stat->utime_ticks, 7u);
  EXPECT_EQ(stat->stime_ticks, 8u);
  EXPECT_EQ(stat->num_threads, 4u);
  EXPECT_EQ(stat->start_ticks, 99u);
  EXPECT_EQ(stat->vsize_bytes, 4096u);
  EXPECT_EQ(stat->rss_pages, 2u);
}

TEST(OsProcParsers, StatOfKernelThread) {
  const auto stat = parse_process_stat("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 "
                                       "0 25 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647\n");
  ASSERT_TRUE(stat) << stat.error;
  EXPECT_EQ(stat->vsize_bytes, 0u);
  EXPECT_EQ(stat->rss_pages, 0u);
  EXPECT_EQ(stat->start_ticks, 25u);
}

TEST(OsProcParsers, StatMalformed) {
  EXPECT_FALSE(parse_process_stat(""));
  EXPECT_FALSE(parse_process_stat("garbage"));
  EXPECT_FALSE(parse_process_stat("1 (x"));
  EXPECT_FALSE(parse_process_stat("1 x) S 1 2 3"));
  // Too few fields: rss (24) missing.
  const auto short_stat =
      parse_process_stat("1 (x) S 1 1 1 0 -1 0 5 0 6 0 7 8 0 0 20 0 4 0 99 4096\n");
  ASSERT_FALSE(short_stat);
  EXPECT_NE(short_stat.error.find("fields"), std::string::npos) << short_stat.error;
  // Non-numeric utime.
  const auto bad = parse_process_stat("1 (x) S 1 1 1 0 -1 0 5 0 6 0 x 8 0 0 20 0 4 0 99 4096 2\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error.find("stat: not in proc(5)'s format"), std::string::npos) << bad.error;
  // Negative rss.
  EXPECT_FALSE(parse_process_stat("1 (x) S 1 1 1 0 -1 0 5 0 6 0 7 8 0 0 20 0 4 0 99 4096 -2\n"));
  // State must be one character.
  EXPECT_FALSE(parse_process_stat("1 (x) SS 1 1 1 0 -1 0 5 0 6 0 7 8 0 0 20 0 4 0 99 4096 2\n"));
  // Numbers beyond 64 bits.
  EXPECT_FALSE(parse_process_stat(
      "1 (x) S 1 1 1 0 -1 0 5 0 6 0 7 8 0 0 20 0 4 0 99 99999999999999999999999 2\n"));
}

TEST(OsProcParsers, Io) {
  const auto io = parse_proc_io("rchar: 6976\nwchar: 12\nsyscr: 10\nsyscw: 3\nread_bytes: "
                                "4096\nwrite_bytes: 8192\ncancelled_write_bytes: 4096\n");
  ASSERT_TRUE(io) << io.error;
  EXPECT_EQ(*io, (ProcIoCounters{6976, 12, 10, 3, 4096, 8192, 4096}));
}

TEST(OsProcParsers, IoToleratesUnknownKeysAndMissingCancelled) {
  const auto io = parse_proc_io("rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\n"
                                "write_bytes: 6\nfuture_field: 7\n");
  ASSERT_TRUE(io) << io.error;
  EXPECT_EQ(io->read_bytes, 5u);
  EXPECT_EQ(io->write_bytes, 6u);
  EXPECT_EQ(io->cancelled_write_bytes, 0u);
}

TEST(OsProcParsers, IoMalformed) {
  // What an unreadable file (no ptrace access) gives: nothing.
  const auto empty = parse_proc_io("");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error.find("missing rchar"), std::string::npos) << empty.error;
  const auto missing = parse_proc_io("rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\n");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error.find("write_bytes"), std::string::npos) << missing.error;
  const auto bad = parse_proc_io("rchar: 1\nwchar: x\nsyscr: 3\nsyscw: 4\nread_bytes: 5\n"
                                 "write_bytes: 6\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error.find("wchar"), std::string::npos) << bad.error;
  EXPECT_FALSE(parse_proc_io("no colon here\n"));
  EXPECT_FALSE(parse_proc_io("rchar: -1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\n"
                             "write_bytes: 6\n"));
}

constexpr const char *kStatus = "Name:\tprocess_api\n"
                                "Umask:\t0022\n"
                                "State:\tS (sleeping)\n"
                                "Tgid:\t1\n"
                                "VmPeak:\t   50084 kB\n"
                                "VmSize:\t   39464 kB\n"
                                "VmRSS:\t   10688 kB\n"
                                "Threads:\t13\n"
                                "Cpus_allowed_list:\t0-1\n"
                                "voluntary_ctxt_switches:\t515\n"
                                "nonvoluntary_ctxt_switches:\t56\n";

TEST(OsProcParsers, Status) {
  const auto status = parse_proc_status(kStatus);
  ASSERT_TRUE(status) << status.error;
  EXPECT_EQ(status->vm_size_bytes, 39464u * 1024);
  EXPECT_EQ(status->vm_rss_bytes, 10688u * 1024);
  EXPECT_EQ(status->threads, 13u);
  EXPECT_EQ(status->voluntary_ctxt_switches, 515u);
  EXPECT_EQ(status->nonvoluntary_ctxt_switches, 56u);
}

TEST(OsProcParsers, StatusOfKernelThreadHasNoMemory) {
  const auto status = parse_proc_status("Name:\tkthreadd\nThreads:\t1\n");
  ASSERT_TRUE(status) << status.error;
  EXPECT_FALSE(status->vm_rss_bytes.has_value());
  EXPECT_FALSE(status->vm_size_bytes.has_value());
  EXPECT_FALSE(status->voluntary_ctxt_switches.has_value());
  EXPECT_EQ(status->threads, 1u);
}

TEST(OsProcParsers, StatusMalformed) {
  EXPECT_FALSE(parse_proc_status(""));
  EXPECT_FALSE(parse_proc_status("Name:\tx\n"));
  const auto bad_rss = parse_proc_status("VmRSS:\t12 MB\nThreads:\t1\n");
  ASSERT_FALSE(bad_rss);
  EXPECT_NE(bad_rss.error.find("VmRSS"), std::string::npos) << bad_rss.error;
  EXPECT_FALSE(parse_proc_status("VmSize:\tlots kB\nThreads:\t1\n"));
  EXPECT_FALSE(parse_proc_status("Threads:\tmany\n"));
  EXPECT_FALSE(parse_proc_status("Threads:\t1\nvoluntary_ctxt_switches:\t-3\n"));
}

TEST(OsProcParsers, CpuList) {
  const auto cpus = parse_cpu_list("0-3,8,10-11\n");
  ASSERT_TRUE(cpus) << cpus.error;
  EXPECT_EQ(*cpus, (std::vector<std::uint32_t>{0, 1, 2, 3, 8, 10, 11}));
  const auto empty = parse_cpu_list("\n");
  ASSERT_TRUE(empty) << empty.error;
  EXPECT_TRUE(empty->empty());
}

TEST(OsProcParsers, CpuListMalformed) {
  EXPECT_FALSE(parse_cpu_list("3-1"));
  EXPECT_FALSE(parse_cpu_list("0-"));
  EXPECT_FALSE(parse_cpu_list("a"));
  EXPECT_FALSE(parse_cpu_list("0,,1"));
  EXPECT_FALSE(parse_cpu_list("0-99999999"));
  EXPECT_FALSE(parse_cpu_list("0-65535,0-65535"));
}

} // namespace
} // namespace neutracer
