// SPDX-License-Identifier: Apache-2.0
#include "http/sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace neutracer {

Sha256Digest sha256(std::string_view data) {
  Sha256Digest digest{};
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != digest.size())
    throw std::runtime_error("SHA-256 failed in libcrypto");
  return digest;
}

} // namespace neutracer
