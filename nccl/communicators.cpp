// SPDX-License-Identifier: Apache-2.0
#include "nccl/communicators.h"

#include <algorithm>
#include <cstdio>

#include "common/text.h"

namespace neutracer {
namespace {

// splitmix64's finaliser: every input bit moves every output bit.
std::uint64_t mix(std::uint64_t value) {
  value ^= value >> 30;
  value *= 0xbf58476d1ce4e5b9ULL;
  value ^= value >> 27;
  value *= 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

// A communicator that joins nothing is named by its handle in this process: "h7f3a...".
std::string handle_id(std::uint64_t handle) { return "h" + hex_text(handle).substr(2); }

constexpr std::uint32_t kNcclInProgress = 7;
// Colors of splits kept per parent; past them a split joins nothing.
constexpr std::size_t kMaxSplitColors = 256;

} // namespace

std::string nccl_communicator_id(std::uint64_t key) {
  char text[16];
  std::snprintf(text, sizeof text, "%08llx",
                static_cast<unsigned long long>(mix(key) & 0xffffffffULL));
  return text;
}

NcclCommunicators::NcclCommunicators(NcclCommunicatorsSettings settings) : settings_(settings) {}

NcclCommunicator *NcclCommunicators::find_or_add(std::map<std::uint64_t, NcclCommunicator> &comms,
                                                 std::uint64_t handle) {
  if (const auto found = comms.find(handle); found != comms.end())
    return &found->second;
  if (comms.size() >= settings_.max_communicators_per_process)
    return nullptr;
  return &comms[handle];
}

void NcclCommunicators::apply(const ProcessId &process, const nt_nccl_event &event) {
  const auto op = static_cast<nt_nccl_op>(event.op);
  auto &comms = processes_[process];
  switch (op) {
  case NT_NCCL_COMM_INIT_RANK:
  case NT_NCCL_COMM_INIT_RANK_CONFIG:
  case NT_NCCL_COMM_INIT_RANK_SCALABLE:
  case NT_NCCL_COMM_SPLIT: {
    // ncclInProgress (7): a non-blocking init, its handle already written.
    if ((event.result != 0 && event.result != kNcclInProgress) || event.call.comm == 0)
      return;
    std::uint64_t key = event.call.comm_key;
    bool joinable = true;
    int nranks = event.call.nranks;
    int rank = event.call.rank;
    if (op == NT_NCCL_COMM_SPLIT) {
      // Ranks of the parent with the same color (in `rank`) make one new communicator; its rank
      // and size are NCCL's to decide, and unknown here.
      // The n-th split of one parent and color is one communicator in every rank.
      const auto parent = comms.find(event.call.comm_key);
      joinable = parent != comms.end() && parent->second.joinable &&
                 (parent->second.splits.size() < kMaxSplitColors ||
                  parent->second.splits.contains(event.call.rank));
      key = 0;
      if (joinable) {
        const std::uint32_t ordinal = parent->second.splits[event.call.rank]++;
        key = mix(parent->second.key ^ mix(static_cast<std::uint32_t>(event.call.rank)) ^
                  mix(0x5eed0000ull + ordinal));
      }
      nranks = -1;
      rank = -1;
    }
    comms.erase(event.call.comm); // a handle reused after a destroy we did not see
    auto *comm = find_or_add(comms, event.call.comm);
    if (!comm) {
      ++untracked_calls_;
      return;
    }
    comm->id = joinable ? nccl_communicator_id(key) : handle_id(event.call.comm);
    comm->key = key;
    comm->joinable = joinable;
    comm->rank = rank;
    comm->nranks = nranks;
    return;
  }
  case NT_NCCL_COMM_DESTROY:
  case NT_NCCL_COMM_ABORT:
    comms.erase(event.call.comm);
    return;
  default:
    break;
  }
  if (!is_nccl_transfer(op))
    return;
  auto *comm = find_or_add(comms, event.call.comm);
  if (!comm) {
    ++untracked_calls_;
    return;
  }
  if (comm->id.empty())
    comm->id = handle_id(event.call.comm);
  const auto index = nccl_transfer_index(op);
  ++comm->calls[index];
  if (event.result != 0 && event.result != kNcclInProgress)
    ++comm->failed[index];
  comm->bytes[index] += event.call.count * nccl_datatype_bytes(event.call.datatype).value_or(0);
  if (event.exit_ns > event.call.enter_ns)
    comm->enqueue_seconds += static_cast<double>(event.exit_ns - event.call.enter_ns) / 1e9;
  if (!is_nccl_collective(op))
    return;
  // The kernel numbers each collective (0 from probes that do not): events lost on the way
  // leave a gap of unknown arrivals instead of shifting this rank against the others.
  const std::uint64_t number =
      event.call.sequence != 0 ? event.call.sequence : comm->collectives + 1;
  if (number <= comm->collectives) {
    // Out of order (another thread's call on the same communicator): its slot, if still kept.
    const auto back = comm->collectives - number;
    if (back < comm->arrivals.size()) {
      auto &slot = comm->arrivals[comm->arrivals.size() - 1 - back];
      if (slot == kUnknownArrival && comm->missed_collectives > 0)
        --comm->missed_collectives; // not lost after all
      slot = event.call.enter_ns;
    }
    return;
  }
  const auto missed = number - comm->collectives - 1;
  comm->missed_collectives += missed;
  for (std::uint64_t i = 0; i < std::min<std::uint64_t>(missed, settings_.arrivals_kept); ++i)
    comm->arrivals.push_back(kUnknownArrival);
  comm->collectives = number;
  comm->arrivals.push_back(event.call.enter_ns);
  while (comm->arrivals.size() > settings_.arrivals_kept)
    comm->arrivals.pop_front();
  comm->last_op = op;
  comm->last_call_ns = event.call.enter_ns;
}

void NcclCommunicators::forget(const ProcessId &process) { processes_.erase(process); }

std::map<std::string, std::vector<NcclRank>> joined_communicators(const NcclCommunicators &all) {
  std::map<std::string, std::vector<NcclRank>> joined;
  for (const auto &[process, comms] : all.processes())
    for (const auto &[handle, comm] : comms)
      if (comm.joinable)
        joined[comm.id].push_back({process, &comm, handle});
  return joined;
}

} // namespace neutracer
