// SPDX-License-Identifier: Apache-2.0
#pragma once
// Remembers recently verified Authorization headers so a scrape every 15 s does not pay
// bcrypt's ~100 ms each time. Holds SHA-256 digests only, never the headers or passwords.
#include <cstddef>
#include <mutex>
#include <vector>

#include "http/sha256.h"

namespace neutracer {

class CredentialCache {
public:
  // Keeps at most `capacity` digests (at least 1); the least recently used one goes first.
  explicit CredentialCache(std::size_t capacity);

  // Whether `digest` was stored and not yet evicted; a hit makes it the most recently used.
  bool contains(const Sha256Digest &digest);
  void insert(const Sha256Digest &digest);
  std::size_t size() const;

private:
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<Sha256Digest> most_recent_first_; // a handful of entries: a linear scan is enough
};

} // namespace neutracer
