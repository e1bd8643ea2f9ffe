// SPDX-License-Identifier: Apache-2.0
#include "config/cli.h"

#include "config/proc_tree_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <exception>
#include <string_view>
#include <system_error>

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

enum class Flag {
  config,
  listen,
  scan_interval,
  log_level,
  log_format,
  proc_root,
  check_config,
  version,
  help
};

struct FlagSpec {
  std::string_view name;
  Flag flag;
  bool takes_value;
  std::string_view canonical = {}; // for an alias: the flag it stands for
};

constexpr FlagSpec kFlags[] = {
    {"--config", Flag::config, true},
    {"--listen", Flag::listen, true},
    {"--web.listen-address", Flag::listen, true, "--listen"},
    {"--scan-interval", Flag::scan_interval, true},
    {"--log-level", Flag::log_level, true},
    {"--log.level", Flag::log_level, true, "--log-level"},
    {"--log-format", Flag::log_format, true},
    {"--log.format", Flag::log_format, true, "--log-format"},
    {"--proc-root", Flag::proc_root, true},
    {"--check-config", Flag::check_config, false},
    {"--version", Flag::version, false},
    {"--help", Flag::help, false},
    {"-h", Flag::help, false},
};

const FlagSpec *find_flag(std::string_view name) {
  for (const FlagSpec &spec : kFlags)
    if (spec.name == name)
      return &spec;
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

} // namespace

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
      const FlagSpec *spec = find_flag(name);
      if (spec == nullptr)
        return cli_error("unknown option '" + std::string(name) + "'");

      if (!spec->takes_value) {
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
      if (spec->takes_value && value->empty())
        return cli_error("option '" + std::string(name) + "' requires a non-empty value");
      const std::string canonical(spec->canonical.empty() ? spec->name : spec->canonical);
      options.spelled_as[canonical] = std::string(name);

      switch (spec->flag) {
      case Flag::config:
        options.config_path = *value;
        break;
      case Flag::listen:
        options.listen = *value;
        break;
      case Flag::scan_interval: {
        std::optional<std::chrono::milliseconds> interval = parse_duration(*value);
        if (!interval)
          return cli_error("option '--scan-interval': invalid duration '" + *value +
                           "': expected a positive number with unit ms, s, m or h (e.g. 500ms, "
                           "2s, 1m)");
        options.scan_interval = *interval;
        break;
      }
      case Flag::log_level:
        options.log_level = *value;
        break;
      case Flag::log_format:
        options.log_format = *value;
        break;
      case Flag::proc_root:
        options.proc_root = *value;
        break;
      case Flag::check_config:
        options.check_config = true;
        break;
      case Flag::version:
        options.version = true;
        break;
      case Flag::help:
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
  // Defaults are printed from Config so the help text cannot drift from the code.
  std::string text;
  text += "Usage: neutracerd [OPTIONS]\n";
  text += "Prometheus exporter for GPU processes on this host.\n\n";
  text += "Options (a flag overrides the same setting in the config file):\n";
  text += "  --config PATH             YAML config file (default: ";
  text += kDefaultConfigPath;
  text += ", skipped if absent)\n";
  text += "  --listen HOST:PORT        address for /metrics: IPv4, localhost, :PORT for every\n"
          "                            interface, [IPv6]:PORT where civetweb has IPv6\n"
          "                            (alias --web.listen-address; default: " +
          defaults.listen + ")\n";
  text += "  --scan-interval DURATION  how often to scan for processes, 100ms..1h (default: " +
          format_duration(defaults.scan_interval) + ")\n";
  text += "  --log-level LEVEL         trace, debug, info, warn, error, critical, off "
          "(alias --log.level; default: " +
          defaults.log_level + ")\n";
  text += "  --log-format FORMAT       logfmt or json lines on stderr; under systemd the\n"
          "                            journal gets each record with its priority\n"
          "                            (alias --log.format; default: " +
          defaults.log_format + ")\n";
  text += "  --proc-root PATH          procfs mount to read, for tests and containers "
          "(default: " +
          defaults.proc_root + ")\n";
  text += "  --check-config            validate the configuration and exit "
          "(default: off)\n";
  text += "  --version                 print the version and exit (default: off)\n";
  text += "  -h, --help                print this help and exit (default: off)\n";
  text += "\nFlags accept both --flag VALUE and --flag=VALUE. Durations use ms, s, m or h "
          "(e.g. 500ms, 2s, 1.5m).\n";
  return text;
}

ConfigResult load_effective_config(const CliOptions &cli, const FileReader &read_file) {
  // The flag as the user spelled it, so an error names what they typed.
  const auto spelled = [&cli](const std::string &canonical) {
    const auto found = cli.spelled_as.find(canonical);
    return found == cli.spelled_as.end() ? canonical : found->second;
  };
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

    // Check each flag on its own first so the message names the flag, not a config key.
    if (cli.listen) {
      if (auto problem = check_listen_address(*cli.listen))
        return fail(flag_problem(spelled("--listen"), *cli.listen, *problem));
      config.listen = *cli.listen;
    }
    if (cli.scan_interval) {
      if (auto problem = check_scan_interval(*cli.scan_interval))
        return fail(flag_problem("--scan-interval", format_duration(*cli.scan_interval), *problem));
      config.scan_interval = *cli.scan_interval;
    }
    if (cli.log_level) {
      if (auto problem = check_log_level(*cli.log_level))
        return fail(flag_problem(spelled("--log-level"), *cli.log_level, *problem));
      config.log_level = *cli.log_level;
    }
    if (cli.log_format) {
      if (auto problem = check_log_format(*cli.log_format))
        return fail(flag_problem(spelled("--log-format"), *cli.log_format, *problem));
      config.log_format = *cli.log_format;
    }
    if (cli.proc_root) {
      if (auto problem = check_proc_root(*cli.proc_root))
        return fail(flag_problem("--proc-root", *cli.proc_root, *problem));
      config.proc_root = *cli.proc_root;
    }

    if (std::optional<ConfigError> error = validate_config(config))
      return ConfigResult{std::nullopt, error};
    // Last, as it reads the file system: a proc_root that holds no processes would run a
    // daemon that traces nothing yet reports healthy.
    if (auto problem = check_proc_tree(config.proc_root))
      return fail(
          flag_problem(cli.proc_root ? "--proc-root" : "proc_root", config.proc_root, *problem));
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
