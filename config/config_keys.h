// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one table of configuration keys. Each row names a key once (dotted, as users write it and
// as errors name it) and carries everything about it: how it is read from YAML or a flag, its
// check, how its value is written, its help text. The YAML parser, validate_config, the command
// line, the shipped config/neutracerd.yaml and docs/configuration.md all come from this table
// (tests/unit/config/config_reference_test.cpp keeps the two files equal to what it renders).
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/value_checks.h"

namespace YAML {
class Node;
}

namespace neutracer {

// The command-line flag that sets a key, where there is one.
struct KeyFlag {
  std::string_view name;        // "--scan-interval"
  std::string_view alias;       // the Prometheus exporters' spelling, or empty
  std::string_view placeholder; // "DURATION", for --help
  std::string_view usage;       // one line for --help (the default is appended)
};

struct ConfigKey {
  std::string_view name; // "cuda.launch_max_rate"
  // What the key does and its range, for the config file's comments and the docs. Paragraphs
  // are wrapped; a line that starts with two spaces is kept as written (lists, examples).
  std::string_view help;
  std::optional<KeyFlag> flag;
  // False for a list or mapping: messages then name the key, not its whole value.
  bool scalar = true;

  // Reads a YAML value into `config`: type, syntax and the value's check; the problem is
  // complete ("invalid value 0: must be between 1 and 10000"), the caller adds file and key.
  std::function<Problem(const YAML::Node &, Config &)> read_yaml;
  // Reads a flag's text into `config`: syntax only (the check follows, as for every key).
  std::function<Problem(const std::string &, Config &)> read_text;
  // Checks the key's value in a whole configuration (validate_config).
  std::function<Problem(const Config &)> check;
  // The value as a user writes it ("2s", "0.75", "exact"), for messages and the docs.
  std::function<std::string(const Config &)> show;
  // The value as a YAML literal (strings quoted where YAML needs it, "[]" for an empty list).
  std::function<std::string(const Config &)> yaml;
};

// A section of the file (a prefix of keys), with the comment that introduces it.
struct ConfigSection {
  std::string_view name; // "detectors.leak"
  std::string_view help; // may be empty
};

// Every key, in the order of the shipped file.
const std::vector<ConfigKey> &config_keys();
// Every section that has keys, in the same order.
const std::vector<ConfigSection> &config_sections();

// The key named `name` (dotted), or nullptr.
const ConfigKey *find_config_key(std::string_view name);

// Why a key that is not in the table is refused by name rather than as unknown (TLS settings
// that other exporters take), or nullopt.
Problem refused_config_key(std::string_view name);

} // namespace neutracer
