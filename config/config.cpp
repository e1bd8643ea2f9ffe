// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include "config/config_keys.h"
#include "config/yaml_document.h"
#include "config/yaml_values.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace neutracer {
namespace {

using std::chrono::milliseconds;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

ConfigResult fail(std::string message) { return ConfigResult{std::nullopt, ConfigError{message}}; }

// Whether some key lies under `path` ("detectors" and "detectors.leak" are sections).
bool is_section(std::string_view path) {
  for (const ConfigKey &row : config_keys())
    if (row.name.size() > path.size() && row.name.starts_with(path) && row.name[path.size()] == '.')
      return true;
  return false;
}

// The names one level under `prefix` ("cuda." or ""), in table order, for "known keys: ...".
std::string known_keys(std::string_view prefix) {
  std::vector<std::string_view> names;
  for (const ConfigKey &row : config_keys()) {
    if (!row.name.starts_with(prefix))
      continue;
    const std::string_view rest = row.name.substr(prefix.size());
    const std::size_t dot = rest.find('.');
    const std::string_view name =
        dot == std::string_view::npos ? row.name : row.name.substr(0, prefix.size() + dot);
    if (std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(name);
  }
  std::string out;
  for (const std::string_view name : names)
    out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

// Applies one mapping's keys to `config`; returns the first problem as a full message.
std::optional<std::string> apply_mapping(const YAML::Node &map, const std::string &prefix,
                                         const std::string &source, Config &config) {
  std::set<std::string> seen;
  for (const auto &entry : map) {
    const YAML::Node &key = entry.first;
    const YAML::Node &value = entry.second;
    // Value marks of empty values point past the key, so errors cite the key's line.
    const std::string where = location(source, key.Mark());
    if (!key.IsScalar())
      return where + "keys must be plain strings, got " + describe_type(key) +
             (prefix.empty() ? "" : " in '" + prefix.substr(0, prefix.size() - 1) + "'");
    const std::string path = prefix + key.Scalar();
    // yaml-cpp keeps duplicate keys; refusing them avoids a silent "last one wins".
    if (!seen.insert(key.Scalar()).second)
      return where + "duplicate key '" + path + "'";
    if (auto refusal = refused_config_key(path))
      return where + path + ": " + *refusal;

    if (const ConfigKey *row = find_config_key(path)) {
      if (value.IsNull())
        return where + path + ": missing value";
      if (auto problem = row->read_yaml(value, config))
        return where + path + ": " + *problem;
      continue;
    }
    if (!is_section(path))
      return where + "unknown key '" + path + "' (known keys: " + known_keys(prefix) + ")";
    // An empty section ("cuda:" with every key commented out) means its defaults.
    if (value.IsNull())
      continue;
    if (!value.IsMap())
      return where + path + ": expected a mapping of keys to values, got " + describe_type(value);
    if (auto problem = apply_mapping(value, path + ".", source, config))
      return problem;
  }
  return std::nullopt;
}

std::string invalid_value(std::string_view key, std::string_view value, std::string_view problem) {
  return std::string(key) + ": invalid value '" + std::string(value) + "': " + std::string(problem);
}

} // namespace

std::optional<milliseconds> parse_duration(const std::string &text) {
  std::size_t i = 0;
  std::uint64_t whole = 0;
  std::size_t whole_digits = 0;
  for (; i < text.size() && is_digit(text[i]); ++i, ++whole_digits) {
    if (whole > (std::numeric_limits<std::uint64_t>::max() - 9) / 10)
      return std::nullopt;
    whole = whole * 10 + static_cast<std::uint64_t>(text[i] - '0');
  }
  if (whole_digits == 0)
    return std::nullopt;

  // Up to 9 fractional digits keeps fraction * unit well inside 64 bits.
  std::uint64_t fraction = 0;
  std::uint64_t fraction_scale = 1;
  if (i < text.size() && text[i] == '.') {
    ++i;
    std::size_t fraction_digits = 0;
    for (; i < text.size() && is_digit(text[i]); ++i, ++fraction_digits) {
      if (fraction_digits == 9)
        return std::nullopt;
      fraction = fraction * 10 + static_cast<std::uint64_t>(text[i] - '0');
      fraction_scale *= 10;
    }
    if (fraction_digits == 0)
      return std::nullopt;
  }

  const std::string_view unit = std::string_view(text).substr(i);
  std::uint64_t unit_ms = 0;
  if (unit == "ms")
    unit_ms = 1;
  else if (unit == "s")
    unit_ms = 1000;
  else if (unit == "m")
    unit_ms = 60 * 1000;
  else if (unit == "h")
    unit_ms = 3600 * 1000;
  else
    return std::nullopt;

  std::uint64_t total = 0;
  if (__builtin_mul_overflow(whole, unit_ms, &total))
    return std::nullopt;
  // Sub-millisecond remainders ("1.5ms") cannot be represented; refuse rather than round.
  const std::uint64_t fraction_ms = fraction * unit_ms;
  if (fraction_ms % fraction_scale != 0)
    return std::nullopt;
  if (__builtin_add_overflow(total, fraction_ms / fraction_scale, &total))
    return std::nullopt;
  if (total == 0 ||
      total > static_cast<std::uint64_t>(std::numeric_limits<milliseconds::rep>::max()))
    return std::nullopt;
  return milliseconds(static_cast<milliseconds::rep>(total));
}

std::string format_duration(milliseconds duration) {
  const auto count = duration.count();
  if (count > 0) {
    if (count % (3600 * 1000) == 0)
      return std::to_string(count / (3600 * 1000)) + "h";
    if (count % (60 * 1000) == 0)
      return std::to_string(count / (60 * 1000)) + "m";
    if (count % 1000 == 0)
      return std::to_string(count / 1000) + "s";
  }
  return std::to_string(count) + "ms";
}

ConfigResult parse_config_yaml(const std::string &text, const std::string &source_name) {
  try {
    const std::optional<YAML::Node> document = load_single_yaml_document(text);
    Config config;
    // No document at all: an empty or comment-only file means "all defaults".
    if (!document)
      return ConfigResult{config, std::nullopt};
    const YAML::Node &root = *document;
    if (root.IsNull())
      return ConfigResult{config, std::nullopt};
    if (!root.IsMap())
      return fail(location(source_name, root.Mark()) +
                  "top level must be a mapping of keys to values, got " + describe_type(root));
    if (auto problem = apply_mapping(root, "", source_name, config))
      return fail(*problem);
    return ConfigResult{config, std::nullopt};
  } catch (const YAML::ParserException &e) {
    return fail(location(source_name, e.mark) + "invalid YAML: " + e.msg);
  } catch (const YAML::Exception &e) {
    return fail(location(source_name, e.mark) + e.msg);
  } catch (const std::exception &e) {
    return fail(source_name + ": " + e.what());
  }
}

std::optional<ConfigError> validate_config(const Config &config) {
  try {
    for (const ConfigKey &row : config_keys())
      if (auto problem = row.check(config))
        return ConfigError{row.scalar ? invalid_value(row.name, row.show(config), *problem)
                                      : std::string(row.name) + ": " + *problem};
    // Rules between keys.
    const Config::Web &web = config.web;
    if (web.max_connections < web.max_concurrent_requests + kSpareConnections)
      return ConfigError{invalid_value(
          "web.max_connections", std::to_string(web.max_connections),
          "must be at least web.max_concurrent_requests + " + std::to_string(kSpareConnections) +
              " (" + std::to_string(web.max_concurrent_requests + kSpareConnections) +
              "): the spare connections answer refusals while the admitted requests run")};
    const Config::Stacks &stacks = config.stacks;
    if (stacks.max_sites < stacks.max_sites_per_process)
      return ConfigError{invalid_value("stacks.max_sites", std::to_string(stacks.max_sites),
                                       "must be at least stacks.max_sites_per_process (" +
                                           std::to_string(stacks.max_sites_per_process) + ")")};
    return std::nullopt;
  } catch (const std::exception &e) {
    return ConfigError{std::string("configuration check failed: ") + e.what()};
  }
}

std::vector<std::string> config_warnings(const Config &config) {
  std::vector<std::string> warnings;
  // The straggler rule needs its lateness spread over half the window: the window must hold
  // several scans' tallies (docs/nccl.md, "Stragglers").
  constexpr int kStragglerWindowScans = 4;
  const auto fewest = kStragglerWindowScans * config.scan_interval;
  if (config.nccl.enabled && config.nccl.straggler_window < fewest)
    warnings.push_back(
        "nccl.straggler_window (" + format_duration(config.nccl.straggler_window) +
        ") holds fewer than " + std::to_string(kStragglerWindowScans) +
        " scans of scan_interval (" + format_duration(config.scan_interval) +
        "): too few for the straggler rule, which may name a slow rank late or never; set it to " +
        format_duration(fewest) + " or more");
  return warnings;
}

} // namespace neutracer
