// SPDX-License-Identifier: Apache-2.0
#include "cuda/launch_probes.h"

#include <algorithm>
#include <chrono>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/monotonic_clock.h"

namespace neutracer {

bool LaunchProbeSettings::all_exact() const {
  return mode == LaunchCounting::exact && std::ranges::all_of(rules, [](const LaunchRule &rule) {
           return rule.mode == LaunchCounting::exact;
         });
}

LaunchProbes::LaunchProbes(const LaunchProbeSettings &settings, CudaTracing &tracer,
                           const ProcFs &procfs, const CudaState &state,
                           std::function<bool(int)> gpu_saturated)
    : tracer_(tracer), procfs_(procfs), state_(state), mode_(settings.mode) {
  // Without uprobe_multi links (Linux < 6.6) the tracer counts every launch of every process.
  if (tracer_.per_process_launch_probes()) {
    auto sampling = settings.sampling;
    if (const auto trap_ns = tracer_.measure_launch_trap_ns()) {
      sampling.trap_ns = *trap_ns;
      spdlog::info("one counted launch costs the launching thread {:.2f} us here (measured); "
                   "sampled launch counts are corrected for it",
                   *trap_ns / 1000);
    } else {
      spdlog::warn("could not measure what a counted launch costs here: sampled launch counts "
                   "of launch-bound threads will run low");
    }
    trap_seconds_ = sampling.trap_ns / 1e9;
    scheduler_.emplace(settings.mode, settings.rules, sampling, tracer_, monotonic_ns);
    scheduler_->set_names_wanted([this](int pid) { return state_.has_unnamed_launches(pid); });
    scheduler_->set_gpu_saturated(std::move(gpu_saturated));
  } else if (tracer_.per_process_name_probes()) {
    names_.emplace(tracer_);
  }
}

bool LaunchProbes::names_wanted(int pid) const {
  return !state_.has_launches(pid) || state_.has_unnamed_launches(pid);
}

void LaunchProbes::update(const DiscoveryResult &discovery) {
  const auto unknown = [&discovery](int pid) { return discovery.unknown(pid); };
  if (scheduler_)
    scheduler_->update_processes(discovery.processes, monotonic_ns(), unknown);
  if (names_)
    names_->update(
        discovery.processes, [this](int pid) { return names_wanted(pid); }, unknown);
  early_misses_.clear();
}

// A process's first probed calls (context creation, module loading) come before its first
// launch: its per-process launch or naming probes are attached then, not at the next scan.
void LaunchProbes::seen(std::uint32_t tgid) {
  if (!per_process())
    return;
  const auto pid = static_cast<int>(tgid);
  const bool tracked = scheduler_ ? scheduler_->tracks(pid) : names_->tracks(pid);
  if (tracked || pid == static_cast<int>(getpid()) || !early_misses_.insert(pid).second)
    return;
  if (auto process = discover_cuda_process(procfs_, pid)) {
    early_misses_.erase(pid);
    if (scheduler_)
      scheduler_->track(*process, monotonic_ns());
    else
      names_->track(*process);
  }
}

std::uint64_t LaunchProbes::tick() {
  if (!scheduler_)
    return UINT64_MAX;
  scheduler_->tick(monotonic_ns());
  return scheduler_->next_deadline_ns();
}

std::vector<LaunchCount> LaunchProbes::read() {
  return scheduler_ ? scheduler_->read(monotonic_ns()) : tracer_.read_launch_counts();
}

void LaunchProbes::forget_counts(int pid) {
  if (scheduler_)
    scheduler_->forget_counts(pid);
}

std::string LaunchProbes::mode_name() const {
  return std::string(launch_counting_name(scheduler_ ? mode_ : LaunchCounting::exact));
}

std::vector<LaunchProcessView> LaunchProbes::processes() const {
  return scheduler_ ? scheduler_->processes() : std::vector<LaunchProcessView>{};
}

std::set<int> LaunchProbes::estimated() const {
  std::set<int> pids;
  for (const auto &view : processes())
    if (view.estimated)
      pids.insert(view.pid);
  return pids;
}

} // namespace neutracer
