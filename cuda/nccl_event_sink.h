// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where NCCL call events go (bpf/neutracer_abi.h, nt_nccl_event): the CUDA collector decodes
// them from the shared ring buffer and hands them to the NCCL collector, which owns what they
// mean.
#include "bpf/neutracer_abi.h"
#include "common/process_id.h"

namespace neutracer {

class NcclEventSink {
public:
  virtual ~NcclEventSink() = default;
  virtual void nccl_call(const ProcessId &id, const nt_nccl_event &event) = 0;
};

} // namespace neutracer
