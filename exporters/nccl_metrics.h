// SPDX-License-Identifier: Apache-2.0
#pragma once
// NCCL's series (docs/nccl.md, docs/metrics.md): per traced process and communicator, its
// collectives and bytes by operation, the host time spent enqueueing them and the time since the
// latest; per communicator with two or more ranks here, whether it hangs and who straggles.
#include <cstdint>

#include "cuda/cuda_state.h"
#include "exposition/metric_sink.h"
#include "nccl/communicators.h"
#include "nccl/nccl_findings.h"

namespace neutracer {

void write_nccl_metrics(const NcclCommunicators &all, const NcclFindings &findings,
                        const CudaState &state, std::uint64_t now_ns, MetricSink &sink);

} // namespace neutracer
