#pragma once
// The JSON views for people and scripts: GET /api/v1/processes and GET /api/v1/alerts. Pure.
#include <cstdint>
#include <string>

#include "cuda/cuda_state.h"
#include "detectors/detector_set.h"

namespace neutracer {

// Converts CLOCK_MONOTONIC nanoseconds to Unix seconds: `unix_now - monotonic_now`.
struct ClockOffset {
  double unix_now_seconds = 0;
  std::uint64_t monotonic_now_ns = 0;
  double to_unix(std::uint64_t monotonic_ns) const;
};

// `expected_bytes`: the size it will likely have (the last one's), reserved up front.
std::string processes_json(const CudaState &state, const DetectorSet &detectors,
                           std::size_t expected_bytes = 0);
std::string alerts_json(const DetectorSet &detectors, const ClockOffset &clock);

} // namespace neutracer
