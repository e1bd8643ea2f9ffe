#include "http/basic_authenticator.h"

#include <stdexcept>

#include "http/basic_auth.h"

namespace neutracer {
namespace {

// "$2y$10$" and the 22-character salt: a bcrypt setting that crypt() hashes with at full cost.
constexpr std::size_t kBcryptSettingLength = 29;

} // namespace

BasicAuthenticator::BasicAuthenticator(std::map<std::string, std::string> users,
                                       PasswordCheck check, std::size_t cache_capacity)
    : users_(std::move(users)), check_(std::move(check)), verified_(cache_capacity) {
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

bool BasicAuthenticator::authorized(std::optional<std::string_view> authorization) {
  if (!authorization)
    return false;
  const Sha256Digest digest = sha256(*authorization);
  if (verified_.contains(digest))
    return true;
  const auto credentials = parse_basic_authorization(*authorization);
  if (!credentials)
    return false;
  std::lock_guard lock(bcrypt_mutex_);
  // Another worker may have verified the same header while this one waited.
  if (verified_.contains(digest))
    return true;
  const auto user = users_.find(credentials->user);
  if (user == users_.end()) {
    check_(credentials->password, decoy_setting_);
    return false;
  }
  if (!check_(credentials->password, user->second))
    return false;
  verified_.insert(digest);
  return true;
}

} // namespace neutracer
