// SPDX-License-Identifier: Apache-2.0
#include "config/cli.h"

#include "config/config_keys.h"
#include "config/proc_tree_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <exception>
#include <string_view>
#include <system_error>
#include <vector>

namespace neutracer {
namespace {

constexpr std::size_t kMaxConfigFileBytes = 1 << 20;

std::string too_large_text() {
  return "file is larger than " + std::to_string(kMaxConfigFileBytes) + " bytes (1 MiB)";
}

// What a path that is not a regular file is, for the error message.
std::string file_type_name(mode_t mode) {
  if (S_ISFIFO(mode))
    return "is a FIFO";
  if (S_ISCHR(mode))
    return "is a character device";
  if (S_ISBLK(mode))
    return "is a block device";
  if (S_ISSOCK(mode))
    return "is a socket";
  return "is a special file";
}

class FdCloser {
public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser &) = delete;
  FdCloser &operator=(const FdCloser &) = delete;

private:
  int fd_;
};

// The flags that are not config keys; those of keys come from their rows (config_keys.h).
enum class Command { config, check_config, version, help };

struct CommandFlag {
  std::string_view name;
  Command command;
  bool takes_value;
};

constexpr CommandFlag kCommandFlags[] = {
    {"--config", Command::config, true},    {"--check-config", Command::check_config, false},
    {"--version", Command::version, false}, {"--help", Command::help, false},
    {"-h", Command::help, false},
};

const CommandFlag *find_command_flag(std::string_view name) {
  for (const CommandFlag &flag : kCommandFlags)
    if (flag.name == name)
      return &flag;
  return nullptr;
}

// The key whose flag (or its alias) is `name`, or nullptr.
const ConfigKey *find_key_flag(std::string_view name) {
  for (const ConfigKey &row : config_keys())
    if (row.flag &&
        (row.flag->name == name || (!row.flag->alias.empty() && row.flag->alias == name)))
      return &row;
  return nullptr;
}

CliResult cli_error(std::string message) {
  return CliResult{std::nullopt, message + " (run with --help for usage)"};
}

// strerror-style text in lower case, to read naturally after "cannot read FILE: ".
std::string errno_text(int err) {
  std::string text = std::error_code(err, std::generic_category()).message();
  if (!text.empty())
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

ConfigResult fail(std::string message) { return ConfigResult{std::nullopt, ConfigError{message}}; }

std::string flag_problem(std::string_view flag, std::string_view value, std::string_view problem) {
  return std::string(flag) + ": invalid value '" + std::string(value) +
         "': " + std::string(problem);
}

// One option of --help: the flag, then its text from column 28, wrapped at 92 columns;
// `note` (alias and default) is kept on one line.
std::string help_line(const std::string &flag, const std::string &what,
                      const std::string &note = {}) {
  constexpr std::size_t kColumn = 28;
  constexpr std::size_t kWidth = 92;
  std::vector<std::string> words;
  std::size_t start = 0;
  while (start < what.size()) {
    const std::size_t end = std::min(what.find(' ', start), what.size());
    if (end > start)
      words.push_back(what.substr(start, end - start));
    start = end + 1;
  }
  if (!note.empty())
    words.push_back(note);
  std::string line = "  " + flag;
  line += std::string(line.size() < kColumn ? kColumn - line.size() : 1, ' ');
  std::string out;
  bool first_word = true;
  for (const std::string &word : words) {
    if (!first_word && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line = std::string(kColumn, ' ');
      first_word = true;
    }
    line += (first_word ? "" : " ") + word;
    first_word = false;
  }
  return out + line + "\n";
}

} // namespace

std::optional<std::string> CliOptions::setting(std::string_view key) const {
  const auto found = settings.find(key);
  if (found == settings.end())
    return std::nullopt;
  return found->second.value;
}

CliResult parse_cli(int argc, const char *const *argv) {
  try {
    CliOptions options;
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i] != nullptr ? argv[i] : "";
      if (arg.size() < 2 || arg[0] != '-')
        return cli_error("unexpected argument '" + std::string(arg) + "'");

      // Split "--flag=value"; short flags have no "=" form.
      std::string_view name = arg;
      std::optional<std::string> value;
      if (const std::size_t eq = arg.find('='); eq != std::string_view::npos && arg[1] == '-') {
        name = arg.substr(0, eq);
        value = std::string(arg.substr(eq + 1));
      }
      const CommandFlag *command = find_command_flag(name);
      const ConfigKey *key = command == nullptr ? find_key_flag(name) : nullptr;
      if (command == nullptr && key == nullptr)
        return cli_error("unknown option '" + std::string(name) + "'");

      const bool takes_value = key != nullptr || command->takes_value;
      if (!takes_value) {
        if (value)
          return cli_error("option '" + std::string(name) + "' does not take a value");
      } else if (!value) {
        // A following "--x" is taken as a forgotten value rather than as the value itself;
        // values starting with '-' can still be given as --flag=VALUE.
        if (i + 1 >= argc || argv[i + 1] == nullptr ||
            (argv[i + 1][0] == '-' && argv[i + 1][1] != '\0'))
          return cli_error("option '" + std::string(name) + "' requires a value");
        value = std::string(argv[++i]);
      }
      if (takes_value && value->empty())
        return cli_error("option '" + std::string(name) + "' requires a non-empty value");

      if (key != nullptr) {
        // The syntax now (a duration without unit), the range with the file's values later.
        Config scratch;
        if (auto problem = key->read_text(*value, scratch))
          return cli_error("option '" + std::string(name) + "': " + *problem);
        options.settings[std::string(key->name)] = FlagSetting{*value, std::string(name)};
        continue;
      }
      switch (command->command) {
      case Command::config:
        options.config_path = *value;
        break;
      case Command::check_config:
        options.check_config = true;
        break;
      case Command::version:
        options.version = true;
        break;
      case Command::help:
        options.help = true;
        break;
      }
    }
    return CliResult{options, std::nullopt};
  } catch (const std::exception &e) {
    return CliResult{std::nullopt, std::string("cannot parse the command line: ") + e.what()};
  }
}

