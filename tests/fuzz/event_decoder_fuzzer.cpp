// SPDX-License-Identifier: Apache-2.0
// Fuzzes the ring-buffer event decoder and what consumes its events: the CUDA state, kernel
// name shortening and the metrics rendered from them. Event fields come from traced processes
// (arguments, return values, kernel names they pass to the driver).
//
// Input: records, each a selector byte and its bytes.
//   selector % 3 == 0: a 2-byte little-endian length, then that many bytes as one raw record
//                      (exercises the size checks);
//   selector % 3 == 1: a 2-byte length, then that many bytes, zero-padded (or cut) to a call
//                      event, so seeds stay valid when the event grows a field at its end;
//   selector % 3 == 2: the same for a name event's header, then cut or zero-padded to the name
//                      bytes its name_len announces (as the BPF side writes it).
//   selector & 0x80:   the state ticks (throughput smoothing) after the record.
// Each named kernel is then launched once, so its name reaches the rendered labels.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <sstream>
#include <string_view>
#include <vector>

#include "cuda/cuda_state.h"
#include "cuda/event_decoder.h"
#include "exporters/cuda_metrics.h"
#include "exposition/exposition.h"
#include "tests/fuzz/exposition_check.h"

using neutracer::fuzz::require;

namespace {

std::vector<std::byte> padded(std::span<const std::byte> bytes, std::size_t size) {
  std::vector<std::byte> record(size);
  std::copy_n(bytes.begin(), std::min(bytes.size(), size), record.begin());
  return record;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::span<const std::byte> rest(reinterpret_cast<const std::byte *>(data), size);
  neutracer::CudaState state(neutracer::CudaState::Settings{});
  std::vector<neutracer::LaunchCount> launches;
  while (!rest.empty()) {
    const auto selector = static_cast<std::uint8_t>(rest.front());
    rest = rest.subspan(1);
    const auto take_length = [&] {
      std::uint16_t length = 0;
      for (int shift = 0; shift < 16 && !rest.empty(); shift += 8) {
        length |= static_cast<std::uint16_t>(static_cast<std::uint8_t>(rest.front()) << shift);
        rest = rest.subspan(1);
      }
      return length;
    };
    const auto take = [&](std::size_t count) {
      const auto taken = rest.first(std::min(count, rest.size()));
      rest = rest.subspan(taken.size());
      return taken;
    };
    std::vector<std::byte> record;
    switch (selector % 3) {
    case 0: {
      const auto bytes = take(take_length());
      record.assign(bytes.begin(), bytes.end());
      break;
    }
    case 1:
      record = padded(take(take_length()), sizeof(nt_call_event));
      break;
    default: {
      constexpr std::size_t kHeader = offsetof(nt_name_event, name);
      record = padded(take(take_length()), sizeof(nt_name_event));
      std::uint32_t name_len = 0;
      std::memcpy(&name_len, record.data() + offsetof(nt_name_event, name_len), sizeof name_len);
      record.resize(kHeader + std::min<std::size_t>(name_len, NT_NAME_MAX));
      break;
    }
    }
    const auto event = neutracer::decode_event(record);
    if (event) {
      if (const auto *name = std::get_if<neutracer::NameEvent>(&*event)) {
        require(name->name.size() <= NT_NAME_MAX && name->name.find('\0') == std::string::npos,
                "a name ends at its NUL and within the buffer");
        launches.push_back({.tgid = name->tgid,
                            .proc_start_ns = name->proc_start_ns,
                            .api = NT_API_LAUNCH_KERNEL,
                            .handle = name->handle,
                            .count = 1});
      }
      state.apply(*event);
    }
    if (selector & 0x80)
      state.tick(1.0);
  }
  state.set_launch_counts(launches);
  std::ostringstream out;
  neutracer::render_text(neutracer::cuda_families(state), out);
  neutracer::fuzz::require_well_formed_exposition(out.str());
  return 0;
}
