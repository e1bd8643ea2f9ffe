// SPDX-License-Identifier: Apache-2.0
// Fuzzes the two /proc/<pid>/stat parsers. comm is chosen by the process (prctl, exec name) and
// may hold spaces, parentheses and newlines. Discovery and the OS sampler key a process by the
// start time each of them parses, so they must agree whenever both accept the text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/proc_parsers.h"
#include "os/os_proc_parsers.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  const auto discovery = neutracer::parse_proc_stat(text);
  const auto sampler = neutracer::parse_process_stat(text);
  require(sampler.value.has_value() == sampler.error.empty(), "a value or an error, not both");
  if (discovery)
    require(discovery->comm.size() <= text.size(), "comm is part of the text");
  // The kernel ends the file with one newline; elsewhere the parsers split fields differently
  // (the sampler also splits at newlines), so only compare texts the kernel could write.
  const auto newline =
      text.find('\n', text.rfind(')') == std::string_view::npos ? 0 : text.rfind(')'));
  const bool kernel_shaped = newline == std::string_view::npos || newline + 1 == text.size();
  if (!sampler || !kernel_shaped)
    return 0;
  require(discovery.has_value(), "text the sampler accepts is accepted by discovery");
  require(discovery->state == sampler->state, "same state");
  require(discovery->start_ticks == sampler->start_ticks, "same start time");
  require(discovery->utime_ticks == sampler->utime_ticks, "same utime");
  require(discovery->stime_ticks == sampler->stime_ticks, "same stime");
  require(discovery->num_threads == sampler->num_threads, "same thread count");
  return 0;
}
