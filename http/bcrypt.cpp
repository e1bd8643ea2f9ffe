// SPDX-License-Identifier: Apache-2.0
#include "http/bcrypt.h"

#include <crypt.h>

#include <memory>
#include <stdexcept>
#include <string_view>

namespace neutracer {
namespace {

// Compares without an early exit, so timing does not reveal how many leading characters match.
bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  return difference == 0;
}

// crypt_rn's scratch space is about 32 KiB: too large for a worker thread's stack.
std::string run_crypt(const std::string &password, const std::string &setting) {
  const auto scratch = std::make_unique<crypt_data>();
  const char *result =
      crypt_rn(password.c_str(), setting.c_str(), scratch.get(), sizeof(crypt_data));
  // crypt_rn returns NULL on failure; some algorithms write a "*" failure token instead.
  if (result == nullptr || result[0] == '*')
    return {};
  return result;
}

} // namespace

bool bcrypt_matches(const std::string &password, const std::string &hash) {
  if (password.find('\0') != std::string::npos || password.size() > kBcryptMaxPasswordBytes)
    return false;
  const std::string computed = run_crypt(password, hash);
  return !computed.empty() && constant_time_equal(computed, hash);
}

std::string bcrypt_hash(const std::string &password, int cost) {
  if (password.size() > kBcryptMaxPasswordBytes)
    throw std::runtime_error("bcrypt passwords are at most " +
                             std::to_string(kBcryptMaxPasswordBytes) + " bytes");
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  // A null random-bytes argument makes libxcrypt read the salt from the kernel (getrandom).
  if (crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), nullptr, 0, setting,
                       sizeof setting) == nullptr)
    throw std::runtime_error("cannot make a bcrypt salt with cost " + std::to_string(cost));
  std::string hash = run_crypt(password, setting);
  if (hash.empty())
    throw std::runtime_error("bcrypt hashing failed");
  return hash;
}

} // namespace neutracer
