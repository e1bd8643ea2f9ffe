// SPDX-License-Identifier: Apache-2.0
#pragma once
// Typed reads of YAML scalars for the config file: each returns the problem ("expected true or
// false, got a list"), the caller adds file, line and key. Strict: quoted numbers and booleans
// are refused, so a quoting mistake is seen rather than silently taken.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "config/problem.h"

namespace neutracer {

// "FILE:LINE: " with the 1-based line, or "FILE: " when yaml-cpp has no position.
std::string location(const std::string &source, const YAML::Mark &mark);
// A node's kind for messages: "a list", "a mapping", "no value", or the scalar quoted.
std::string describe_type(const YAML::Node &node);

Problem read_string(const YAML::Node &node, std::string &out);
Problem read_duration(const YAML::Node &node, std::chrono::milliseconds &out);
Problem read_uint(const YAML::Node &node, std::uint64_t &out);
Problem read_double(const YAML::Node &node, double &out);
Problem read_bool(const YAML::Node &node, bool &out);

// `text` as a YAML scalar: plain where that reads back as the same string, else double-quoted.
std::string yaml_scalar(const std::string &text);

} // namespace neutracer
