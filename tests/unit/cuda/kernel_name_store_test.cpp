// SPDX-License-Identifier: Apache-2.0
#include "cuda/kernel_name_store.h"
#include "cuda/kernel_names.h"

#include <gtest/gtest.h>

#include <string>

namespace neutracer {
namespace {

constexpr std::size_t kPlenty = std::size_t{1} << 30;

std::string name_of(int i, std::size_t bytes = 20) {
  auto name = "k" + std::to_string(i) + "_";
  name.resize(bytes, 'n');
  return name;
}

TEST(KernelNameStore, NamesHandlesAndFollowsFunctionLinks) {
  KernelNameBudget budget(kPlenty);
  KernelNameStore store;
  store.add(0xc1, "_Z6kernelIiEvPT_", 10, budget);
  store.link(0xf1, 0xc1, 10, budget);
  ASSERT_NE(store.find(0xc1), nullptr);
  EXPECT_EQ(store.find(0xc1)->short_name, "kernel");
  EXPECT_EQ(store.find(0xc1)->full_name, "void kernel<int>(int*)");
  EXPECT_EQ(store.find(0xf1), store.find(0xc1));
  EXPECT_EQ(store.find(0x999), nullptr);
  EXPECT_EQ(store.kernel_of(0xf1), 0xc1u);
  // Text, plus what a kept name and a kept link cost besides it.
  EXPECT_EQ(store.bytes(), std::string("kernel").size() +
                               std::string("void kernel<int>(int*)").size() +
                               kKernelNameEntryBytes + kKernelLinkEntryBytes);
  EXPECT_EQ(budget.used_bytes(), store.bytes());
  EXPECT_EQ(store.dropped(), 0u);
}

TEST(KernelNameStore, KeepsAtMostMaxNamesAndCountsTheRest) {
  KernelNameBudget budget(kPlenty);
  KernelNameStore store;
  for (int i = 0; i < 100; ++i)
    store.add(0x1000 + i, name_of(i), 30, budget);
  EXPECT_EQ(store.size(), 30u);
  EXPECT_EQ(store.dropped(), 70u);
  EXPECT_NE(store.find(0x1000 + 29), nullptr); // first come, first kept
  EXPECT_EQ(store.find(0x1000 + 30), nullptr);
  EXPECT_EQ(budget.used_bytes(), 30u * (2 * 20 + kKernelNameEntryBytes));
}

TEST(KernelNameStore, RenamingAHandleReplacesItsNameEvenWhenFull) {
  KernelNameBudget budget(kPlenty);
  KernelNameStore store;
  store.add(0xa, "alpha", 1, budget);
  store.add(0xa, "bravo", 1, budget);
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.find(0xa)->short_name, "bravo");
  EXPECT_EQ(store.dropped(), 0u);
  EXPECT_EQ(budget.used_bytes(), 10u + kKernelNameEntryBytes);
}

TEST(KernelNameStore, SharedBudgetBoundsAllProcessesTogether) {
  constexpr std::size_t kName = 2 * 50 + kKernelNameEntryBytes;
  KernelNameBudget budget(10 * kName); // room for 10 names
  KernelNameStore first, second;
  for (int i = 0; i < 8; ++i)
    first.add(0x100 + i, name_of(i, 50), 1000, budget);
  for (int i = 0; i < 8; ++i)
    second.add(0x100 + i, name_of(i, 50), 1000, budget);
  EXPECT_EQ(first.size(), 8u);
  EXPECT_EQ(second.size(), 2u);
  EXPECT_EQ(second.dropped(), 6u);
  EXPECT_EQ(budget.used_bytes(), 10 * kName);

  // A process that goes gives its share back to the others.
  first.clear(budget);
  EXPECT_EQ(first.size(), 0u);
  EXPECT_EQ(first.bytes(), 0u);
  EXPECT_EQ(budget.used_bytes(), 2 * kName);
  second.add(0x200, name_of(99, 50), 1000, budget);
  EXPECT_NE(second.find(0x200), nullptr);
  second.clear(budget);
  EXPECT_EQ(budget.used_bytes(), 0u);
}

TEST(KernelNameStore, LongNamesAreCutToTheirBounds) {
  KernelNameBudget budget(kPlenty);
  KernelNameStore store;
  const auto plain = name_of(1, 3000); // Triton-style: not mangled, label = full name
  store.add(0xa, plain, 10, budget);
  const auto *name = store.find(0xa);
  ASSERT_NE(name, nullptr);
  EXPECT_EQ(name->short_name.size(), kMaxKernelLabelBytes);
  EXPECT_TRUE(name->short_name.ends_with("..."));
  EXPECT_TRUE(name->short_name.starts_with("k1_nnn"));
  EXPECT_EQ(name->full_name, plain); // 3000 bytes fit the full-name bound
  EXPECT_EQ(store.bytes(), kMaxKernelLabelBytes + plain.size() + kKernelNameEntryBytes);

  // Demangling can make a name longer than what the probe copied: the full name is cut too.
  // 300 back-references to std::allocator<int>: 925 mangled bytes, 6388 demangled.
  std::string mangled = "_Z1fISt6vectorIiSaIiEE";
  for (int i = 0; i < 300; ++i)
    mangled += "S1_";
  mangled += "EvT_";
  ASSERT_GT(demangle(mangled).size(), kMaxKernelFullNameBytes);
  store.add(0xb, mangled, 10, budget);
  ASSERT_NE(store.find(0xb), nullptr);
  EXPECT_EQ(store.find(0xb)->full_name.size(), kMaxKernelFullNameBytes);
  EXPECT_TRUE(store.find(0xb)->full_name.starts_with("void f<std::vector<int"));
  EXPECT_TRUE(store.find(0xb)->full_name.ends_with("..."));
  EXPECT_EQ(store.find(0xb)->short_name, "f");
}

TEST(KernelNameStore, LinksAreBoundedChargedAndCountedAsDropped) {
  KernelNameBudget budget(kPlenty);
  KernelNameStore store;
  for (std::uint64_t f = 1; f <= 5; ++f)
    store.link(f, 0xc0 + f, 3, budget);
  EXPECT_EQ(store.links(), 3u);
  EXPECT_EQ(store.dropped(), 2u);
  store.link(1, 0xcc, 3, budget); // a known function is relinked, not dropped
  EXPECT_EQ(store.kernel_of(1), 0xccu);
  EXPECT_EQ(store.dropped(), 2u);
  EXPECT_EQ(budget.used_bytes(), 3 * kKernelLinkEntryBytes);

  // Short names and links cannot get around the budget: each costs its entry too.
  KernelNameBudget small(kKernelLinkEntryBytes + kKernelNameEntryBytes + 2);
  KernelNameStore tiny;
  tiny.link(1, 2, 100, small);
  tiny.add(2, "k", 100, small);
  tiny.add(3, "j", 100, small);
  tiny.link(4, 3, 100, small);
  EXPECT_EQ(tiny.size(), 1u);
  EXPECT_EQ(tiny.links(), 1u);
  EXPECT_EQ(tiny.dropped(), 2u);
  tiny.clear(small);
  EXPECT_EQ(small.used_bytes(), 0u);
}

TEST(BoundedName, CutsOnlyLongNamesAndNeverInsideAUtf8Sequence) {
  EXPECT_EQ(bounded_name("short", 8), "short");
  EXPECT_EQ(bounded_name("exactly8", 8), "exactly8");
  EXPECT_EQ(bounded_name("ninechars", 8), "ninec...");
  // "é" is two bytes (C3 A9): cutting after 5 bytes would split it, so the cut moves back.
  EXPECT_EQ(bounded_name("abcd\xC3\xA9xyz", 8), "abcd...");
  EXPECT_EQ(bounded_name("abcdef", 2), "..");
}

} // namespace
} // namespace neutracer
