// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a config check or read returns: the problem in words, without key or location, or
// nullopt when the value is acceptable. The caller adds file, line and key.
#include <optional>
#include <string>

namespace neutracer {

using Problem = std::optional<std::string>;

} // namespace neutracer
