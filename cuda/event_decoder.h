// SPDX-License-Identifier: Apache-2.0
#pragma once
// Ring-buffer bytes -> typed events. Pure; malformed input is rejected, never trusted.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>

#include "bpf/neutracer_abi.h"

namespace neutracer {

static_assert(sizeof(nt_call_event) == 128);
static_assert(offsetof(nt_call_event, stack_id) == 44);
static_assert(offsetof(nt_call_event, caller) == 112);
static_assert(offsetof(nt_call_event, python_stack) == 120);
static_assert(offsetof(nt_call_event, args) == 48);
static_assert(offsetof(nt_call_event, out) == 88);
static_assert(sizeof(nt_name_event) == 48 + NT_NAME_MAX);
static_assert(offsetof(nt_name_event, name) == 48);
static_assert(sizeof(nt_launch_key) == 32);
static_assert(sizeof(nt_inflight_key) == 16);
static_assert(sizeof(nt_thread_context) == 48);
static_assert(sizeof(nt_inflight_call) == 88);
static_assert(sizeof(nt_launch_stack_key) == 32);
static_assert(sizeof(nt_block_event) == 80);
static_assert(offsetof(nt_block_event, python_stack) == 72);

struct NameEvent {
  nt_api api = NT_API_NONE;
  std::uint32_t tgid = 0;
  std::uint64_t proc_start_ns = 0;
  std::uint32_t result = 0;
  std::uint64_t handle = 0;
  std::uint64_t owner = 0;
  std::string name; // mangled, as the process passed it
};

using Event = std::variant<nt_call_event, NameEvent, nt_block_event, nt_nccl_event>;

std::optional<Event> decode_event(std::span<const std::byte> bytes);

} // namespace neutracer
