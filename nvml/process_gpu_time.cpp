#include "nvml/process_gpu_time.h"

#include <algorithm>
#include <set>
#include <vector>

namespace neutracer {
namespace {

double share(unsigned percent) { return std::min(percent, 100u) / 100.0; }

} // namespace

std::uint64_t ProcessGpuTime::last_seen_us(unsigned gpu, std::uint64_t now_us) {
  auto &last_seen = last_seen_[gpu];
  if (last_seen > now_us + kFutureSlackUs) {
    last_seen = 0;
    for (auto &[key, stamp] : last_sample_us_)
      if (key.second == gpu)
        stamp = 0;
  }
  return last_seen;
}

double ProcessGpuTime::period_seconds(std::uint64_t from_us, std::uint64_t to_us) const {
  const double period =
      from_us == 0 ? settings_.first_period_seconds : static_cast<double>(to_us - from_us) / 1e6;
  return std::min(period, settings_.max_period_seconds);
}

void ProcessGpuTime::add(unsigned gpu, std::span<const NvmlProcessUtilization> samples,
                         const Traced &traced, std::uint64_t now_us) {
  auto &last_seen = last_seen_[gpu];
  const std::uint64_t queried_from = last_seen;
  // A process's samples in stamp order, so that several in one answer follow each other.
  std::vector<NvmlProcessUtilization> ordered(samples.begin(), samples.end());
  std::sort(ordered.begin(), ordered.end(), [](const auto &a, const auto &b) {
    return std::pair{a.pid, a.timestamp_us} < std::pair{b.pid, b.timestamp_us};
  });
  for (const auto &sample : ordered) {
    if (sample.timestamp_us <= queried_from || sample.timestamp_us > now_us + kFutureSlackUs)
      continue;
    last_seen = std::max(last_seen, sample.timestamp_us);
    const auto process = traced.find(sample.pid);
    if (process == traced.end())
      continue;
    const Key key{process->second, gpu};
    auto &previous = last_sample_us_[key];
    if (sample.timestamp_us <= previous)
      continue; // the same sample twice
    const double seconds = period_seconds(std::max(previous, queried_from), sample.timestamp_us);
    previous = sample.timestamp_us;
    auto &busy = busy_[key];
    busy.sm_seconds += share(sample.sm_percent) * seconds;
    busy.memory_seconds += share(sample.memory_percent) * seconds;
  }
}

void ProcessGpuTime::retain(const Traced &traced) {
  std::set<ProcessId> live;
  for (const auto &[pid, id] : traced)
    live.insert(id);
  const auto gone = [&](const auto &entry) { return !live.contains(entry.first.first); };
  std::erase_if(busy_, gone);
  std::erase_if(last_sample_us_, gone);
}

} // namespace neutracer
