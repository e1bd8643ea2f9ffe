// SPDX-License-Identifier: Apache-2.0
// What one uprobe trap costs a thread that does work between probed calls, by the size of the
// memory that work touches. The daemon's trap calibration calls a probed function back to back;
// a traced launcher (PyTorch) runs a few microseconds of interpreter code between launches, and
// a trap may also slow that code down (caches and TLB the kernel's trap path evicts).
//
//   g++ -O2 -std=c++20 -o /tmp/trap_pollution tests/bench/trap_pollution.cpp
//   sudo /tmp/trap_pollution [rounds=9] [calls=20000]
//
// Each row: a working set (0 = no work) touched by 256 dependent loads after every call; the
// time per call without and with a perf uprobe on the called function (a trap that counts,
// no BPF program), medians of `rounds` alternating loops, and the difference.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <linux/perf_event.h>
#include <numeric>
#include <random>
#include <string>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

#include <dlfcn.h>
#include <link.h>

asm(R"(
    .text
    .globl trap_pollution_target
    .type trap_pollution_target, @function
trap_pollution_target:
    push %rbp
    mov %rsp, %rbp
    lea 1(%rdi), %rax
    pop %rbp
    ret
    .size trap_pollution_target, .-trap_pollution_target
)");
extern "C" std::uint64_t trap_pollution_target(std::uint64_t value);

namespace {

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + ts.tv_nsec;
}

// File offset of the target in this executable.
std::uint64_t target_offset() {
  struct Search {
    std::uintptr_t address;
    std::uint64_t offset = 0;
  } search{reinterpret_cast<std::uintptr_t>(&trap_pollution_target)};
  dl_iterate_phdr(
      [](dl_phdr_info *info, std::size_t, void *data) {
        auto &s = *static_cast<Search *>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto &seg = info->dlpi_phdr[i];
          const std::uintptr_t start = info->dlpi_addr + seg.p_vaddr;
          if (seg.p_type == PT_LOAD && s.address >= start && s.address < start + seg.p_memsz) {
            s.offset = s.address - start + seg.p_offset;
            return 1;
          }
        }
        return 0;
      },
      &search);
  return search.offset;
}

int attach_uprobe(const std::string &path, std::uint64_t offset) {
  int type = 0;
  std::ifstream("/sys/bus/event_source/devices/uprobe/type") >> type;
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = static_cast<std::uint32_t>(type);
  attr.config1 = reinterpret_cast<std::uint64_t>(path.c_str());
  attr.config2 = offset;
  attr.sample_period = 1;
  const int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
  if (fd >= 0)
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  return fd;
}

// A random cyclic permutation of the buffer's cache lines: dependent loads the prefetcher
// cannot guess.
std::vector<std::uint32_t> make_chain(std::size_t bytes) {
  const std::size_t lines = std::max<std::size_t>(bytes / 64, 1);
  std::vector<std::uint32_t> order(lines);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), std::mt19937(42));
  std::vector<std::uint32_t> next(lines * 16);
  for (std::size_t i = 0; i < lines; ++i)
    next[order[i] * 16] = order[(i + 1) % lines] * 16;
  return next;
}

double time_calls(int calls, const std::vector<std::uint32_t> &chain, bool work) {
  std::uint64_t (*volatile target)(std::uint64_t) = &trap_pollution_target;
  std::uint64_t value = 0;
  std::uint32_t at = 0;
  const auto start = now_ns();
  for (int i = 0; i < calls; ++i) {
    value = target(value);
    if (work)
      for (int j = 0; j < 256; ++j)
        at = chain[at];
  }
  const auto elapsed = now_ns() - start;
  asm volatile("" : : "r"(value), "r"(at));
  return static_cast<double>(elapsed) / calls;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 9;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 20000;
  char exe[4096] = {};
  if (readlink("/proc/self/exe", exe, sizeof(exe) - 1) <= 0)
    return 2;
  const std::uint64_t offset = target_offset();
  std::printf("| working set | plain ns/call | probed ns/call | trap ns |\n|---|---|---|---|\n");
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{16} << 10, std::size_t{256} << 10,
                                  std::size_t{2} << 20, std::size_t{8} << 20}) {
    const auto chain = make_chain(bytes == 0 ? 64 : bytes);
    std::vector<double> plain, probed;
    for (int r = 0; r < rounds; ++r) {
      plain.push_back(time_calls(calls, chain, bytes != 0));
      const int fd = attach_uprobe(exe, offset);
      if (fd < 0) {
        std::perror("perf_event_open(uprobe)");
        return 2;
      }
      probed.push_back(time_calls(calls, chain, bytes != 0));
      close(fd);
    }
    std::printf("| %zu KiB | %.0f | %.0f | %.0f |\n", bytes >> 10, median(plain), median(probed),
                median(probed) - median(plain));
  }
  return 0;
}
