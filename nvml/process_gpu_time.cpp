// SPDX-License-Identifier: Apache-2.0
#include "nvml/process_gpu_time.h"

#include <algorithm>
#include <set>

namespace neutracer {
namespace {

double share(unsigned percent) { return std::min(percent, 100u) / 100.0; }

} // namespace

std::uint64_t ProcessGpuTime::last_seen_us(unsigned gpu, std::uint64_t now_us) {
  auto &last_seen = last_seen_[gpu];
  if (last_seen > now_us + kFutureSlackUs)
    last_seen = 0;
  return last_seen;
}

void ProcessGpuTime::add(unsigned gpu, std::span<const NvmlProcessUtilization> samples,
                         const Traced &traced, std::uint64_t now_us) {
  auto &last_seen = last_seen_[gpu];
  const std::uint64_t from = last_seen;
  std::map<std::uint32_t, const NvmlProcessUtilization *> newest_of; // by PID
  std::uint64_t newest = from;
  for (const auto &sample : samples) {
    if (sample.timestamp_us <= from || sample.timestamp_us > now_us + kFutureSlackUs)
      continue;
    newest = std::max(newest, sample.timestamp_us);
    auto &kept = newest_of[sample.pid];
    if (kept == nullptr || sample.timestamp_us > kept->timestamp_us)
      kept = &sample;
  }
  if (newest == from)
    return; // no news
  last_seen = newest;
  const double period = from == 0 ? settings_.first_period_seconds
                                  : static_cast<double>(newest - from) / 1e6;
  const double seconds = std::min(period, settings_.max_period_seconds);
  for (const auto &[pid, sample] : newest_of) {
    const auto process = traced.find(pid);
    if (process == traced.end())
      continue;
    auto &busy = busy_[{process->second, gpu}];
    busy.sm_seconds += share(sample->sm_percent) * seconds;
    busy.memory_seconds += share(sample->memory_percent) * seconds;
  }
}

void ProcessGpuTime::retain(const Traced &traced) {
  std::set<ProcessId> live;
  for (const auto &[pid, id] : traced)
    live.insert(id);
  std::erase_if(busy_, [&](const auto &entry) { return !live.contains(entry.first.first); });
}

} // namespace neutracer
