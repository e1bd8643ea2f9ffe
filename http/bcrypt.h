#pragma once
// bcrypt through libxcrypt (Debian's libcrypt1), which implements $2a$, $2b$ and $2y$.
#include <string>

namespace neutracer {

// Whether `password` hashes to `hash` (a full bcrypt hash). Takes the hash's cost in time
// (cost 10: about 70 ms). False for unusable hashes and passwords containing NUL.
bool bcrypt_matches(const std::string &password, const std::string &hash);

// A bcrypt hash of `password` with a fresh random salt; cost 4..31. Throws std::runtime_error
// when libxcrypt refuses (bad cost, no randomness).
std::string bcrypt_hash(const std::string &password, int cost);

} // namespace neutracer
