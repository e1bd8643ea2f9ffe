// SPDX-License-Identifier: Apache-2.0
#include "config/cli.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <stdexcept>
#include <vector>

namespace neutracer {
namespace {

using namespace std::chrono_literals;

// A /proc tree that check_proc_tree accepts.
constexpr const char *kFixtureProc = NEUTRACER_FIXTURES_DIR "/proc/mixed";

// Substring assertion without gmock, so the file also builds against plain gtest.
::testing::AssertionResult contains(const char *haystack_expr, const char *,
                                    const std::string &haystack, const std::string &needle) {
  if (haystack.find(needle) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << haystack_expr << " is \"" << haystack
                                       << "\"\nwhich does not contain \"" << needle << "\"";
}
#define EXPECT_CONTAINS(haystack, needle) EXPECT_PRED_FORMAT2(contains, haystack, needle)

CliResult parse(std::vector<const char *> args) {
  args.insert(args.begin(), "neutracerd");
  return parse_cli(static_cast<int>(args.size()), args.data());
}

CliOptions parse_ok(std::vector<const char *> args) {
  CliResult result = parse(std::move(args));
  EXPECT_FALSE(result.error.has_value()) << *result.error;
  return result.options.value_or(CliOptions{});
}

std::string parse_error(std::vector<const char *> args) {
  CliResult result = parse(std::move(args));
  EXPECT_FALSE(result.options.has_value());
  return result.error.value_or("");
}

// An in-memory file system for load_effective_config: missing paths read as "absent",
// paths in `unreadable` fail with a message like a real permission problem.
struct FakeFiles {
  std::map<std::string, std::string> files;
  std::map<std::string, std::string> unreadable;
  std::vector<std::string> reads;

  FileReader reader() {
    return [this](const std::string &path, std::string &error) -> std::optional<std::string> {
      reads.push_back(path);
      error.clear();
      if (auto it = unreadable.find(path); it != unreadable.end()) {
        error = it->second;
        return std::nullopt;
      }
      if (auto it = files.find(path); it != files.end())
        return it->second;
      return std::nullopt;
    };
  }
};

// ---- parse_cli -----------------------------------------------------------------------------

TEST(ParseCli, NoArgumentsSetsNothing) {
  CliOptions options = parse_ok({});
  EXPECT_FALSE(options.config_path);
  EXPECT_TRUE(options.settings.empty());
  EXPECT_FALSE(options.check_config);
  EXPECT_FALSE(options.version);
  EXPECT_FALSE(options.help);
}

TEST(ParseCli, ValueFlagsWithSeparateValues) {
  CliOptions options =
      parse_ok({"--config", "/tmp/n.yaml", "--listen", "0.0.0.0:9400", "--scan-interval", "500ms",
                "--log-level", "debug", "--proc-root", "/host/proc"});
  EXPECT_EQ(options.config_path, "/tmp/n.yaml");
  EXPECT_EQ(options.setting("listen"), "0.0.0.0:9400");
  EXPECT_EQ(options.setting("scan_interval"), "500ms");
  EXPECT_EQ(options.setting("log_level"), "debug");
  EXPECT_EQ(options.setting("proc_root"), "/host/proc");
}

TEST(ParseCli, ValueFlagsWithEqualsForm) {
  CliOptions options =
      parse_ok({"--config=/tmp/n.yaml", "--listen=localhost:80", "--scan-interval=1.5s",
                "--log-level=warn", "--proc-root=/host/proc"});
  EXPECT_EQ(options.config_path, "/tmp/n.yaml");
  EXPECT_EQ(options.setting("listen"), "localhost:80");
  EXPECT_EQ(options.setting("scan_interval"), "1.5s");
  EXPECT_EQ(options.setting("log_level"), "warn");
  EXPECT_EQ(options.setting("proc_root"), "/host/proc");
}

TEST(ParseCli, EqualsFormKeepsLaterEqualsSigns) {
  EXPECT_EQ(parse_ok({"--config=/tmp/a=b.yaml"}).config_path, "/tmp/a=b.yaml");
}

TEST(ParseCli, RepeatedFlagKeepsLastValue) {
  EXPECT_EQ(parse_ok({"--log-level", "info", "--log-level=debug"}).setting("log_level"), "debug");
}

TEST(ParseCli, CheckConfig) {
  CliOptions options = parse_ok({"--check-config", "--config", "/tmp/n.yaml"});
  EXPECT_TRUE(options.check_config);
  EXPECT_FALSE(options.version);
  EXPECT_FALSE(options.help);
}

TEST(ParseCli, Version) {
  CliOptions options = parse_ok({"--version"});
  EXPECT_TRUE(options.version);
  EXPECT_FALSE(options.check_config);
}

TEST(ParseCli, HelpLongAndShort) {
  EXPECT_TRUE(parse_ok({"--help"}).help);
  EXPECT_TRUE(parse_ok({"-h"}).help);
}

TEST(ParseCli, UnknownFlagIsAnError) {
  EXPECT_CONTAINS(parse_error({"--listen-port", "80"}), "unknown option '--listen-port'");
  EXPECT_CONTAINS(parse_error({"-v"}), "unknown option '-v'");
  EXPECT_CONTAINS(parse_error({"--bogus=1"}), "unknown option '--bogus'");
}

TEST(ParseCli, MissingValueAtEndIsAnError) {
  EXPECT_CONTAINS(parse_error({"--config"}), "option '--config' requires a value");
}

TEST(ParseCli, FlagInsteadOfValueIsAnError) {
  EXPECT_CONTAINS(parse_error({"--listen", "--check-config"}),
                  "option '--listen' requires a value");
}

TEST(ParseCli, EmptyValueIsAnError) {
  EXPECT_CONTAINS(parse_error({"--proc-root="}), "requires a non-empty value");
  EXPECT_CONTAINS(parse_error({"--config", ""}), "requires a non-empty value");
}

TEST(ParseCli, ValueForBooleanFlagIsAnError) {
  EXPECT_CONTAINS(parse_error({"--version=yes"}), "option '--version' does not take a value");
}

TEST(ParseCli, StrayPositionalArgumentIsAnError) {
  EXPECT_CONTAINS(parse_error({"--check-config", "extra"}), "unexpected argument 'extra'");
  EXPECT_CONTAINS(parse_error({"-"}), "unexpected argument '-'");
}

TEST(ParseCli, BadDurationIsAnError) {
  EXPECT_CONTAINS(parse_error({"--scan-interval", "2"}), "invalid duration '2'");
  EXPECT_CONTAINS(parse_error({"--scan-interval=100us"}), "invalid duration '100us'");
  EXPECT_CONTAINS(parse_error({"--scan-interval=0s"}), "invalid duration '0s'");
}

TEST(ParseCli, ErrorsPointToHelp) { EXPECT_CONTAINS(parse_error({"--nope"}), "--help"); }

TEST(UsageText, ListsEveryFlagWithItsDefault) {
  const std::string usage = usage_text();
  EXPECT_CONTAINS(usage, "--config PATH");
  EXPECT_CONTAINS(usage, kDefaultConfigPath);
  EXPECT_CONTAINS(usage, "--listen HOST:PORT");
  EXPECT_CONTAINS(usage, "(alias --web.listen-address; default: 127.0.0.1:10492)");
  EXPECT_CONTAINS(usage, "--scan-interval DURATION");
  EXPECT_CONTAINS(usage, "(default: 2s)");
  EXPECT_CONTAINS(usage, "--log-level LEVEL");
  EXPECT_CONTAINS(usage, "(alias --log.level; default: info)");
  EXPECT_CONTAINS(usage, "--log-format FORMAT");
  EXPECT_CONTAINS(usage, "(alias --log.format; default: logfmt)");
  EXPECT_CONTAINS(usage, "--proc-root PATH");
  EXPECT_CONTAINS(usage, "(default: /proc)");
  EXPECT_CONTAINS(usage, "--check-config");
  EXPECT_CONTAINS(usage, "--version");
  EXPECT_CONTAINS(usage, "-h, --help");
}

// ---- load_effective_config -----------------------------------------------------------------

TEST(LoadEffectiveConfig, AbsentDefaultFileMeansDefaults) {
  FakeFiles fs;
  ConfigResult result = load_effective_config(CliOptions{}, fs.reader());
  ASSERT_FALSE(result.error) << result.error->what;
  EXPECT_EQ(*result.config, Config{});
  ASSERT_EQ(fs.reads.size(), 1u);
  EXPECT_EQ(fs.reads[0], kDefaultConfigPath);
}

TEST(LoadEffectiveConfig, DefaultFileIsRead) {
  FakeFiles fs;
  fs.files[kDefaultConfigPath] = "log_level: warn\n";
  ConfigResult result = load_effective_config(CliOptions{}, fs.reader());
  ASSERT_FALSE(result.error) << result.error->what;
  EXPECT_EQ(result.config->log_level, "warn");
}

TEST(LoadEffectiveConfig, UnreadableDefaultFileIsAnError) {
  FakeFiles fs;
  fs.unreadable[kDefaultConfigPath] = "permission denied";
  ConfigResult result = load_effective_config(CliOptions{}, fs.reader());
  ASSERT_TRUE(result.error);
  EXPECT_CONTAINS(result.error->what,
                  std::string(kDefaultConfigPath) + ": cannot read config file: permission denied");
}

TEST(LoadEffectiveConfig, ExplicitMissingFileIsAnError) {
  FakeFiles fs;
  CliOptions cli;
  cli.config_path = "/nonexistent/n.yaml";
  ConfigResult result = load_effective_config(cli, fs.reader());
  EXPECT_FALSE(result.config);
  ASSERT_TRUE(result.error);
  EXPECT_CONTAINS(result.error->what, "/nonexistent/n.yaml: config file not found");
}

TEST(LoadEffectiveConfig, ExplicitUnreadableFileIsAnError) {
  FakeFiles fs;
  fs.unreadable["/etc/n.yaml"] = "is a directory";
  CliOptions cli;
  cli.config_path = "/etc/n.yaml";
  ConfigResult result = load_effective_config(cli, fs.reader());
  ASSERT_TRUE(result.error);
  EXPECT_CONTAINS(result.error->what, "/etc/n.yaml: cannot read config file: is a directory");
}

TEST(LoadEffectiveConfig, ExplicitFileReplacesDefaultPath) {
  FakeFiles fs;
  fs.files[kDefaultConfigPath] = "log_level: warn\n";
  fs.files["/tmp/n.yaml"] = "log_level: error\n";
  CliOptions cli;
  cli.config_path = "/tmp/n.yaml";
  ConfigResult result = load_effective_config(cli, fs.reader());
  ASSERT_FALSE(result.error) << result.error->what;
  EXPECT_EQ(result.config->log_level, "error");
  EXPECT_EQ(fs.reads, std::vector<std::string>{"/tmp/n.yaml"});
}

TEST(LoadEffectiveConfig, FlagsOverrideTheFile) {
  FakeFiles fs;
  fs.files["/tmp/n.yaml"] = R"(
listen: "0.0.0.0:9000"
scan_interval: 5s
log_level: warn
proc_root: /proc
cuda:
  max_kernels_per_process: 20
)";
  CliResult cli = parse({"--config", "/tmp/n.yaml", "--listen=127.0.0.1:9100", "--scan-interval",
                         "250ms", "--log-level", "trace", "--proc-root", kFixtureProc});
  ASSERT_TRUE(cli.options);
  ConfigResult result = load_effective_config(*cli.options, fs.reader());
  ASSERT_FALSE(result.error) << result.error->what;
  EXPECT_EQ(result.config->listen, "127.0.0.1:9100");
  EXPECT_EQ(result.config->scan_interval, 250ms);
  EXPECT_EQ(result.config->log_level, "trace");
  EXPECT_EQ(result.config->proc_root, kFixtureProc);
  // Keys without a flag keep the file's value.
  EXPECT_EQ(result.config->cuda.max_kernels_per_process, 20u);
}

TEST(LoadEffectiveConfig, FileErrorsNameFileAndLine) {
  FakeFiles fs;
  fs.files["/tmp/n.yaml"] = "log_level: info\nlistn: 1.2.3.4:80\n";
  CliOptions cli;
  cli.config_path = "/tmp/n.yaml";
  ConfigResult result = load_effective_config(cli, fs.reader());
  ASSERT_TRUE(result.error);
  EXPECT_CONTAINS(result.error->what, "/tmp/n.yaml:2: unknown key 'listn'");
}

TEST(LoadEffectiveConfig, BadListenFlagNamesTheFlag) {
  FakeFiles fs;
  CliOptions cli;
  cli.settings["listen"] = {"::1:80", "--listen"};
  ConfigResult result = load_effective_config(cli, fs.reader());
  ASSERT_TRUE(result.error);
  EXPECT_CONTAINS(result.error->what, "--listen: invalid value '::1:80': an IPv6 address needs");
}

TEST(LoadEffectiveConfig, AnAliasFlagIsNamedAsTyped) {
  FakeFiles fs;
  const auto listen = load_effective_config(parse_ok({"--web.listen-address=1.2.3:80"}), fs.reader());
  ASSERT_TRUE(listen.error);
  EXPECT_CONTAINS(listen.error->what, "--web.listen-address: invalid value '1.2.3:80'");
  const auto level = load_effective_config(parse_ok({"--log.level", "loud"}), fs.reader());
  ASSERT_TRUE(level.error);
  EXPECT_CONTAINS(level.error->what, "--log.level: invalid value 'loud'");
  const auto format = load_effective_config(parse_ok({"--log-format", "xml"}), fs.reader());
  ASSERT_TRUE(format.error);
  EXPECT_CONTAINS(format.error->what, "--log-format: invalid value 'xml': must be logfmt or json");
}

TEST(LoadEffectiveConfig, PrometheusExporterFlagsSetTheSameSettings) {
  FakeFiles fs;
  const auto loaded = load_effective_config(
      parse_ok({"--web.listen-address=:9400", "--log.level=debug", "--log.format", "json"}),
      fs.reader());
  ASSERT_TRUE(loaded.config) << loaded.error->what;
  EXPECT_EQ(loaded.config->listen, ":9400");
  EXPECT_EQ(loaded.config->log_level, "debug");
  EXPECT_EQ(loaded.config->log_format, "json");
}

TEST(LoadEffectiveConfig, ListenFlagPortChecked) {
  FakeFiles fs;
  CliOptions cli;
  cli.settings["listen"] = {"127.0.0.1:70000", "--listen"};
  ConfigResult result = load_effective_config(cli, fs.reader());
  ASSERT_TRUE(result.error);
  EXPECT_CONTAINS(result.error->what, "--listen: invalid value '127.0.0.1:70000'");
}

TEST(LoadEffectiveConfig, OutOfRangeScanIntervalFlag) {
  FakeFiles fs;
  CliResult cli = parse({"--scan-interval", "10ms"});
  ASSERT_TRUE(cli.options);
  ConfigResult result = load_effective_config(*cli.options, fs.reader());
  ASSERT_TRUE(result.error);
  EXPECT_CONTAINS(result.error->what,
                  "--scan-interval: invalid value '10ms': must be between 100ms and 1h");
}

TEST(LoadEffectiveConfig, BadLogLevelFlag) {
  FakeFiles fs;
  CliOptions cli;
  cli.settings["log_level"] = {"verbose", "--log-level"};
  ConfigResult result = load_effective_config(cli, fs.reader());
  ASSERT_TRUE(result.error);
  EXPECT_CONTAINS(result.error->what, "--log-level: invalid value 'verbose': must be one of");
}

TEST(LoadEffectiveConfig, RelativeProcRootFlag) {
  FakeFiles fs;
  CliOptions cli;
  cli.settings["proc_root"] = {"host/proc", "--proc-root"};
  ConfigResult result = load_effective_config(cli, fs.reader());
  ASSERT_TRUE(result.error);
  EXPECT_CONTAINS(result.error->what, "--proc-root: invalid value 'host/proc'");
}

TEST(LoadEffectiveConfig, ProcRootFromTheFileMustBeAProcTree) {
  // It used to validate and run "healthy", tracing nothing (issue 20).
  FakeFiles fs;
  fs.files["/tmp/n.yaml"] = "proc_root: /nonexistent\n";
  CliOptions cli;
  cli.config_path = "/tmp/n.yaml";
  ConfigResult result = load_effective_config(cli, fs.reader());
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->what, "proc_root: invalid value '/nonexistent': does not exist");
}

TEST(LoadEffectiveConfig, ProcRootFlagMustBeAProcTree) {
  FakeFiles fs;
  CliOptions cli;
  cli.settings["proc_root"] = {NEUTRACER_FIXTURES_DIR "/cgroup", "--proc-root"}; // a directory, but no process in it
  ConfigResult result = load_effective_config(cli, fs.reader());
  ASSERT_TRUE(result.error);
  EXPECT_CONTAINS(result.error->what, "--proc-root: invalid value '");
  EXPECT_CONTAINS(result.error->what, "holds no process directories");
}

TEST(LoadEffectiveConfig, FixtureAndRealProcTreesAreAccepted) {
  FakeFiles fs;
  CliOptions cli;
  for (const char *root : {"/proc", kFixtureProc, NEUTRACER_FIXTURES_DIR "/proc/shared_library"}) {
    cli.settings["proc_root"] = {root, "--proc-root"};
    ConfigResult result = load_effective_config(cli, fs.reader());
    EXPECT_FALSE(result.error) << root << ": " << result.error->what;
  }
}

TEST(LoadEffectiveConfig, ThrowingReaderBecomesAnError) {
  CliOptions cli;
  ConfigResult result = load_effective_config(
      cli, [](const std::string &, std::string &) -> std::optional<std::string> {
        throw std::runtime_error("reader exploded");
      });
  ASSERT_TRUE(result.error);
  EXPECT_CONTAINS(result.error->what, "reader exploded");
}

// ---- read_text_file ------------------------------------------------------------------------

class ReadTextFile : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/neutracer_cli_test_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    for (const std::string &path : created_)
      ::unlink(path.c_str());
    ::rmdir((dir_ + "/subdir").c_str());
    ::rmdir(dir_.c_str());
  }
  std::string write(const std::string &name, const std::string &content) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << content;
    created_.push_back(path);
    return path;
  }
  std::string dir_;
  std::vector<std::string> created_;
};

