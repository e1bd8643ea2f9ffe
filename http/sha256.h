// SPDX-License-Identifier: Apache-2.0
#pragma once
// SHA-256 through OpenSSL's libcrypto.
#include <array>
#include <cstdint>
#include <string_view>

namespace neutracer {

using Sha256Digest = std::array<std::uint8_t, 32>;

Sha256Digest sha256(std::string_view data);

} // namespace neutracer
