// SPDX-License-Identifier: Apache-2.0
#pragma once
// Prometheus refuses a whole scrape when one label value is not valid UTF-8, and label values
// come from traced processes (comm, kernel names) as arbitrary bytes.
#include <cstddef>
#include <string>
#include <string_view>

namespace neutracer {

// Length of the valid UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF) that starts at text[at], or 0 when none does.
std::size_t utf8_sequence_length(std::string_view text, std::size_t at);

bool is_valid_utf8(std::string_view text);

// The text with each byte that starts no valid sequence replaced by U+FFFD.
std::string repair_utf8(std::string_view text);

// `text` itself when it is valid UTF-8 (no copy), else its repair, kept in `storage`.
std::string_view as_valid_utf8(std::string_view text, std::string &storage);

} // namespace neutracer