TEST_F(ReadTextFile, ReadsWholeFile) {
  const std::string content = "log_level: debug\n" + std::string(20000, '#') + "\n";
  const std::string path = write("a.yaml", content);
  std::string error = "stale";
  EXPECT_EQ(read_text_file(path, error), content);
  EXPECT_EQ(error, "");
}

TEST_F(ReadTextFile, MissingFileIsNulloptWithoutError) {
  std::string error = "stale";
  EXPECT_FALSE(read_text_file(dir_ + "/missing.yaml", error));
  EXPECT_EQ(error, "");
}

TEST_F(ReadTextFile, DirectoryIsAnError) {
  ASSERT_EQ(::mkdir((dir_ + "/subdir").c_str(), 0700), 0);
  std::string error;
  EXPECT_FALSE(read_text_file(dir_ + "/subdir", error));
  EXPECT_EQ(error, "is a directory");
}

TEST_F(ReadTextFile, UnopenablePathIsAnErrorNotAbsence) {
  // A file used as a directory fails with ENOTDIR even for root (chmod 0 would not).
  const std::string file = write("plain.yaml", "log_level: info\n");
  std::string error;
  EXPECT_FALSE(read_text_file(file + "/inner.yaml", error));
  EXPECT_FALSE(error.empty()) << "only a missing file may read as absent";
}

