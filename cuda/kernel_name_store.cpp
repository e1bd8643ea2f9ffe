// SPDX-License-Identifier: Apache-2.0
#include "cuda/kernel_name_store.h"

#include <algorithm>
#include <utility>

#include "cuda/kernel_names.h"

namespace neutracer {
namespace {

bool is_utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

} // namespace

bool KernelNameBudget::take(std::size_t bytes) {
  if (bytes > max_bytes_ - used_bytes_)
    return false;
  used_bytes_ += bytes;
  return true;
}

void KernelNameBudget::give_back(std::size_t bytes) { used_bytes_ -= std::min(used_bytes_, bytes); }

std::string bounded_name(std::string text, std::size_t max_bytes) {
  if (text.size() <= max_bytes)
    return text;
  constexpr std::string_view kCut = "...";
  std::size_t end = max_bytes > kCut.size() ? max_bytes - kCut.size() : 0;
  while (end > 0 && is_utf8_continuation(text[end]))
    --end;
  text.resize(end);
  text.append(kCut.substr(0, std::min(kCut.size(), max_bytes)));
  text.shrink_to_fit(); // the cut-off tail is what the bound is for
  return text;
}

void KernelNameStore::add(std::uint64_t handle, std::string_view mangled, std::size_t max_names,
                          KernelNameBudget &budget) {
  if (const auto old = names_.find(handle); old != names_.end()) {
    const std::size_t old_bytes =
        old->second.short_name.size() + old->second.full_name.size() + kKernelNameEntryBytes;
    budget.give_back(old_bytes);
    bytes_ -= old_bytes;
    names_.erase(old);
  }
  if (names_.size() >= max_names) {
    ++dropped_;
    return;
  }
  auto full = bounded_name(demangle(mangled), kMaxKernelFullNameBytes);
  auto label = short_kernel_name(mangled);
  label = bounded_name(label.empty() ? full : std::move(label), kMaxKernelLabelBytes);
  const std::size_t cost = label.size() + full.size() + kKernelNameEntryBytes;
  if (!budget.take(cost)) {
    ++dropped_;
    return;
  }
  bytes_ += cost;
  names_.emplace(handle, KernelName{std::move(label), std::move(full)});
}

void KernelNameStore::link(std::uint64_t function, std::uint64_t kernel, std::size_t max_links,
                           KernelNameBudget &budget) {
  if (const auto it = function_to_kernel_.find(function); it != function_to_kernel_.end()) {
    it->second = kernel;
    return;
  }
  if (function_to_kernel_.size() >= max_links || !budget.take(kKernelLinkEntryBytes)) {
    ++dropped_;
    return;
  }
  bytes_ += kKernelLinkEntryBytes;
  function_to_kernel_.emplace(function, kernel);
}

const KernelName *KernelNameStore::find(std::uint64_t handle) const {
  if (const auto it = names_.find(handle); it != names_.end())
    return &it->second;
  if (const auto link = function_to_kernel_.find(handle); link != function_to_kernel_.end())
    if (const auto it = names_.find(link->second); it != names_.end())
      return &it->second;
  return nullptr;
}

std::uint64_t KernelNameStore::kernel_of(std::uint64_t function) const {
  const auto it = function_to_kernel_.find(function);
  return it == function_to_kernel_.end() ? 0 : it->second;
}

void KernelNameStore::clear(KernelNameBudget &budget) {
  budget.give_back(bytes_);
  bytes_ = 0;
  // Swapped out, not cleared: clear() keeps an unordered_map's bucket array.
  std::unordered_map<std::uint64_t, KernelName>().swap(names_);
  std::unordered_map<std::uint64_t, std::uint64_t>().swap(function_to_kernel_);
}

} // namespace neutracer
