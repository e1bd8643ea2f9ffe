// SPDX-License-Identifier: Apache-2.0
#include "cuda/name_probe_keeper.h"

#include <set>
#include <spdlog/spdlog.h>
#include <utility>

namespace neutracer {

void NameProbeKeeper::attach(int pid, Tracked &process) {
  if (process.attached)
    return;
  // A return probe removed while its call ran never fired: that call's entry is stale.
  probes_.drop_sampled_calls(static_cast<std::uint32_t>(pid));
  process.drop_calls = false;
  std::string error;
  if (probes_.attach_launch_probes(pid, process.libraries, true, error) > 0) {
    process.attached = true;
    spdlog::debug("pid {}: cuKernelGetFunction probed (a launch may lack its kernel's name)", pid);
  } else if (!error.empty() && !std::exchange(process.warned, true)) {
    spdlog::warn("{}: kernels this process names from now on may stay [unresolved]", error);
  }
}

void NameProbeKeeper::detach(int pid, Tracked &process) {
  if (!process.attached)
    return;
  probes_.detach_launch_probes(pid);
  process.attached = false;
  process.drop_calls = true;
  spdlog::debug("pid {}: every launch named: cuKernelGetFunction no longer probed", pid);
}

bool NameProbeKeeper::attached(int pid) const {
  const auto it = processes_.find(pid);
  return it != processes_.end() && it->second.attached;
}

void NameProbeKeeper::track(const CudaProcess &process) {
  const int pid = process.id.pid;
  if (const auto known = processes_.find(pid);
      known != processes_.end() && known->second.start_ticks != process.id.start_ticks) {
    detach(pid, known->second); // the PID was reused: those probes watch the old process
    processes_.erase(known);
  }
  auto [it, inserted] = processes_.try_emplace(pid, Tracked{process.id.start_ticks, {}});
  // Attached early through libraries the scan had not seen: attached again with the full list.
  if (!inserted && it->second.attached && it->second.libraries != process.libraries)
    detach(pid, it->second);
  it->second.libraries = process.libraries;
  if (inserted)
    attach(pid, it->second);
}

void NameProbeKeeper::update(const std::vector<CudaProcess> &processes,
                             const std::function<bool(int)> &wanted,
                             const std::function<bool(int)> &unknown) {
  std::set<int> present;
  for (const auto &process : processes) {
    present.insert(process.id.pid);
    track(process);
    auto &tracked = processes_.at(process.id.pid);
    if (wanted(process.id.pid)) {
      attach(process.id.pid, tracked);
    } else if (tracked.attached) {
      detach(process.id.pid, tracked);
    } else if (std::exchange(tracked.drop_calls, false)) {
      // A scan after the removal, which runs in the background: the calls it cut short.
      probes_.drop_sampled_calls(static_cast<std::uint32_t>(process.id.pid));
    }
  }
  for (auto it = processes_.begin(); it != processes_.end();) {
    if (present.contains(it->first) || (unknown && unknown(it->first))) {
      ++it;
      continue;
    }
    detach(it->first, it->second);
    it = processes_.erase(it);
  }
}

} // namespace neutracer
