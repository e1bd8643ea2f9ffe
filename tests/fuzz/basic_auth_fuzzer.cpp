// SPDX-License-Identifier: Apache-2.0
// Fuzzes HTTP basic authentication parsing: the Authorization header comes from any client that
// reaches the port, before it is authenticated. Checks the documented guarantees with an
// independent base64 encoder.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "http/base64.h"
#include "http/basic_auth.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

namespace {

std::string encode_base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t group = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size())
      group |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size())
      group |= static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(group >> 18) & 63];
    out += kAlphabet[(group >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(group >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[group & 63] : '=';
  }
  return out;
}

bool has_control_character(std::string_view text) {
  for (const char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return true;
  return false;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char *>(data), size);

  if (const auto decoded = neutracer::decode_base64(input))
    require(encode_base64(*decoded) == input, "base64 is canonical: one encoding per value");

  if (const auto credentials = neutracer::parse_basic_authorization(input)) {
    require(credentials->user.find(':') == std::string::npos, "the user ends at the first ':'");
    require(!has_control_character(credentials->user) &&
                !has_control_character(credentials->password),
            "no control characters in credentials");
    const auto again = neutracer::parse_basic_authorization(
        "Basic " + encode_base64(credentials->user + ":" + credentials->password));
    require(again == credentials, "credentials round-trip through their canonical header");
  }

  // A hash problem never repeats the value (it may be a password pasted by mistake). Its
  // fixed texts are printable ASCII with no space-free run of 16 characters, so neither a
  // byte outside that nor the salt and hash of a bcrypt-like value may appear in it.
  if (const auto problem = neutracer::bcrypt_hash_problem(input)) {
    for (const char c : *problem)
      require(c >= ' ' && c <= '~', "a hash problem is printable ASCII");
    const auto secret = input.size() > 7 ? input.substr(7) : std::string_view();
    if (secret.size() >= 16 && secret.find(' ') == std::string_view::npos)
      require(problem->find(secret) == std::string::npos, "a hash problem never repeats the value");
  }

  if (!neutracer::basic_auth_user_problem(input))
    require(!input.empty() && input.find(':') == std::string_view::npos &&
                !has_control_character(input),
            "an accepted user name is non-empty, without ':' or control characters");
  return 0;
}
