// SPDX-License-Identifier: Apache-2.0
#pragma once
// Standard base64 (RFC 4648 section 4) decoding, as used by HTTP basic authentication.
#include <optional>
#include <string>
#include <string_view>

namespace neutracer {

// Decodes canonical padded base64 ("dXNlcjpwdw=="). Returns nullopt for anything else: a
// length that is not a multiple of 4, characters outside the alphabet, misplaced padding, or
// non-zero bits left over in the last group (so each value has exactly one encoding).
std::optional<std::string> decode_base64(std::string_view text);

} // namespace neutracer
