// SPDX-License-Identifier: Apache-2.0
#pragma once
// Command-line options and how they combine with the config file into the effective Config.
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"

namespace neutracer {

// A config key set by a flag: its text, and the flag as the user spelled it (for messages).
struct FlagSetting {
  std::string value;
  std::string spelled;
};

// What the command line asked for; unset options leave the file's (or default) value alone.
struct CliOptions {
  std::optional<std::string> config_path;
  // Config key ("scan_interval") -> what its flag (--scan-interval) said; a repeated flag keeps
  // its last value. Which keys have flags is said by their rows in config_keys.h.
  std::map<std::string, FlagSetting, std::less<>> settings;
  bool check_config = false;
  bool version = false;
  bool help = false;

  // The text given for `key`, or nullopt.
  std::optional<std::string> setting(std::string_view key) const;
};

// Exactly one of `options` and `error` is set.
struct CliResult {
  std::optional<CliOptions> options;
  std::optional<std::string> error;
};

// Parses argv (argv[0] is the program name). Accepts "--flag value" and "--flag=value"; a
// repeated flag keeps its last value. The Prometheus exporters' spellings are aliases:
// --web.listen-address (--listen), --log.level (--log-level), --log.format (--log-format).
// Unknown flags, missing or empty values, positional arguments and values of the wrong syntax
// (a duration without unit) are errors; ranges are checked by load_effective_config. Never
// throws.
CliResult parse_cli(int argc, const char *const *argv);

// The --help text: each flag with its default (the config keys' flags from their rows).
std::string usage_text();

// Reads a whole file. Returns nullopt with an empty `error` when the file does not exist, and
// nullopt with a message when it exists but cannot be read. Must not throw.
using FileReader =
    std::function<std::optional<std::string>(const std::string &path, std::string &error)>;

// Builds the effective config: the file (an explicit --config that is missing or unreadable is
// an error; an absent kDefaultConfigPath means built-in defaults), then the flags on top, then
// validate_config, then check_proc_tree on proc_root (the one check that reads the file
// system). Flag problems name the flag ("--listen: ..."). Never throws.
ConfigResult load_effective_config(const CliOptions &cli, const FileReader &read_file);

// The real reader for load_effective_config (at most 1 MiB; a config file is never larger).
std::optional<std::string> read_text_file(const std::string &path, std::string &error);

} // namespace neutracer