std::string usage_text() {
  const Config defaults;
  std::string text;
  text += "Usage: neutracerd [OPTIONS]\n";
  text += "Prometheus exporter for GPU processes on this host.\n\n";
  text += "Options (a flag overrides the same setting in the config file):\n";
  text += help_line("--config PATH", std::string("YAML config file (default: ") +
                                         kDefaultConfigPath + ", skipped if absent)");
  // Defaults are printed from Config so the help text cannot drift from the code.
  for (const ConfigKey &row : config_keys()) {
    if (!row.flag)
      continue;
    const KeyFlag &flag = *row.flag;
    std::string note = "(";
    if (!flag.alias.empty())
      note += "alias " + std::string(flag.alias) + "; ";
    note += "default: " + row.show(defaults) + ")";
    text += help_line(std::string(flag.name) + " " + std::string(flag.placeholder),
                      std::string(flag.usage), note);
  }
  text += help_line("--check-config", "validate the configuration and exit (default: off)");
  text += help_line("--version", "print the version and exit (default: off)");
  text += help_line("-h, --help", "print this help and exit (default: off)");
  text += "\nFlags accept both --flag VALUE and --flag=VALUE. Durations use ms, s, m or h "
          "(e.g. 500ms, 2s, 1.5m).\nEvery setting: docs/configuration.md.\n";
  return text;
}

ConfigResult load_effective_config(const CliOptions &cli, const FileReader &read_file) {
  try {
    const bool explicit_path = cli.config_path.has_value();
    const std::string path = explicit_path ? *cli.config_path : std::string(kDefaultConfigPath);

    Config config;
    std::string read_error;
    std::optional<std::string> text;
    if (read_file)
      text = read_file(path, read_error);
    if (text) {
      ConfigResult parsed = parse_config_yaml(*text, path);
      if (!parsed.config)
        return parsed;
      config = *parsed.config;
    } else if (!read_error.empty()) {
      // A default file that exists but cannot be read is still an error: the admin meant it.
      return fail(path + ": cannot read config file: " + read_error);
    } else if (explicit_path) {
      return fail(path + ": config file not found");
    }

    // Each flag on its own first, so that the message names the flag rather than the key.
    for (const auto &[name, setting] : cli.settings) {
      const ConfigKey *key = find_config_key(name);
      if (key == nullptr)
        return fail("no configuration key " + name);
      auto problem = key->read_text(setting.value, config);
      if (!problem)
        problem = key->check(config);
      if (problem)
        return fail(flag_problem(setting.spelled, setting.value, *problem));
    }

    if (std::optional<ConfigError> error = validate_config(config))
      return ConfigResult{std::nullopt, error};
    // Last, as it reads the file system: a proc_root that holds no processes would run a
    // daemon that traces nothing yet reports healthy.
    if (auto problem = check_proc_tree(config.proc_root))
      return fail(flag_problem(cli.settings.contains("proc_root")
                                   ? cli.settings.find("proc_root")->second.spelled
                                   : std::string("proc_root"),
                               config.proc_root, *problem));
    return ConfigResult{config, std::nullopt};
  } catch (const std::exception &e) {
    return fail(std::string("cannot load the configuration: ") + e.what());
  }
}

std::optional<std::string> read_text_file(const std::string &path, std::string &error) {
  error.clear();
  // O_NONBLOCK: opening a FIFO (or a device) for reading would otherwise wait for a writer,
  // hanging --check-config and the start; fstat below then refuses anything but a file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    if (errno != ENOENT)
      error = errno_text(errno);
    return std::nullopt;
  }
  const FdCloser closer{fd};
  try {
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
      error = errno_text(errno);
      return std::nullopt;
    }
    // "--config /dev/null" is the usual way to say "no file, defaults only".
    if (S_ISCHR(info.st_mode) && info.st_rdev == makedev(1, 3))
      return std::string();
    if (!S_ISREG(info.st_mode)) {
      error = S_ISDIR(info.st_mode) ? "is a directory"
                                    : file_type_name(info.st_mode) + ", not a regular file";
      return std::nullopt;
    }
    if (static_cast<std::uintmax_t>(info.st_size) > kMaxConfigFileBytes) {
      error = too_large_text();
      return std::nullopt;
    }
    std::string content;
    char buffer[8192];
    while (true) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        error = errno_text(errno);
        return std::nullopt;
      }
      if (n == 0)
        return content;
      content.append(buffer, static_cast<std::size_t>(n));
      // Again while reading: a file may grow, and some report no size (procfs, sysfs).
      if (content.size() > kMaxConfigFileBytes) {
        error = too_large_text();
        return std::nullopt;
      }
    }
  } catch (const std::exception &e) {
    error = e.what();
    return std::nullopt;
  }
}

} // namespace neutracer
