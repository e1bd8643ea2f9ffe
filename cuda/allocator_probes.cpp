// SPDX-License-Identifier: Apache-2.0
#include "cuda/allocator_probes.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cerrno>
#include <iterator>
#include <memory>

#include "bpf/neutracer_abi.h"
#include "common/bpf_errors.h"

namespace neutracer {

namespace {

// Deletes the sampled blocks `tgid` left in the map (those of a view that closed, or of a
// process that exited, whose frees will never come).
void forget_blocks(int map_fd, std::uint32_t tgid) {
  // Collected first: deleting while iterating restarts the walk from the start.
  std::vector<nt_block_key> gone;
  nt_block_key key{};
  nt_block_key next{};
  const void *previous = nullptr;
  while (bpf_map_get_next_key(map_fd, previous, &next) == 0) {
    if (next.tgid == tgid)
      gone.push_back(next);
    key = next;
    previous = &key;
  }
  for (const auto &block : gone)
    bpf_map_delete_elem(map_fd, &block);
}

} // namespace

AllocatorProbes::~AllocatorProbes() {
  // The reaper is gone by now (CudaTracer destroys it first): removed here, all at once.
  std::vector<BpfLink> all;
  for (auto &[pid, links] : links_)
    std::move(links.begin(), links.end(), std::back_inserter(all));
  destroy_links(std::move(all));
}

std::string AllocatorProbes::attach(int pid, const std::string &path) {
  if (links_.contains(pid))
    return {};
  std::vector<BpfLink> links;
  for (const auto &[program, probe] : {std::pair{alloc_, "malloc"}, std::pair{free_, "free"}}) {
    BpfLink link(bpf_program__attach_usdt(program, pid, path.c_str(), "pytorch", probe, nullptr));
    if (!link) {
      const int error = errno;
      reaper_.reap(std::move(links));
      return std::string("cannot attach to pytorch:") + probe + " in " + path + ": " +
             errno_text(error);
    }
    links.push_back(std::move(link));
  }
  links_.emplace(pid, std::move(links));
  return {};
}

void AllocatorProbes::detach(int pid) {
  // Removing uprobes waits for RCU grace periods: in the background, and the blocks are
  // forgotten once no probe can add one.
  reaper_.reap_process(links_, pid,
                       [fd = sampled_blocks_fd_, tgid = static_cast<std::uint32_t>(pid)] {
                         forget_blocks(fd, tgid);
                       });
}

} // namespace neutracer
