// SPDX-License-Identifier: Apache-2.0
#pragma once
// Checks a request's Authorization header against the configured users' bcrypt hashes, with a
// small cache of verified headers. Thread-safe: civetweb calls it from several workers.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "http/bcrypt.h"
#include "http/credential_cache.h"
#include "http/password_check_turns.h"

namespace neutracer {

enum class AuthDecision {
  allowed,
  refused, // no, malformed or wrong credentials
  busy,    // not cached, and no bcrypt slot came free in time (or too many wait): try later
};

// How uncached headers share the bcrypt slots. Each check costs a core for ~50-100 ms (cost
// 10), so one slot serves 10-20 checks a second; a waiter is one civetweb worker thread.
struct PasswordCheckLimits {
  FairTurnLimits turns;
  // How long a check waits for its turn before it is `busy` (429): well inside Prometheus's
  // default 10 s scrape timeout, and long enough for a source's 32 queued checks.
  std::chrono::milliseconds max_wait{5000};
};

class BasicAuthenticator {
public:
  // (password, hash) -> whether they match; bcrypt_matches outside tests.
  using PasswordCheck = std::function<bool(const std::string &, const std::string &)>;

  // `users` maps names to bcrypt hashes. Throws std::invalid_argument when it is empty or holds
  // a bad name or a hash that is not bcrypt (the config loader reports these first).
  explicit BasicAuthenticator(std::map<std::string, std::string> users,
                              PasswordCheck check = bcrypt_matches, std::size_t cache_capacity = 16,
                              PasswordCheckLimits limits = {});

  // Whether `authorization` (the header's value; nullopt when absent) names a user and the
  // right password. A cached header is allowed without bcrypt. An uncached one waits for a
  // bcrypt slot in a bounded queue where sources (`source`: the client's address) take turns,
  // so a password-guessing flood from one address delays a valid client from another by one
  // check per turn and cannot lock it out; it is `busy` when the queue is full or its wait
  // passes limits.max_wait. An unknown user costs as much as a wrong password, so timing does
  // not tell which of the two was wrong.
  AuthDecision decide(std::optional<std::string_view> authorization,
                      const std::string &source = "");

  // decide() == allowed; a busy check counts as not authorized.
  bool authorized(std::optional<std::string_view> authorization) {
    return decide(authorization) == AuthDecision::allowed;
  }

  const PasswordCheckTurns &turns() const { return bcrypt_turns_; }

private:
  std::map<std::string, std::string> users_;
  PasswordCheck check_;
  // A bcrypt salt with the highest configured cost: what unknown users are checked against.
  std::string decoy_setting_;
  CredentialCache verified_;
  // A flood of bad passwords costs the node at most limits.turns.slots cores.
  PasswordCheckTurns bcrypt_turns_;
  std::chrono::milliseconds max_wait_;
};

} // namespace neutracer
