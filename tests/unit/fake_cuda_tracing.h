// SPDX-License-Identifier: Apache-2.0
#pragma once
// A CudaTracing without BPF for whole-loop tests: attaches succeed, reads return what the test
// set, events queue until the next poll.
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cuda_tracing.h"

namespace neutracer::test {

class FakeTracing : public CudaTracing {
public:
  AttachSummary attach(const CudaLibrary &library) override {
    ++attach_calls;
    if (!attach_error.empty())
      return {.probes = 0,
              .missing_symbols = 0,
              .errors = 1,
              .first_error = attach_error,
              .retry = false,
              .out_of_descriptors = false,
              .hot_entries = {}};
    attached_.insert(library.id);
    return {.probes = 100,
            .missing_symbols = 0,
            .errors = 0,
            .first_error = {},
            .retry = false,
            .out_of_descriptors = false,
            .hot_entries = {}};
  }
  void detach(const LibraryId &id) override { attached_.erase(id); }
  bool is_attached(const LibraryId &id) const override { return attached_.contains(id); }
  std::vector<LibraryId> attached() const override { return {attached_.begin(), attached_.end()}; }
  std::size_t probe_count() const override { return 100 * attached_.size(); }
  bool per_process_launch_probes() const override { return per_process; }
  bool per_process_name_probes() const override { return per_process_names; }
  std::optional<double> measure_launch_trap_ns() override { return std::nullopt; }
  void poll(std::chrono::milliseconds,
            const std::function<void(std::span<const std::byte>)> &sink) override {
    for (const auto &event : std::exchange(events, {}))
      sink(std::as_bytes(std::span(&event, 1)));
    for (const auto &event : std::exchange(block_events, {}))
      sink(std::as_bytes(std::span(&event, 1)));
    for (const auto &event : std::exchange(nccl_events, {}))
      sink(std::as_bytes(std::span(&event, 1)));
  }
  std::vector<LaunchCount> read_launch_counts() const override { return launches; }
  std::string attach_allocator_probes(int pid, const std::string &path) override {
    if (!allocator_error.empty())
      return allocator_error;
    allocator_attached[pid] = path;
    return {};
  }
  void detach_allocator_probes(int pid) override {
    allocator_attached.erase(pid);
    ++allocator_detaches;
  }
  std::vector<InflightCall> read_inflight_calls() const override { return {}; }
  void delete_launch_counts(const std::vector<LaunchCount> &) override {}
  void
  forget_kernel_functions(const std::function<bool(std::uint32_t, std::uint64_t)> &gone) override {
    std::erase_if(kernel_functions,
                  [&](const auto &pair) { return gone(pair.first, pair.second); });
  }
  void delete_inflight_calls(const std::vector<InflightCall> &) override {}
  TracerStats stats() const override { return {}; }
  std::uint32_t launch_map_max_entries() const override { return 65536; }
  std::uint32_t inflight_map_max_entries() const override { return 16384; }
  std::size_t attach_launch_probes(int pid, const std::vector<LibraryId> &libraries,
                                   bool with_name_calls, std::string &) override {
    launch_probes[pid] = libraries;
    name_calls[pid] = with_name_calls;
    return 4;
  }
  void detach_launch_probes(int pid) override { launch_probes.erase(pid); }
  void set_launch_gate(std::uint32_t tgid, bool open) override { gates[tgid] = open; }
  LaunchGateHits launch_gate_hits(std::uint32_t) const override { return {}; }
  void forget_launch_gate(std::uint32_t tgid) override { gates.erase(tgid); }
  void drop_sampled_calls(std::uint32_t) override {}
  std::uint32_t stack_depth() const override { return depth; }
  std::optional<std::vector<std::uint64_t>> read_stack(std::int32_t id) const override {
    const auto it = stacks.find(id);
    return it == stacks.end() ? std::nullopt : std::optional(it->second);
  }
  std::vector<std::int32_t> stack_ids() const override {
    std::vector<std::int32_t> ids;
    for (const auto &[id, frames] : stacks)
      ids.push_back(id);
    return ids;
  }
  void delete_stacks(const std::vector<std::int32_t> &ids) override {
    for (const auto id : ids)
      stacks.erase(id);
  }
  std::optional<nt_python_stack> read_python_stack(std::uint64_t) const override {
    return std::nullopt;
  }
  void delete_python_stack(std::uint64_t) override {}
  bool set_python_process(std::uint32_t, const nt_python_offsets &) override { return false; }
  void forget_python_process(std::uint32_t) override {}
  std::vector<LaunchStackCount> read_launch_stacks() const override { return launch_stacks; }
  void delete_launch_stacks(const std::vector<LaunchStackCount> &) override {}

  bool per_process = false;
  bool per_process_names = false;
  std::uint32_t depth = 0; // stacks off unless a test sets it
  std::map<std::int32_t, std::vector<std::uint64_t>> stacks;
  std::vector<LaunchStackCount> launch_stacks;
  int attach_calls = 0;
  std::string attach_error; // non-empty: every attach fails with it
  std::vector<LaunchCount> launches;
  std::vector<nt_call_event> events;             // delivered at the next poll
  std::vector<nt_block_event> block_events;      // delivered at the next poll, after `events`
  std::vector<nt_nccl_event> nccl_events;        // delivered at the next poll, after those
  std::map<int, std::string> allocator_attached; // pid -> library path
  std::string allocator_error;                   // what attach_allocator_probes answers
  int allocator_detaches = 0;
  std::map<int, std::vector<LibraryId>> launch_probes;
  std::map<std::uint32_t, bool> gates;
  std::map<int, bool> name_calls; // whether the last attach had the name-call probes
  std::set<std::pair<std::uint32_t, std::uint64_t>> kernel_functions; // (tgid, start) sent

private:
  std::set<LibraryId> attached_;
};

} // namespace neutracer::test
