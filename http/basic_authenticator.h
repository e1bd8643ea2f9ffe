#pragma once
// Checks a request's Authorization header against the configured users' bcrypt hashes, with a
// small cache of verified headers. Thread-safe: civetweb calls it from several workers.
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "http/bcrypt.h"
#include "http/credential_cache.h"

namespace neutracer {

class BasicAuthenticator {
public:
  // (password, hash) -> whether they match; bcrypt_matches outside tests.
  using PasswordCheck = std::function<bool(const std::string &, const std::string &)>;

  // `users` maps names to bcrypt hashes. Throws std::invalid_argument when it is empty or holds
  // a bad name or a hash that is not bcrypt (the config loader reports these first).
  explicit BasicAuthenticator(std::map<std::string, std::string> users,
                              PasswordCheck check = bcrypt_matches,
                              std::size_t cache_capacity = 16);

  // Whether `authorization` (the header's value; nullopt when absent) names a user and the
  // right password. An unknown user costs as much as a wrong password, so timing does not tell
  // which of the two was wrong.
  bool authorized(std::optional<std::string_view> authorization);

private:
  std::map<std::string, std::string> users_;
  PasswordCheck check_;
  // A bcrypt salt with the highest configured cost: what unknown users are checked against.
  std::string decoy_setting_;
  CredentialCache verified_;
  // One bcrypt at a time: a flood of bad passwords then costs the node at most one core.
  std::mutex bcrypt_mutex_;
};

} // namespace neutracer
