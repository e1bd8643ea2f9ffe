// SPDX-License-Identifier: Apache-2.0
#pragma once
// Checks a request's Authorization header against the configured users' bcrypt hashes, with a
// small cache of verified headers. Thread-safe: civetweb calls it from several workers.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "http/bcrypt.h"
#include "http/concurrency_limiter.h"
#include "http/credential_cache.h"

namespace neutracer {

enum class AuthDecision {
  allowed,
  refused, // no, malformed or wrong credentials
  busy,    // not cached, and every bcrypt slot is verifying another header: try again later
};

class BasicAuthenticator {
public:
  // (password, hash) -> whether they match; bcrypt_matches outside tests.
  using PasswordCheck = std::function<bool(const std::string &, const std::string &)>;

  // `users` maps names to bcrypt hashes. Throws std::invalid_argument when it is empty or holds
  // a bad name or a hash that is not bcrypt (the config loader reports these first).
  // `bcrypt_slots`: bcrypt checks run at once (at least 1); each costs a core while it runs.
  explicit BasicAuthenticator(std::map<std::string, std::string> users,
                              PasswordCheck check = bcrypt_matches, std::size_t cache_capacity = 16,
                              std::uint32_t bcrypt_slots = 1);

  // Whether `authorization` (the header's value; nullopt when absent) names a user and the
  // right password. A cached header is allowed without bcrypt; an uncached one that finds every
  // bcrypt slot taken is `busy` at once, never queued, so a password-guessing flood neither
  // waits nor makes anyone else wait. An unknown user costs as much as a wrong password, so
  // timing does not tell which of the two was wrong.
  AuthDecision decide(std::optional<std::string_view> authorization);

  // decide() == allowed; a busy check counts as not authorized.
  bool authorized(std::optional<std::string_view> authorization) {
    return decide(authorization) == AuthDecision::allowed;
  }

private:
  std::map<std::string, std::string> users_;
  PasswordCheck check_;
  // A bcrypt salt with the highest configured cost: what unknown users are checked against.
  std::string decoy_setting_;
  CredentialCache verified_;
  // A flood of bad passwords costs the node at most this many cores.
  ConcurrencyLimiter bcrypt_slots_;
};

} // namespace neutracer