TEST_F(ReadTextFile, FifoIsAnErrorNotAHang) {
  // Opening a FIFO for reading waits for a writer: --check-config hung on one (issue 20).
  const std::string fifo = dir_ + "/fifo.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  created_.push_back(fifo);
  std::string error;
  auto read = std::async(std::launch::async, [&] { return read_text_file(fifo, error); });
  if (read.wait_for(10s) == std::future_status::timeout) {
    // Release the blocked open so the test ends, then fail.
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0)
      ::close(writer);
    read.wait();
    FAIL() << "read_text_file blocked on a FIFO";
  }
  EXPECT_FALSE(read.get());
  EXPECT_EQ(error, "is a FIFO, not a regular file");
}

TEST_F(ReadTextFile, DeviceIsAnErrorButDevNullIsAnEmptyFile) {
  std::string error;
  EXPECT_FALSE(read_text_file("/dev/zero", error));
  EXPECT_EQ(error, "is a character device, not a regular file");
  // "--config /dev/null": defaults only, as the benchmark scripts run the daemon.
  EXPECT_EQ(read_text_file("/dev/null", error), std::string());
  EXPECT_EQ(error, "");
}

TEST_F(ReadTextFile, FileOverOneMebibyteIsAnError) {
  const std::string path = write("big.yaml", std::string((1u << 20) + 1, '#'));
  std::string error;
  EXPECT_FALSE(read_text_file(path, error));
  EXPECT_CONTAINS(error, "larger than 1048576 bytes");
  // Exactly the limit still reads.
  const std::string limit = write("limit.yaml", std::string(1u << 20, '#'));
  const auto content = read_text_file(limit, error);
  ASSERT_TRUE(content) << error;
  EXPECT_EQ(content->size(), 1u << 20);
}

TEST_F(ReadTextFile, WorksWithLoadEffectiveConfig) {
  const std::string path = write("n.yaml", "scan_interval: 3s\n");
  CliOptions cli;
  cli.config_path = path;
  ConfigResult result = load_effective_config(cli, read_text_file);
  ASSERT_FALSE(result.error) << result.error->what;
  EXPECT_EQ(result.config->scan_interval, 3000ms);

  cli.config_path = dir_ + "/missing.yaml";
  result = load_effective_config(cli, read_text_file);
  ASSERT_TRUE(result.error);
  EXPECT_CONTAINS(result.error->what, "missing.yaml: config file not found");
}

} // namespace
} // namespace neutracer
