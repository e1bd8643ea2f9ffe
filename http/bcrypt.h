// SPDX-License-Identifier: Apache-2.0
#pragma once
// bcrypt through libxcrypt (Debian's libcrypt1), which implements $2a$, $2b$ and $2y$.
#include <cstddef>
#include <string>

namespace neutracer {

// bcrypt reads only the first 72 bytes of a password: any two passwords equal that far would
// verify alike, so longer ones are refused instead of silently truncated.
inline constexpr std::size_t kBcryptMaxPasswordBytes = 72;

// Whether `password` hashes to `hash` (a full bcrypt hash). Takes the hash's cost in time
// (cost 10: about 70 ms). False for unusable hashes, passwords containing NUL and passwords
// longer than kBcryptMaxPasswordBytes (without hashing them).
bool bcrypt_matches(const std::string &password, const std::string &hash);

// A bcrypt hash of `password` with a fresh random salt; cost 4..31. Throws std::runtime_error
// when libxcrypt refuses (bad cost, no randomness) or the password is longer than
// kBcryptMaxPasswordBytes.
std::string bcrypt_hash(const std::string &password, int cost);

} // namespace neutracer
