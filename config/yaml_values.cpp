// SPDX-License-Identifier: Apache-2.0
#include "config/yaml_values.h"

#include "common/text.h"
#include "config/config.h" // parse_duration

#include <exception>
#include <limits>

namespace neutracer {

using std::chrono::milliseconds;

// "FILE:LINE: " with the 1-based line, or "FILE: " when yaml-cpp has no position.
std::string location(const std::string &source, const YAML::Mark &mark) {
  if (mark.is_null() || mark.line < 0)
    return source + ": ";
  return source + ":" + std::to_string(mark.line + 1) + ": ";
}

std::string describe_type(const YAML::Node &node) {
  switch (node.Type()) {
  case YAML::NodeType::Null:
    return "no value";
  case YAML::NodeType::Sequence:
    return "a list";
  case YAML::NodeType::Map:
    return "a mapping";
  case YAML::NodeType::Scalar:
    return "'" + node.Scalar() + "'";
  default:
    return "an undefined node";
  }
}

Problem read_string(const YAML::Node &node, std::string &out) {
  if (!node.IsScalar())
    return "expected a string, got " + describe_type(node);
  out = node.Scalar();
  return std::nullopt;
}

Problem read_duration(const YAML::Node &node, milliseconds &out) {
  if (!node.IsScalar())
    return "expected a duration such as 500ms, 2s, 1m or 1h, got " + describe_type(node);
  std::optional<milliseconds> parsed = parse_duration(node.Scalar());
  if (!parsed)
    return "invalid duration '" + node.Scalar() +
           "': expected a positive number with unit ms, s, m or h (e.g. 500ms, 2s, 1.5m)";
  out = *parsed;
  return std::nullopt;
}

// Reads a plain decimal integer. Quoted scalars are refused: the file is typed, and silently
// accepting "50" would hide a quoting mistake elsewhere.
Problem read_uint(const YAML::Node &node, std::uint64_t &out) {
  if (!node.IsScalar())
    return "expected a non-negative integer, got " + describe_type(node);
  const std::string &text = node.Scalar();
  if (node.Tag() == "!")
    return "expected a non-negative integer, got the quoted string '" + text + "'";
  if (!text.empty() && text[0] == '-' && all_digits(std::string_view(text).substr(1)))
    return "must not be negative, got " + text;
  if (!all_digits(text))
    return "expected a non-negative decimal integer, got '" + text + "'";
  std::uint64_t value = 0;
  for (char c : text) {
    if (value > (std::numeric_limits<std::uint64_t>::max() - 9) / 10)
      return "value " + text + " is too large";
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  out = value;
  return std::nullopt;
}

Problem read_double(const YAML::Node &node, double &out) {
  if (!node.IsScalar() || node.Tag() == "!")
    return "expected a number, got " + describe_type(node);
  const std::string &text = node.Scalar();
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    return "expected a number, got '" + text + "'";
  out = value;
  return std::nullopt;
}

Problem read_bool(const YAML::Node &node, bool &out) {
  if (node.IsScalar() && node.Tag() != "!") {
    if (node.Scalar() == "true") {
      out = true;
      return std::nullopt;
    }
    if (node.Scalar() == "false") {
      out = false;
      return std::nullopt;
    }
  }
  return "expected true or false, got " + describe_type(node);
}

std::string yaml_scalar(const std::string &text) {
  static constexpr std::string_view kIndicators = "-?:,[]{}#&*!|>'\"%@`";
  const bool plain = !text.empty() && kIndicators.find(text[0]) == std::string_view::npos &&
                     text.find_first_of(":#\\\t\n") == std::string::npos && text.front() != ' ' &&
                     text.back() != ' ' && !all_digits(text) && text != "true" && text != "false" &&
                     text != "null" && text != "~";
  if (plain)
    return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '\n') {
      quoted += "\\n";
      continue;
    }
    if (c == '"' || c == '\\')
      quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

} // namespace neutracer
