// SPDX-License-Identifier: Apache-2.0
#pragma once
// What one probed launch costs the launching thread on this host: a uprobe on a function of the
// daemon itself, called in a loop that also works over some memory, with and without the probe.
// Adaptive counting subtracts that time from each counting window (a launch-bound thread runs
// slower while its launches are counted), see LaunchScaler.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.h"

namespace neutracer {

// Where a function's code lies in its file: what a uprobe needs.
struct CodeLocation {
  std::string path;     // "/proc/self/exe" for the main program
  std::uint64_t offset; // file offset
};
std::optional<CodeLocation> locate_code(const void *address);

// The function the calibration probes. It starts with `push %rbp`, as every libcuda entry the
// daemon probes does, so the kernel emulates that instruction instead of single-stepping it.
const void *trap_calibration_target();

// Nanoseconds per trap from per-call times measured without and with the probe (several rounds
// each): the difference of the medians; nullopt when it is not positive.
std::optional<double> trap_cost_ns(std::vector<double> plain_ns, std::vector<double> probed_ns);

// Times `rounds` loops of `calls` calls of the target, each followed by work over an L2-sized
// working set (what a trap costs a working thread includes the cache it evicts), without and
// with the probe in turn (`attach` returns the probe's link, invalid when it cannot attach; it
// is closed after each round). nullopt when it cannot be measured.
std::optional<double> measure_trap_cost_ns(const std::function<UniqueFd()> &attach,
                                           int rounds = 15, int calls = 4000);

} // namespace neutracer
