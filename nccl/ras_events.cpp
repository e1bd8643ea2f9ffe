// SPDX-License-Identifier: Apache-2.0
#include "nccl/ras_events.h"

#include <charconv>

namespace neutracer {
namespace {

bool event_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool host_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '.' ||
         c == ':';
}

} // namespace

std::optional<RasPeerEvent> parse_ras_event(std::string_view line) {
  // "[timestamp] EVENT: rest"
  if (!line.starts_with('['))
    return std::nullopt;
  const auto stamp_end = line.find("] ");
  if (stamp_end == std::string_view::npos)
    return std::nullopt;
  line.remove_prefix(stamp_end + 2);
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 64)
    return std::nullopt;
  RasPeerEvent event;
  for (const char c : line.substr(0, colon)) {
    if (!event_name_char(c))
      return std::nullopt;
    event.event += c;
  }
  // "Process <pid> on node <ip> managing ...": the peer as NCCL knows it.
  auto rest = line.substr(colon + 1);
  constexpr std::string_view kProcess = " Process ";
  constexpr std::string_view kOnNode = " on node ";
  if (!rest.starts_with(kProcess))
    return event;
  rest.remove_prefix(kProcess.size());
  int pid = -1;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
  if (error != std::errc() || pid <= 0)
    return event;
  rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  if (!rest.starts_with(kOnNode))
    return event;
  rest.remove_prefix(kOnNode.size());
  std::size_t length = 0;
  while (length < rest.size() && length < 64 && host_char(rest[length]))
    ++length;
  if (length == 0)
    return event;
  event.pid = pid;
  event.host = std::string(rest.substr(0, length));
  return event;
}

} // namespace neutracer
