// SPDX-License-Identifier: Apache-2.0
#pragma once
// The probes of PyTorch's caching allocator (bpf/cuda_calls.bpf.c: torch_block_alloc and
// torch_block_free on the pytorch:malloc and pytorch:free static tracepoints), attached to one
// process at a time while its allocator view is open, and what they leave in the kernel's map
// of sampled blocks. Kernel-facing and thin; when to attach is allocator/investigation.h's.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/bpf_link.h"

struct bpf_program;

namespace neutracer {

class AllocatorProbes {
public:
  // `sampled_blocks_fd`: the map of sampled live blocks (struct nt_block_key -> weight).
  AllocatorProbes(bpf_program *alloc, bpf_program *free, int sampled_blocks_fd, LinkReaper &reaper)
      : alloc_(alloc), free_(free), sampled_blocks_fd_(sampled_blocks_fd), reaper_(reaper) {}
  ~AllocatorProbes();
  AllocatorProbes(const AllocatorProbes &) = delete;
  AllocatorProbes &operator=(const AllocatorProbes &) = delete;

  // Attaches both programs to `pid` alone, on the tracepoints of the library at `path` (as the
  // daemon sees it: /proc/<pid>/root/...); libbpf switches their semaphores on in that process.
  // Empty on success; else why not, with nothing left attached.
  std::string attach(int pid, const std::string &path);
  // Detaches (in the background) and forgets the process's sampled blocks.
  void detach(int pid);
  bool attached(int pid) const { return links_.contains(pid); }
  std::size_t attached_count() const { return links_.size(); }

private:
  bpf_program *alloc_;
  bpf_program *free_;
  int sampled_blocks_fd_;
  LinkReaper &reaper_;
  std::map<int, std::vector<BpfLink>> links_;
};

} // namespace neutracer
