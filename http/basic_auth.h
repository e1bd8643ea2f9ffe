// SPDX-License-Identifier: Apache-2.0
#pragma once
// HTTP basic authentication (RFC 7617): parsing the Authorization header and checking that
// configured password hashes are bcrypt. Pure functions, safe on any input (fuzzed).
#include <optional>
#include <string>
#include <string_view>

namespace neutracer {

// The value of WWW-Authenticate sent with every 401.
inline constexpr const char *kBasicAuthChallenge = "Basic realm=\"neutracerd\"";

struct BasicCredentials {
  std::string user;
  std::string password;

  bool operator==(const BasicCredentials &) const = default;
};

// Parses an Authorization header value such as "Basic dXNlcjpwYXNz": the scheme
// (case-insensitive), one or more spaces, canonical base64 of "user:password". The user ends
// at the first ':'. Returns nullopt for any other scheme, bad base64, a missing ':', or
// control characters (NUL included) in the user or password.
std::optional<BasicCredentials> parse_basic_authorization(std::string_view header_value);

// Why `hash` is not a usable bcrypt hash ("$2y$10$" + 53 characters, as written by
// `htpasswd -nBC 10 USER`; $2a$ and $2b$ are accepted too), or nullopt when it is. The message
// never repeats the value: a plaintext password put there by mistake must not reach the logs.
std::optional<std::string> bcrypt_hash_problem(std::string_view hash);

// Why `user` cannot be a basic-auth user name (empty, contains ':' or control characters), or
// nullopt.
std::optional<std::string> basic_auth_user_problem(std::string_view user);

} // namespace neutracer
