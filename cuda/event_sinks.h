// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where the events of other domains go: the CUDA collector decodes every event of the shared
// ring buffer (bpf/neutracer_abi.h) and hands these to the collector that owns what they mean.
#include "bpf/neutracer_abi.h"
#include "common/process_id.h"

namespace neutracer {

// The tensor blocks of PyTorch's allocator view (nt_block_event): the allocator collector.
class BlockEventSink {
public:
  virtual ~BlockEventSink() = default;
  virtual void block(const ProcessId &id, const nt_block_event &event) = 0;
};

// NCCL calls (nt_nccl_event): the NCCL collector.
class NcclEventSink {
public:
  virtual ~NcclEventSink() = default;
  virtual void nccl_call(const ProcessId &id, const nt_nccl_event &event) = 0;
};

} // namespace neutracer
