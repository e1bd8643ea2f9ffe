// SPDX-License-Identifier: Apache-2.0
#pragma once
// The JSON views for people and scripts: GET /api/v1/processes and GET /api/v1/alerts. Pure.
#include <cstdint>
#include <string>

#include "common/clock_offset.h"
#include "cuda/cuda_state.h"
#include "detectors/detector_set.h"

namespace neutracer {

std::string processes_json(const CudaState &state, const DetectorSet &detectors);
// The same document gzip-compressed as it is written, as the snapshot keeps it.
std::string processes_json_gzip(const CudaState &state, const DetectorSet &detectors);
// The document before the first scan.
inline constexpr const char *kNoProcessesJson = "{\"processes\": []}\n";
std::string alerts_json(const DetectorSet &detectors, const ClockOffset &clock);

} // namespace neutracer
