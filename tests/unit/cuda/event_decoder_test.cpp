// SPDX-License-Identifier: Apache-2.0
#include "cuda/event_decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>
#include <memory>
#include <string>
#include <vector>

namespace neutracer {
namespace {

template <typename T> std::vector<std::byte> bytes_of(const T &value) {
  std::vector<std::byte> out(sizeof value);
  std::memcpy(out.data(), &value, sizeof value);
  return out;
}

nt_call_event make_call(std::uint32_t api) {
  nt_call_event event{};
  event.kind = NT_EVENT_CALL;
  event.api = api;
  event.tgid = 4242;
  event.tid = 4243;
  event.proc_start_ns = 123'000'000'000ull;
  event.enter_ns = 1'000;
  event.exit_ns = 2'500;
  event.result = 0;
  event.args[0] = 0x1111;
  event.args[1] = 0x2222;
  event.args[2] = 0x3333;
  event.args[3] = 0x4444;
  event.args[4] = 0x5555;
  event.out[0] = 0x7e0000000000ull;
  event.out[1] = 0xdeadbeefcafef00dull;
  return event;
}

// A name record as the BPF side writes it: the header and min(name_len, NT_NAME_MAX) name bytes.
// nt_name_event is 4 KiB: keep it on the heap.
std::vector<std::byte> make_name_bytes(std::uint32_t api, const std::string &name,
                                       std::uint32_t name_len, bool terminate = true) {
  auto event = std::make_unique<nt_name_event>();
  std::memset(event.get(), 0, sizeof *event);
  event->kind = NT_EVENT_NAME;
  event->api = api;
  event->tgid = 77;
  event->tid = 78;
  event->proc_start_ns = 9'990'000'000ull;
  event->result = 0;
  event->name_len = name_len;
  event->handle = 0xabc000;
  event->owner = 0xdef000;
  std::memcpy(event->name, name.data(), std::min<std::size_t>(name.size(), NT_NAME_MAX));
  if (terminate && name.size() < NT_NAME_MAX)
    event->name[name.size()] = '\0';
  auto bytes = bytes_of(*event);
  bytes.resize(offsetof(nt_name_event, name) + std::min<std::size_t>(name_len, NT_NAME_MAX));
  return bytes;
}

TEST(EventDecoder, AbiLayout) {
  EXPECT_EQ(sizeof(nt_call_event), 128u);
  EXPECT_EQ(offsetof(nt_call_event, context), 104u);
  EXPECT_EQ(offsetof(nt_call_event, stack_id), 44u);
  EXPECT_EQ(offsetof(nt_call_event, caller), 112u);
  EXPECT_EQ(offsetof(nt_call_event, python_stack), 120u);
  EXPECT_EQ(sizeof(nt_inflight_call), 88u);
  EXPECT_EQ(sizeof(nt_launch_stack_key), 32u);
  EXPECT_EQ(sizeof(nt_launch_key), 32u);
  EXPECT_EQ(offsetof(nt_launch_key, context), 24u);
  EXPECT_EQ(offsetof(nt_call_event, proc_start_ns), 16u);
  EXPECT_EQ(offsetof(nt_call_event, result), 40u);
  EXPECT_EQ(sizeof(nt_name_event), 48u + NT_NAME_MAX);
  EXPECT_EQ(offsetof(nt_name_event, name_len), 28u);
  EXPECT_EQ(offsetof(nt_name_event, handle), 32u);
  EXPECT_EQ(offsetof(nt_name_event, owner), 40u);
}

TEST(EventDecoder, DecodesCallEvent) {
  auto in = make_call(NT_API_MEM_ALLOC);
  in.result = 2;
  const auto bytes = bytes_of(in);
  const auto decoded = decode_event(bytes);
  ASSERT_TRUE(decoded.has_value());
  ASSERT_TRUE(std::holds_alternative<nt_call_event>(*decoded));
  const auto &event = std::get<nt_call_event>(*decoded);
  EXPECT_EQ(event.kind, static_cast<std::uint32_t>(NT_EVENT_CALL));
  EXPECT_EQ(event.api, static_cast<std::uint32_t>(NT_API_MEM_ALLOC));
  EXPECT_EQ(event.tgid, 4242u);
  EXPECT_EQ(event.tid, 4243u);
  EXPECT_EQ(event.proc_start_ns, 123'000'000'000ull);
  EXPECT_EQ(event.enter_ns, 1'000u);
  EXPECT_EQ(event.exit_ns, 2'500u);
  EXPECT_EQ(event.result, 2u);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(event.args[i], 0x1111u * static_cast<std::uint64_t>(i + 1)) << i;
  EXPECT_EQ(event.out[0], 0x7e0000000000ull);
  EXPECT_EQ(event.out[1], 0xdeadbeefcafef00dull);
}

TEST(EventDecoder, DecodesTensorBlockEventsAndRejectsUnknownOps) {
  nt_block_event in{};
  in.kind = NT_EVENT_BLOCK;
  in.op = NT_BLOCK_ALLOC;
  in.tgid = 4242;
  in.address = 0x7f0000001000;
  in.bytes = 4096;
  in.weight = 1 << 20;
  in.device = 1;
  in.stack_id = 7;
  in.python_stack = 0xabc;
  const auto bytes = std::as_bytes(std::span(&in, 1));
  const auto decoded = decode_event(bytes);
  ASSERT_TRUE(decoded.has_value());
  const auto &event = std::get<nt_block_event>(*decoded);
  EXPECT_EQ(event.address, 0x7f0000001000u);
  EXPECT_EQ(event.weight, 1u << 20);
  EXPECT_EQ(event.python_stack, 0xabcu);
  EXPECT_FALSE(decode_event(bytes.first(bytes.size() - 1)).has_value());
  in.op = 3;
  EXPECT_FALSE(decode_event(std::as_bytes(std::span(&in, 1))).has_value());
}

TEST(EventDecoder, DecodesNcclEventsAndRejectsUnknownOps) {
  nt_nccl_event in{};
  in.kind = NT_EVENT_NCCL;
  in.op = NT_NCCL_ALL_REDUCE;
  in.tgid = 4242;
  in.call.comm = 0x5500aa;
  in.call.count = 1024;
  in.call.datatype = 7;
  in.call.rank = -1;
  const auto bytes = std::as_bytes(std::span(&in, 1));
  const auto decoded = decode_event(bytes);
  ASSERT_TRUE(decoded.has_value());
  const auto &event = std::get<nt_nccl_event>(*decoded);
  EXPECT_EQ(event.call.comm, 0x5500aau);
  EXPECT_EQ(event.call.count, 1024u);
  EXPECT_EQ(event.call.rank, -1);
  EXPECT_FALSE(decode_event(bytes.first(bytes.size() - 1)).has_value());
  for (const std::uint32_t op : {0u, static_cast<std::uint32_t>(NT_NCCL_OP_MAX)}) {
    in.op = op;
    EXPECT_FALSE(decode_event(std::as_bytes(std::span(&in, 1))).has_value()) << op;
  }
}

TEST(EventDecoder, DecodesUnalignedBuffer) {
  const auto event_bytes = bytes_of(make_call(NT_API_MEMCPY_HTOD));
  std::vector<std::byte> buffer(event_bytes.size() + 1);
  std::memcpy(buffer.data() + 1, event_bytes.data(), event_bytes.size());
  const auto decoded = decode_event(std::span<const std::byte>(buffer).subspan(1));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(std::get<nt_call_event>(*decoded).api, static_cast<std::uint32_t>(NT_API_MEMCPY_HTOD));
  EXPECT_EQ(std::get<nt_call_event>(*decoded).out[1], 0xdeadbeefcafef00dull);
}

TEST(EventDecoder, AcceptsEveryApiInRange) {
  for (std::uint32_t api = 1; api < NT_API_MAX; ++api) {
    const auto bytes = bytes_of(make_call(api));
    const auto decoded = decode_event(bytes);
    ASSERT_TRUE(decoded.has_value()) << api;
    EXPECT_EQ(std::get<nt_call_event>(*decoded).api, api);
  }
}

TEST(EventDecoder, RejectsOutOfRangeApi) {
  for (const std::uint32_t api : {0u, static_cast<std::uint32_t>(NT_API_MAX),
                                  static_cast<std::uint32_t>(NT_API_MAX) + 1, 1000u, 0xffffffffu}) {
    const auto bytes = bytes_of(make_call(api));
    EXPECT_FALSE(decode_event(bytes).has_value()) << api;
  }
}

TEST(EventDecoder, RejectsWrongCallSizes) {
  const auto bytes = bytes_of(make_call(NT_API_MEM_FREE));
  const std::span<const std::byte> all(bytes);
  EXPECT_FALSE(decode_event(all.first(bytes.size() - 1)).has_value());
  EXPECT_FALSE(decode_event(all.first(88)).has_value());
  EXPECT_FALSE(decode_event(all.first(8)).has_value());
  std::vector<std::byte> longer = bytes;
  longer.resize(bytes.size() + 8);
  EXPECT_FALSE(decode_event(longer).has_value());
  // A call header padded to a name event's size is not a call event either.
  std::vector<std::byte> name_sized = bytes;
  name_sized.resize(sizeof(nt_name_event));
  EXPECT_FALSE(decode_event(name_sized).has_value());
  // Exact size still decodes.
  EXPECT_TRUE(decode_event(all).has_value());
}

TEST(EventDecoder, RejectsEmptyAndTinySpans) {
  EXPECT_FALSE(decode_event({}).has_value());
  const std::vector<std::byte> three(3, std::byte{1});
  EXPECT_FALSE(decode_event(three).has_value());
  const std::vector<std::byte> four = {std::byte{1}, std::byte{0}, std::byte{0}, std::byte{0}};
  EXPECT_FALSE(decode_event(four).has_value()); // kind CALL but no body
}

TEST(EventDecoder, RejectsUnknownKinds) {
  for (const std::uint32_t kind : {0u, 3u, 0x100u, 0xffffffffu}) {
    auto event = make_call(NT_API_MEM_ALLOC);
    event.kind = kind;
    EXPECT_FALSE(decode_event(bytes_of(event)).has_value()) << kind;
    auto name = make_name_bytes(NT_API_MODULE_GET_FUNCTION, "k", 2);
    std::memcpy(name.data(), &kind, sizeof kind);
    EXPECT_FALSE(decode_event(name).has_value()) << kind;
  }
}

TEST(EventDecoder, DecodesNameEvent) {
  const std::string mangled = "_Z16vectorAdd_kernelPKfS0_Pfi";
  const auto bytes = make_name_bytes(NT_API_MODULE_GET_FUNCTION, mangled,
                                     static_cast<std::uint32_t>(mangled.size() + 1));
  const auto decoded = decode_event(bytes);
  ASSERT_TRUE(decoded.has_value());
  ASSERT_TRUE(std::holds_alternative<NameEvent>(*decoded));
  const auto &event = std::get<NameEvent>(*decoded);
  EXPECT_EQ(event.api, NT_API_MODULE_GET_FUNCTION);
  EXPECT_EQ(event.tgid, 77u);
  EXPECT_EQ(event.proc_start_ns, 9'990'000'000ull);
  EXPECT_EQ(event.result, 0u);
  EXPECT_EQ(event.handle, 0xabc000u);
  EXPECT_EQ(event.owner, 0xdef000u);
  EXPECT_EQ(event.name, mangled);
}

TEST(EventDecoder, DecodesLibraryGetKernelNameEvent) {
  auto bytes = make_name_bytes(NT_API_LIBRARY_GET_KERNEL, "triton_poi_fused_add_0", 23);
  std::uint32_t result = 500;
  std::memcpy(bytes.data() + offsetof(nt_name_event, result), &result, sizeof result);
  const auto decoded = decode_event(bytes);
  ASSERT_TRUE(decoded.has_value());
  const auto &event = std::get<NameEvent>(*decoded);
  EXPECT_EQ(event.api, NT_API_LIBRARY_GET_KERNEL);
  EXPECT_EQ(event.result, 500u);
  EXPECT_EQ(event.name, "triton_poi_fused_add_0");
}

TEST(EventDecoder, NameEventsOnlyForNamingApis) {
  for (const std::uint32_t api : {0u, static_cast<std::uint32_t>(NT_API_KERNEL_GET_FUNCTION),
                                  static_cast<std::uint32_t>(NT_API_MEM_ALLOC),
                                  static_cast<std::uint32_t>(NT_API_LAUNCH_KERNEL), 9999u})
    EXPECT_FALSE(decode_event(make_name_bytes(api, "k", 2)).has_value()) << api;
}

TEST(EventDecoder, RejectsWrongNameSizes) {
  const auto bytes = make_name_bytes(NT_API_MODULE_GET_FUNCTION, "kernel", 7);
  ASSERT_EQ(bytes.size(), 48u + 7u);
  const std::span<const std::byte> all(bytes);
  EXPECT_TRUE(decode_event(all).has_value());
  // Fewer or more name bytes than name_len announces.
  EXPECT_FALSE(decode_event(all.first(bytes.size() - 1)).has_value());
  EXPECT_FALSE(decode_event(all.first(48)).has_value());
  EXPECT_FALSE(decode_event(all.first(47)).has_value());
  std::vector<std::byte> longer = bytes;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decode_event(longer).has_value());
  // A name event padded to the old fixed size, or to a call event's, is refused.
  std::vector<std::byte> fixed = bytes;
  fixed.resize(sizeof(nt_name_event));
  EXPECT_FALSE(decode_event(fixed).has_value());
  fixed.resize(sizeof(nt_call_event));
  EXPECT_FALSE(decode_event(fixed).has_value());
}

TEST(EventDecoder, RecordCarriesOnlyTheNameBytes) {
  // What the ring holds per name: the 48-byte header and the name with its NUL.
  const std::string name = "_Z6kernelPf";
  const auto bytes = make_name_bytes(NT_API_MODULE_GET_FUNCTION, name,
                                     static_cast<std::uint32_t>(name.size() + 1));
  EXPECT_EQ(bytes.size(), 48u + name.size() + 1);
  const auto decoded = decode_event(bytes);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(std::get<NameEvent>(*decoded).name, name);
}

TEST(EventDecoder, NameLenBoundsTheName) {
  // The kernel said it wrote 4 bytes: garbage after them is not part of the name.
  const auto bytes = make_name_bytes(NT_API_MODULE_GET_FUNCTION, "abcdefgh", 4);
  const auto decoded = decode_event(bytes);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(std::get<NameEvent>(*decoded).name, "abcd");
}

TEST(EventDecoder, NameLenZeroGivesEmptyName) {
  const auto bytes = make_name_bytes(NT_API_MODULE_GET_FUNCTION, "leftover", 0);
  const auto decoded = decode_event(bytes);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(std::get<NameEvent>(*decoded).name, "");
}

TEST(EventDecoder, NameStopsAtNul) {
  auto bytes = make_name_bytes(NT_API_MODULE_GET_FUNCTION, "abc", 100);
  // Bytes after the NUL but within name_len must not leak into the name.
  const char tail[] = "XYZ";
  std::memcpy(bytes.data() + offsetof(nt_name_event, name) + 4, tail, 3);
  const auto decoded = decode_event(bytes);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(std::get<NameEvent>(*decoded).name, "abc");
}

TEST(EventDecoder, NameLenLargerThanBufferIsClamped) {
  // No NUL anywhere and a name_len far past the buffer: the name is the whole buffer, no more.
  const std::string full(NT_NAME_MAX, 'k');
  for (const std::uint32_t len :
       {static_cast<std::uint32_t>(NT_NAME_MAX) + 1, 100'000u, 0xffffffffu}) {
    const auto bytes = make_name_bytes(NT_API_MODULE_GET_FUNCTION, full, len, false);
    const auto decoded = decode_event(bytes);
    ASSERT_TRUE(decoded.has_value()) << len;
    EXPECT_EQ(std::get<NameEvent>(*decoded).name.size(), static_cast<std::size_t>(NT_NAME_MAX));
    EXPECT_EQ(std::get<NameEvent>(*decoded).name, full);
  }
}

TEST(EventDecoder, NameWithoutNulWithinNameLen) {
  // name_len claims 5 bytes including the NUL but the fifth byte is not a NUL: take 5 bytes.
  const auto bytes = make_name_bytes(NT_API_MODULE_GET_FUNCTION, "helloworld", 5);
  const auto decoded = decode_event(bytes);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(std::get<NameEvent>(*decoded).name, "hello");
}

TEST(EventDecoder, LongestNameFitsExactly) {
  const std::string name(NT_NAME_MAX - 1, 'n');
  const auto bytes = make_name_bytes(NT_API_MODULE_GET_FUNCTION, name, NT_NAME_MAX);
  const auto decoded = decode_event(bytes);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(std::get<NameEvent>(*decoded).name, name);
}

} // namespace
} // namespace neutracer
