// SPDX-License-Identifier: Apache-2.0
#include "http/basic_authenticator.h"

#include <algorithm>
#include <stdexcept>

#include "http/basic_auth.h"

namespace neutracer {
namespace {

// "$2y$10$" and the 22-character salt: a bcrypt setting that crypt() hashes with at full cost.
constexpr std::size_t kBcryptSettingLength = 29;

} // namespace

BasicAuthenticator::BasicAuthenticator(std::map<std::string, std::string> users,
                                       PasswordCheck check, std::size_t cache_capacity,
                                       PasswordCheckLimits limits)
    : users_(std::move(users)), check_(std::move(check)), verified_(cache_capacity),
      bcrypt_turns_(limits.turns), max_wait_(limits.max_wait) {
  if (users_.empty())
    throw std::invalid_argument("basic authentication needs at least one user");
  for (const auto &[user, hash] : users_) {
    if (auto problem = basic_auth_user_problem(user))
      throw std::invalid_argument(*problem);
    if (auto problem = bcrypt_hash_problem(hash))
      throw std::invalid_argument("the hash of user '" + user + "' " + *problem);
    // Two-digit costs compare correctly as text.
    if (decoy_setting_.empty() || hash.substr(4, 2) > decoy_setting_.substr(4, 2))
      decoy_setting_ = hash.substr(0, kBcryptSettingLength);
  }
}

AuthDecision BasicAuthenticator::decide(std::optional<std::string_view> authorization,
                                        const std::string &source) {
  if (!authorization)
    return AuthDecision::refused;
  const Sha256Digest digest = sha256(*authorization);
  if (verified_.contains(digest))
    return AuthDecision::allowed;
  const auto credentials = parse_basic_authorization(*authorization);
  // bcrypt would compare only the first 72 bytes: refused without spending a slot on it.
  if (!credentials || credentials->password.size() > kBcryptMaxPasswordBytes)
    return AuthDecision::refused;
  const auto turn = bcrypt_turns_.acquire(source, PasswordCheckTurns::Clock::now() + max_wait_);
  if (!turn)
    return AuthDecision::busy;
  // Another request with the same header may have been verified while this one waited.
  if (verified_.contains(digest))
    return AuthDecision::allowed;
  const auto user = users_.find(credentials->user);
  if (user == users_.end()) {
    check_(credentials->password, decoy_setting_);
    return AuthDecision::refused;
  }
  if (!check_(credentials->password, user->second))
    return AuthDecision::refused;
  verified_.insert(digest);
  return AuthDecision::allowed;
}

} // namespace neutracer
