// SPDX-License-Identifier: Apache-2.0
#include "detectors/oom_classifier.h"

#include <algorithm>

#include "common/enum_names.h"

namespace neutracer {
namespace {

// A pending failure waits for its retry; a burst of failures needs only a few of them.
constexpr std::size_t kMaxPendingFailures = 64;

std::uint64_t seconds_to_ns(double seconds) {
  return static_cast<std::uint64_t>(std::max(0.0, seconds) * 1e9);
}

} // namespace

constexpr std::array<std::string_view, 2> kOomCauseNames = {"capacity", "fragmentation"};
static_assert(kOomCauseNames.size() == enum_count(OomCause::fragmentation));

std::string_view oom_cause_name(OomCause cause) { return enum_name(cause, kOomCauseNames); }

OomClassifier::OomClassifier(FragmentationSettings settings)
    : settings_(settings), retry_window_ns_(seconds_to_ns(settings.retry_window_seconds)),
      storm_window_ns_(seconds_to_ns(settings.storm_window_seconds)) {}

void OomClassifier::observe(std::span<const MemoryChange> changes,
                            std::optional<std::uint64_t> device_free_bytes) {
  for (const auto &change : changes) {
    switch (change.kind) {
    case MemoryChangeKind::allocation:
      on_allocation(change);
      break;
    case MemoryChangeKind::free:
      on_free(change);
      break;
    case MemoryChangeKind::failed_allocation:
      if (change.error == kCudaErrorOutOfMemory)
        on_failure(change, device_free_bytes);
      break;
    }
  }
}

void OomClassifier::on_allocation(const MemoryChange &change) {
  add_segment(change.address, change.bytes);

  expire_failures(change.time_ns);
  bool retried = false;
  std::erase_if(pending_failures_, [&](const PendingFailure &failure) {
    const bool served = failure.freed_since && change.bytes >= failure.requested_bytes;
    retried = retried || served;
    return served;
  });
  if (!retried)
    return;
  // One successful allocation settles every failure it could have been the retry of.
  ++retries_;
  recent_retries_.push_back(change.time_ns);
  if (const auto keep = std::max<std::size_t>(1, settings_.storm_retries);
      recent_retries_.size() > keep)
    recent_retries_.erase(recent_retries_.begin(),
                          recent_retries_.begin() +
                              static_cast<std::ptrdiff_t>(recent_retries_.size() - keep));
}

void OomClassifier::on_free(const MemoryChange &change) {
  // A free of an allocation made before tracing still releases memory for a retry.
  remove_segment(change.address);
  expire_failures(change.time_ns);
  for (auto &failure : pending_failures_)
    failure.freed_since = true;
}

void OomClassifier::on_failure(const MemoryChange &change,
                               std::optional<std::uint64_t> device_free_bytes) {
  const std::uint64_t requested = change.bytes;
  const bool device_had_room = device_free_bytes && *device_free_bytes >= requested;
  const bool held_in_pieces = live_bytes_ >= requested && largest_segment() < requested;
  const OomCause cause =
      device_had_room || held_in_pieces ? OomCause::fragmentation : OomCause::capacity;
  ++oom_counts_[static_cast<std::size_t>(cause)];

  if (events_.size() < settings_.max_pending_events)
    events_.push_back(OomEvent{change.time_ns, requested, change.used_after, device_free_bytes,
                               cause, change.error});
  else
    ++dropped_events_;

  expire_failures(change.time_ns);
  pending_failures_.push_back(PendingFailure{change.time_ns, requested, false});
  if (pending_failures_.size() > kMaxPendingFailures)
    pending_failures_.erase(
        pending_failures_.begin(),
        pending_failures_.begin() +
            static_cast<std::ptrdiff_t>(pending_failures_.size() - kMaxPendingFailures));
}

void OomClassifier::add_segment(std::uint64_t address, std::uint64_t bytes) {
  // The driver reuses an address only after a free; if that free was lost, replace the segment.
  remove_segment(address);
  if (live_.size() >= settings_.max_live_segments) {
    ++untracked_segments_;
    return;
  }
  live_.emplace(address, bytes);
  ++segments_by_size_[bytes];
  live_bytes_ += bytes;
}

void OomClassifier::remove_segment(std::uint64_t address) {
  const auto it = live_.find(address);
  if (it == live_.end())
    return;
  const auto size = segments_by_size_.find(it->second);
  if (--size->second == 0)
    segments_by_size_.erase(size);
  live_bytes_ -= it->second;
  live_.erase(it);
}

void OomClassifier::expire_failures(std::uint64_t now_ns) {
  const auto current = std::find_if(
      pending_failures_.begin(), pending_failures_.end(), [&](const PendingFailure &failure) {
        return now_ns <= failure.time_ns || now_ns - failure.time_ns <= retry_window_ns_;
      });
  pending_failures_.erase(pending_failures_.begin(), current);
}

std::vector<OomEvent> OomClassifier::take_oom_events() {
  std::vector<OomEvent> taken;
  taken.swap(events_);
  return taken;
}

std::uint64_t OomClassifier::oom_count(OomCause cause) const {
  return oom_counts_[static_cast<std::size_t>(cause)];
}

bool OomClassifier::retry_storm(std::uint64_t now_ns) const {
  if (settings_.storm_retries == 0 || recent_retries_.size() < settings_.storm_retries)
    return false;
  // recent_retries_ holds exactly the last storm_retries retries: the oldest decides.
  const std::uint64_t oldest = recent_retries_.front();
  return now_ns < oldest || now_ns - oldest <= storm_window_ns_;
}

double OomClassifier::fragmentation_ratio() const {
  if (live_bytes_ == 0)
    return 0;
  return 1.0 - static_cast<double>(largest_segment()) / static_cast<double>(live_bytes_);
}

std::uint64_t OomClassifier::largest_segment() const {
  return segments_by_size_.empty() ? 0 : segments_by_size_.rbegin()->first;
}

} // namespace neutracer
