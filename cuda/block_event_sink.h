// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where the tensor block events of PyTorch's allocator view go (bpf/neutracer_abi.h,
// nt_block_event): the CUDA collector decodes them from the shared ring buffer and hands them to
// the allocator view, which owns what they mean.
#include "bpf/neutracer_abi.h"
#include "common/process_id.h"

namespace neutracer {

class BlockEventSink {
public:
  virtual ~BlockEventSink() = default;
  virtual void block(const ProcessId &id, const nt_block_event &event) = 0;
};

} // namespace neutracer
