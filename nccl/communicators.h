// SPDX-License-Identifier: Apache-2.0
#pragma once
// Each traced process's NCCL communicators, from its NCCL calls (bpf/nccl_calls.bpf.h): rank,
// number of ranks, and per operation the calls and bytes enqueued, with the times its latest
// collectives arrived. Pure: fed with decoded events.
//
// A communicator's `id` is short, stable and the same in every rank: it is made from the
// ncclUniqueId every rank passes to ncclCommInitRank*, so the ranks of one job on one node can be
// joined (a split communicator's id is made from its parent's and its color). A communicator
// whose init was not seen (the daemon started later) is counted under an id of its own
// ("h" + its handle), which joins nothing.
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "bpf/neutracer_abi.h"
#include "common/process_id.h"
#include "nccl/nccl_ops.h"

namespace neutracer {

struct NcclCommunicatorsSettings {
  std::size_t max_communicators_per_process = 64; // beyond: calls counted in `untracked_calls`
  std::size_t arrivals_kept = 512;                // collective arrival times kept per communicator
};

// An arrival time not known: the collective's event was lost.
inline constexpr std::uint64_t kUnknownArrival = 0;

struct NcclCommunicator {
  std::string id;
  std::uint64_t key = 0; // what `id` is made from; 0 unless joinable
  bool joinable = false; // its id came from an init (or a split of one) this daemon saw
  int rank = -1;         // -1: unknown (a split's rank is NCCL's to decide)
  int nranks = -1;
  std::array<std::uint64_t, kNcclTransferOps> calls{};  // by nccl_transfer_index
  std::array<std::uint64_t, kNcclTransferOps> bytes{};  // count x element size
  std::array<std::uint64_t, kNcclTransferOps> failed{}; // calls that returned an error
  double enqueue_seconds = 0;    // host time inside the calls (enqueueing, not the GPU's work)
  std::uint64_t collectives = 0; // collectives called: the number of the latest one
  // Enter times of the latest collectives, oldest first: number i is collective
  // (collectives - arrivals.size() + i); kUnknownArrival for those whose events were lost.
  std::deque<std::uint64_t> arrivals;
  std::uint64_t missed_collectives = 0; // numbered by the kernel, their events lost
  nt_nccl_op last_op = NT_NCCL_NONE;    // the latest collective
  std::uint64_t last_call_ns = 0;       // enter time of the latest collective
  // Splits of this communicator so far, by color: the n-th split of one color is the same
  // communicator in every rank (ncclCommSplit is collective over the parent).
  std::map<std::int32_t, std::uint32_t> splits;
};

class NcclCommunicators {
public:
  explicit NcclCommunicators(NcclCommunicatorsSettings settings = {});

  void apply(const ProcessId &process, const nt_nccl_event &event);
  void forget(const ProcessId &process);

  // Process -> its communicators by handle.
  const std::map<ProcessId, std::map<std::uint64_t, NcclCommunicator>> &processes() const {
    return processes_;
  }
  std::uint64_t untracked_calls() const { return untracked_calls_; }

private:
  NcclCommunicator *find_or_add(std::map<std::uint64_t, NcclCommunicator> &comms,
                                std::uint64_t handle);

  NcclCommunicatorsSettings settings_;
  std::map<ProcessId, std::map<std::uint64_t, NcclCommunicator>> processes_;
  std::uint64_t untracked_calls_ = 0;
};

// One rank of a communicator: the process and its view of the communicator.
struct NcclRank {
  ProcessId process;
  const NcclCommunicator *communicator = nullptr;
  std::uint64_t handle = 0; // the communicator's in its process: a process may hold several ranks
};

// The joinable communicators by id, each with its ranks on this node in process order.
std::map<std::string, std::vector<NcclRank>> joined_communicators(const NcclCommunicators &all);

// "3fa9c02e": eight hex digits of `key`, mixed, so that nearby keys differ.
std::string nccl_communicator_id(std::uint64_t key);

} // namespace neutracer
