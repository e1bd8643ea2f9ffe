// SPDX-License-Identifier: Apache-2.0
#include "http/credential_cache.h"

#include <algorithm>

namespace neutracer {

CredentialCache::CredentialCache(std::size_t capacity)
    : capacity_(std::max<std::size_t>(capacity, 1)) {
  most_recent_first_.reserve(capacity_);
}

bool CredentialCache::contains(const Sha256Digest &digest) {
  std::lock_guard lock(mutex_);
  const auto found = std::find(most_recent_first_.begin(), most_recent_first_.end(), digest);
  if (found == most_recent_first_.end())
    return false;
  std::rotate(most_recent_first_.begin(), found, found + 1);
  return true;
}

void CredentialCache::insert(const Sha256Digest &digest) {
  std::lock_guard lock(mutex_);
  const auto found = std::find(most_recent_first_.begin(), most_recent_first_.end(), digest);
  if (found != most_recent_first_.end()) {
    std::rotate(most_recent_first_.begin(), found, found + 1);
    return;
  }
  if (most_recent_first_.size() == capacity_)
    most_recent_first_.pop_back();
  most_recent_first_.insert(most_recent_first_.begin(), digest);
}

std::size_t CredentialCache::size() const {
  std::lock_guard lock(mutex_);
  return most_recent_first_.size();
}

} // namespace neutracer
