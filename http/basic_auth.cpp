// SPDX-License-Identifier: Apache-2.0
#include "http/basic_auth.h"

#include <array>

#include "http/base64.h"

namespace neutracer {
namespace {

bool is_control(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

bool has_control(std::string_view text) {
  for (char c : text)
    if (is_control(c))
      return true;
  return false;
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool is_bcrypt_base64(char c) {
  return c == '.' || c == '/' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9');
}

// "$2y$10$" + 22 characters of salt + 31 of hash.
constexpr std::size_t kBcryptLength = 60;
constexpr std::size_t kBcryptPrefixLength = 7;

// Names for hashes people commonly paste from other tools.
std::optional<std::string> other_scheme(std::string_view hash) {
  struct Known {
    std::string_view prefix;
    std::string_view name;
  };
  static constexpr std::array<Known, 7> kKnown = {
      {{"$2x$", "bcrypt $2x$ (a workaround for an old bug)"},
       {"$1$", "MD5-crypt"},
       {"$apr1$", "Apache MD5"},
       {"$5$", "SHA-256-crypt"},
       {"$6$", "SHA-512-crypt"},
       {"$y$", "yescrypt"},
       {"{SHA}", "SHA-1"}}};
  for (const Known &known : kKnown)
    if (hash.starts_with(known.prefix))
      return "has the " + std::string(known.name) + " format";
  return std::nullopt;
}

} // namespace

std::optional<BasicCredentials> parse_basic_authorization(std::string_view header_value) {
  while (!header_value.empty() && is_blank(header_value.front()))
    header_value.remove_prefix(1);
  while (!header_value.empty() && is_blank(header_value.back()))
    header_value.remove_suffix(1);
  constexpr std::string_view kScheme = "basic";
  if (header_value.size() <= kScheme.size() || !is_blank(header_value[kScheme.size()]))
    return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i)
    if (lower(header_value[i]) != kScheme[i])
      return std::nullopt;
  std::string_view encoded = header_value.substr(kScheme.size());
  while (!encoded.empty() && is_blank(encoded.front()))
    encoded.remove_prefix(1);
  const auto decoded = decode_base64(encoded);
  if (!decoded)
    return std::nullopt;
  const auto colon = decoded->find(':');
  if (colon == std::string::npos)
    return std::nullopt;
  BasicCredentials credentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
  // crypt() stops at NUL, so "secret\0junk" would otherwise verify as "secret".
  if (has_control(credentials.user) || has_control(credentials.password))
    return std::nullopt;
  return credentials;
}

std::optional<std::string> bcrypt_hash_problem(std::string_view hash) {
  static constexpr const char *kHint =
      "; expected a bcrypt hash such as the output of htpasswd -nBC 10 \"\" | tr -d ':\\n'";
  if (auto scheme = other_scheme(hash))
    return *scheme + ", not bcrypt" + kHint;
  if (!hash.starts_with("$2a$") && !hash.starts_with("$2b$") && !hash.starts_with("$2y$"))
    return std::string("is not a bcrypt hash (it does not start with $2y$, $2b$ or $2a$)") + kHint;
  if (hash.size() != kBcryptLength)
    return "is not a bcrypt hash: it has " + std::to_string(hash.size()) + " characters, not " +
           std::to_string(kBcryptLength) + kHint;
  const char tens = hash[4];
  const char ones = hash[5];
  if (tens < '0' || tens > '9' || ones < '0' || ones > '9' || hash[6] != '$')
    return std::string("is not a bcrypt hash: the cost must be two digits followed by '$'") + kHint;
  const int cost = (tens - '0') * 10 + (ones - '0');
  if (cost < 4 || cost > 31)
    return "has bcrypt cost " + std::to_string(cost) + "; bcrypt costs range from 04 to 31";
  for (char c : hash.substr(kBcryptPrefixLength))
    if (!is_bcrypt_base64(c))
      return std::string(
                 "is not a bcrypt hash: salt and hash must use the characters ./A-Za-z0-9") +
             kHint;
  return std::nullopt;
}

std::optional<std::string> basic_auth_user_problem(std::string_view user) {
  if (user.empty())
    return "user names must not be empty";
  if (user.find(':') != std::string_view::npos)
    return "user names must not contain ':' (basic authentication splits user and password "
           "there)";
  if (has_control(user))
    return "user names must not contain control characters";
  return std::nullopt;
}

} // namespace neutracer
