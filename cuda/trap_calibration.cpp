#include "cuda/trap_calibration.h"

#include <algorithm>
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

// Nanoseconds per call of the target, called through a pointer the compiler cannot see through.
double time_calls(int calls) {
  std::uint64_t (*volatile target)(std::uint64_t) = &neutracer_trap_calibration_target;
  std::uint64_t value = 0;
  const auto start = monotonic_ns();
  for (int i = 0; i < calls; ++i)
    value = target(value);
  const auto elapsed = monotonic_ns() - start;
  asm volatile("" : : "r"(value));
  return static_cast<double>(elapsed) / calls;
}

} // namespace

std::optional<double> measure_trap_cost_ns(const std::function<UniqueFd()> &attach, int rounds,
                                           int calls) {
  std::vector<double> plain, probed;
  for (int i = 0; i < rounds; ++i)
    plain.push_back(time_calls(calls));
  {
    const auto link = attach();
    if (!link)
      return std::nullopt;
    for (int i = 0; i < rounds; ++i)
      probed.push_back(time_calls(calls));
  }
  return trap_cost_ns(std::move(plain), std::move(probed));
}

} // namespace neutracer
