// SPDX-License-Identifier: Apache-2.0
#include "cuda/trap_calibration.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>
#include <elf.h>
#include <link.h>

#include "common/monotonic_clock.h"

namespace neutracer {

#if defined(__x86_64__)
// Hand-written so that no compiler option (frame pointers, CET's endbr64) changes its first
// instruction: the trap costs ~1 us when the kernel emulates it and 6-7 us when it must be
// single-stepped (docs/architecture.md).
asm(R"(
    .text
    .globl neutracer_trap_calibration_target
    .type neutracer_trap_calibration_target, @function
neutracer_trap_calibration_target:
    push %rbp
    mov %rsp, %rbp
    lea 1(%rdi), %rax
    pop %rbp
    ret
    .size neutracer_trap_calibration_target, .-neutracer_trap_calibration_target
)");
extern "C" std::uint64_t neutracer_trap_calibration_target(std::uint64_t value);
#else
extern "C" __attribute__((noinline)) std::uint64_t
neutracer_trap_calibration_target(std::uint64_t value) {
  asm volatile("" ::: "memory");
  return value + 1;
}
#endif

const void *trap_calibration_target() {
  return reinterpret_cast<const void *>(&neutracer_trap_calibration_target);
}

std::optional<CodeLocation> locate_code(const void *address) {
  struct Search {
    std::uintptr_t address;
    std::optional<CodeLocation> found;
  } search{reinterpret_cast<std::uintptr_t>(address), std::nullopt};
  dl_iterate_phdr(
      [](dl_phdr_info *info, std::size_t, void *data) {
        auto &search = *static_cast<Search *>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto &segment = info->dlpi_phdr[i];
          const std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
          if (segment.p_type != PT_LOAD || search.address < start ||
              search.address >= start + segment.p_memsz)
            continue;
          const std::string name = info->dlpi_name ? info->dlpi_name : "";
          search.found = CodeLocation{name.empty() ? "/proc/self/exe" : name,
                                      search.address - start + segment.p_offset};
          return 1;
        }
        return 0;
      },
      &search);
  return search.found;
}

std::optional<double> trap_cost_ns(std::vector<double> plain_ns, std::vector<double> probed_ns) {
  if (plain_ns.empty() || probed_ns.empty())
    return std::nullopt;
  const auto median = [](std::vector<double> &values) {
    const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
    std::nth_element(values.begin(), middle, values.end());
    return *middle;
  };
  const double cost = median(probed_ns) - median(plain_ns);
  if (!(cost > 0))
    return std::nullopt;
  return cost;
}

namespace {

// The work a traced launcher does between launches, reduced to its memory traffic: dependent
// loads over a working set of the size of a core's L2 cache, in an order no prefetcher guesses.
// The kernel's trap path evicts part of such a working set, and the thread pays for it after
// the trap returns: on a GPU host a bare call loop measured 0.71 us per trap, the same loop with
// this work 1.03 us, and PyTorch's eager loop lost 0.9-1.0 us per counted launch
// (BENCHMARKS.md, "What a counted launch costs a working thread").
class WorkingSet {
public:
  static constexpr std::size_t kBytes = std::size_t{256} << 10;
  static constexpr int kLoadsPerCall = 64;

  WorkingSet() : next_(kBytes / sizeof(std::uint32_t)) {
    constexpr std::uint32_t kStride = 64 / sizeof(std::uint32_t); // one load per cache line
    const auto lines = static_cast<std::uint32_t>(kBytes / 64);
    std::vector<std::uint32_t> order(lines);
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin(), order.end(), std::mt19937(7));
    for (std::uint32_t i = 0; i < lines; ++i)
      next_[order[i] * kStride] = order[(i + 1) % lines] * kStride;
  }
  // kLoadsPerCall loads from `at` on; returns where the next pass starts.
  std::uint32_t pass(std::uint32_t at) const {
    for (int i = 0; i < kLoadsPerCall; ++i)
      at = next_[at];
    return at;
  }

private:
  std::vector<std::uint32_t> next_;
};

// Nanoseconds per call of the target and a pass over the working set, the target called
// through a pointer the compiler cannot see through.
double time_calls(const WorkingSet &work, int calls) {
  std::uint64_t (*volatile target)(std::uint64_t) = &neutracer_trap_calibration_target;
  std::uint64_t value = 0;
  std::uint32_t at = 0;
  const auto start = monotonic_ns();
  for (int i = 0; i < calls; ++i) {
    value = target(value);
    at = work.pass(at);
  }
  const auto elapsed = monotonic_ns() - start;
  asm volatile("" : : "r"(value), "r"(at));
  return static_cast<double>(elapsed) / calls;
}

} // namespace

std::optional<double> measure_trap_cost_ns(const std::function<UniqueFd()> &attach, int rounds,
                                           int calls) {
  const WorkingSet work;
  time_calls(work, calls); // the working set in cache, the loop warm
  // Rounds without and with the probe alternate, so that a slow spell of the host (another
  // tenant, frequency) lands on both sides.
  std::vector<double> plain, probed;
  for (int i = 0; i < rounds; ++i) {
    plain.push_back(time_calls(work, calls));
    const auto link = attach();
    if (!link)
      return std::nullopt;
    probed.push_back(time_calls(work, calls));
  }
  return trap_cost_ns(std::move(plain), std::move(probed));
}

} // namespace neutracer
