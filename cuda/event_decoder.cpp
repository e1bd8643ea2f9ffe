// SPDX-License-Identifier: Apache-2.0
#include "cuda/event_decoder.h"

#include <cstring>

namespace neutracer {
namespace {

// A fixed-size event of type T, when `bytes` are exactly one and `valid` accepts it.
template <typename T, typename Valid>
std::optional<Event> fixed_event(std::span<const std::byte> bytes, Valid valid) {
  if (bytes.size() != sizeof(T))
    return std::nullopt;
  T event;
  std::memcpy(&event, bytes.data(), sizeof event);
  if (!valid(event))
    return std::nullopt;
  return event;
}

} // namespace

std::optional<Event> decode_event(std::span<const std::byte> bytes) {
  std::uint32_t kind = 0;
  if (bytes.size() < sizeof kind)
    return std::nullopt;
  std::memcpy(&kind, bytes.data(), sizeof kind);
  if (kind == NT_EVENT_CALL)
    return fixed_event<nt_call_event>(bytes, [](const nt_call_event &event) {
      return event.api != NT_API_NONE && event.api < NT_API_MAX;
    });
  if (kind == NT_EVENT_NAME) {
    constexpr std::size_t kHeader = offsetof(nt_name_event, name);
    if (bytes.size() < kHeader)
      return std::nullopt;
    nt_name_event header;
    std::memcpy(&header, bytes.data(), kHeader);
    // The record carries exactly the name bytes the kernel said it copied.
    const std::size_t len = std::min<std::size_t>(header.name_len, NT_NAME_MAX);
    if (bytes.size() != kHeader + len)
      return std::nullopt;
    if (header.api != NT_API_MODULE_GET_FUNCTION && header.api != NT_API_LIBRARY_GET_KERNEL)
      return std::nullopt;
    NameEvent event;
    event.api = static_cast<nt_api>(header.api);
    event.tgid = header.tgid;
    event.proc_start_ns = header.proc_start_ns;
    event.result = header.result;
    event.handle = header.handle;
    event.owner = header.owner;
    const char *name = reinterpret_cast<const char *>(bytes.data()) + kHeader;
    event.name.assign(name, strnlen(name, len));
    return event;
  }
  if (kind == NT_EVENT_BLOCK)
    return fixed_event<nt_block_event>(bytes, [](const nt_block_event &event) {
      return event.op == NT_BLOCK_ALLOC || event.op == NT_BLOCK_FREE;
    });
  if (kind == NT_EVENT_NCCL)
    return fixed_event<nt_nccl_event>(bytes, [](const nt_nccl_event &event) {
      return event.op != NT_NCCL_NONE && event.op < NT_NCCL_OP_MAX;
    });
  return std::nullopt;
}

} // namespace neutracer
