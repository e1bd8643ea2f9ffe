// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <gtest/gtest.h>

#include "http/civetweb_listen.h"

#include <fstream>
#include <sstream>

namespace neutracer {
namespace {

using namespace std::chrono_literals;

// Substring assertion without gmock, so the file also builds against plain gtest.
::testing::AssertionResult contains(const char *haystack_expr, const char *,
                                    const std::string &haystack, const std::string &needle) {
  if (haystack.find(needle) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << haystack_expr << " is \"" << haystack
                                       << "\"\nwhich does not contain \"" << needle << "\"";
}
#define EXPECT_CONTAINS(haystack, needle) EXPECT_PRED_FORMAT2(contains, haystack, needle)

// Parses `yaml` expecting failure; returns the message (empty if parsing unexpectedly worked).
std::string parse_error(const std::string &yaml) {
  ConfigResult result = parse_config_yaml(yaml, "test.yaml");
  EXPECT_FALSE(result.config.has_value()) << "unexpectedly parsed:\n" << yaml;
  EXPECT_TRUE(result.error.has_value());
  return result.error ? result.error->what : std::string();
}

Config parse_ok(const std::string &yaml) {
  ConfigResult result = parse_config_yaml(yaml, "test.yaml");
  EXPECT_FALSE(result.error.has_value()) << result.error->what;
  return result.config.value_or(Config{});
}

std::string validate_error(const Config &config) {
  std::optional<ConfigError> error = validate_config(config);
  EXPECT_TRUE(error.has_value());
  return error ? error->what : std::string();
}

// ---- parse_duration ------------------------------------------------------------------------

TEST(ParseDuration, AcceptsEachUnit) {
  EXPECT_EQ(parse_duration("500ms"), 500ms);
  EXPECT_EQ(parse_duration("2s"), 2000ms);
  EXPECT_EQ(parse_duration("1m"), 60000ms);
  EXPECT_EQ(parse_duration("1h"), 3600000ms);
}

TEST(ParseDuration, AcceptsExactFractions) {
  EXPECT_EQ(parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(parse_duration("0.5m"), 30000ms);
  EXPECT_EQ(parse_duration("0.001s"), 1ms);
  EXPECT_EQ(parse_duration("2.50s"), 2500ms);
}

TEST(ParseDuration, RejectsUnsupportedUnits) {
  EXPECT_FALSE(parse_duration("100us"));
  EXPECT_FALSE(parse_duration("100ns"));
  EXPECT_FALSE(parse_duration("1d"));
  EXPECT_FALSE(parse_duration("2S"));
  EXPECT_FALSE(parse_duration("2sec"));
}

TEST(ParseDuration, RejectsMissingUnitOrNumber) {
  EXPECT_FALSE(parse_duration(""));
  EXPECT_FALSE(parse_duration("2"));
  EXPECT_FALSE(parse_duration("s"));
  EXPECT_FALSE(parse_duration(".5s"));
  EXPECT_FALSE(parse_duration("1.s"));
  EXPECT_FALSE(parse_duration("1e3ms"));
}

TEST(ParseDuration, RejectsSignsAndWhitespace) {
  EXPECT_FALSE(parse_duration("-1s"));
  EXPECT_FALSE(parse_duration("+1s"));
  EXPECT_FALSE(parse_duration(" 2s"));
  EXPECT_FALSE(parse_duration("2s "));
  EXPECT_FALSE(parse_duration("2 s"));
}

TEST(ParseDuration, RejectsZero) {
  EXPECT_FALSE(parse_duration("0s"));
  EXPECT_FALSE(parse_duration("0ms"));
  EXPECT_FALSE(parse_duration("0.0h"));
}

TEST(ParseDuration, RejectsSubMillisecondPrecision) {
  EXPECT_FALSE(parse_duration("1.5ms"));
  EXPECT_FALSE(parse_duration("0.0001s"));
}

TEST(ParseDuration, RejectsValuesThatDoNotFit) {
  EXPECT_FALSE(parse_duration("99999999999999999999999h"));
  EXPECT_FALSE(parse_duration("9223372036854775808ms"));
  EXPECT_FALSE(parse_duration("2562047788016h"));
  EXPECT_EQ(parse_duration("9223372036854775807ms"), std::chrono::milliseconds::max());
}

TEST(FormatDuration, UsesLargestExactUnitAndRoundTrips) {
  EXPECT_EQ(format_duration(2000ms), "2s");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(60000ms), "1m");
  EXPECT_EQ(format_duration(3600000ms), "1h");
  for (auto d : {1ms, 100ms, 1500ms, 90000ms, 7200000ms})
    EXPECT_EQ(parse_duration(format_duration(d)), d);
}

// ---- parse_config_yaml: accepted input -----------------------------------------------------

TEST(ParseConfigYaml, EmptyTextMeansDefaults) { EXPECT_EQ(parse_ok(""), Config{}); }

TEST(ParseConfigYaml, CommentsOnlyMeanDefaults) {
  EXPECT_EQ(parse_ok("# nothing here\n\n   # still nothing\n"), Config{});
}

TEST(ParseConfigYaml, ExplicitNullDocumentMeansDefaults) {
  EXPECT_EQ(parse_ok("---\n"), Config{});
  EXPECT_EQ(parse_ok("~\n"), Config{});
}

TEST(ParseConfigYaml, ReadsEveryKey) {
  Config config = parse_ok(R"(
listen: "0.0.0.0:9400"
scan_interval: 500ms
log_level: debug
proc_root: /host/proc
cuda:
  max_kernels_per_process: 200
  launch_map_entries: 1024
  ring_buffer_bytes: 4096
  throughput_window: 1.5m
)");
  EXPECT_EQ(config.listen, "0.0.0.0:9400");
  EXPECT_EQ(config.scan_interval, 500ms);
  EXPECT_EQ(config.log_level, "debug");
  EXPECT_EQ(config.proc_root, "/host/proc");
  EXPECT_EQ(config.cuda.max_kernels_per_process, 200u);
  EXPECT_EQ(config.cuda.launch_map_entries, 1024u);
  EXPECT_EQ(config.cuda.ring_buffer_bytes, 4096u);
  EXPECT_EQ(config.cuda.throughput_window, 90000ms);
}

TEST(ParseConfigYaml, MissingKeysKeepDefaults) {
  Config config = parse_ok("cuda:\n  max_kernels_per_process: 7\n");
  Config expected;
  expected.cuda.max_kernels_per_process = 7;
  EXPECT_EQ(config, expected);
}

TEST(ParseConfigYaml, EmptyCudaSectionMeansDefaults) {
  EXPECT_EQ(parse_ok("cuda:\n  # max_kernels_per_process: 50\n"), Config{});
}

TEST(ParseConfigYaml, AcceptsBoundaryValues) {
  Config config = parse_ok(R"(
scan_interval: 1h
cuda:
  max_kernels_per_process: 10000
  launch_map_entries: 4194304
  ring_buffer_bytes: 1073741824
  throughput_window: 1s
)");
  EXPECT_EQ(config.scan_interval, 3600000ms);
  EXPECT_EQ(config.cuda.max_kernels_per_process, 10000u);
  EXPECT_EQ(config.cuda.launch_map_entries, 4194304u);
  EXPECT_EQ(config.cuda.ring_buffer_bytes, 1073741824u);
  EXPECT_EQ(config.cuda.throughput_window, 1000ms);
  EXPECT_EQ(parse_ok("scan_interval: 100ms\n").scan_interval, 100ms);
}

TEST(ParseConfigYaml, AcceptsEveryLogLevel) {
  for (const char *level : {"trace", "debug", "info", "warn", "error", "critical", "off"})
    EXPECT_EQ(parse_ok(std::string("log_level: ") + level + "\n").log_level, level);
}

TEST(ParseConfigYaml, ShippedConfigFileIsExactlyTheDefaults) {
  std::ifstream file(NEUTRACER_SOURCE_DIR "/config/neutracerd.yaml");
  ASSERT_TRUE(file.good()) << "cannot open the shipped config file";
  std::stringstream text;
  text << file.rdbuf();
  ConfigResult result = parse_config_yaml(text.str(), "neutracerd.yaml");
  ASSERT_FALSE(result.error.has_value()) << result.error->what;
  EXPECT_EQ(*result.config, Config{});
  // "All keys present": a file that only relied on defaults would not document them.
  for (const char *key : {"listen:",
                          "scan_interval:",
                          "log_level:",
                          "proc_root:",
                          "cuda:",
                          "max_kernels_per_process:",
                          "launch_map_entries:",
                          "ring_buffer_bytes:",
                          "throughput_window:",
                          "detectors:",
                          "leak:",
                          "window:",
                          "windows:",
                          "min_growth_bytes:",
                          "sample_step_bytes:",
                          "probability:",
                          "hang:",
                          "call_threshold:",
                          "stalled_launches:",
                          "fragmentation:",
                          "retry_storm_retries:",
                          "retry_storm_window:",
                          "alerts:",
                          "cooldown:",
                          "max_per_minute:",
                          "journal:",
                          "stacks:",
                          "max_depth:",
                          "launch_sample_every:",
                          "max_sites_per_process:",
                          "max_sites:",
                          "map_entries:"})
    EXPECT_CONTAINS(text.str(), key);
}

TEST(ParseConfigYaml, ReadsDetectorAndAlertKeys) {
  const Config config =
      parse_ok("detectors:\n"
               "  leak: {window: 5s, windows: 3, min_growth_bytes: 1048576,\n"
               "         sample_step_bytes: 2097152, probability: 0.9}\n"
               "  hang: {call_threshold: 2s, stalled_launches: 3s}\n"
               "  fragmentation: {retry_storm_retries: 2, retry_storm_window: 10s}\n"
               "alerts: {cooldown: 1s, max_per_minute: 5, journal: false}\n");
  EXPECT_EQ(config.detectors.leak_window, 5s);
  EXPECT_EQ(config.detectors.leak_windows, 3u);
  EXPECT_EQ(config.detectors.leak_min_growth_bytes, 1048576u);
  EXPECT_EQ(config.detectors.leak_sample_step_bytes, 2097152u);
  EXPECT_DOUBLE_EQ(config.detectors.leak_probability, 0.9);
  EXPECT_EQ(config.detectors.hang_call_threshold, 2s);
  EXPECT_EQ(config.detectors.hang_stalled_launches, 3s);
  EXPECT_EQ(config.detectors.retry_storm_retries, 2u);
  EXPECT_EQ(config.detectors.retry_storm_window, 10s);
  EXPECT_EQ(config.alerts.cooldown, 1s);
  EXPECT_EQ(config.alerts.max_per_minute, 5u);
  EXPECT_FALSE(config.alerts.journal);
  EXPECT_FALSE(validate_config(config).has_value());
}

TEST(ParseConfigYamlErrors, DetectorValuesAreRangeChecked) {
  EXPECT_CONTAINS(parse_error("detectors:\n  leak:\n    probability: 1.5\n"),
                  "test.yaml:3: detectors.leak.probability: invalid value 1.5: must be above 0.5");
  EXPECT_CONTAINS(parse_error("detectors:\n  leak:\n    probability: high\n"),
                  "detectors.leak.probability: expected a number, got 'high'");
  EXPECT_CONTAINS(parse_error("detectors:\n  leak:\n    windows: 1\n"),
                  "detectors.leak.windows: invalid value 1: must be between 2 and 1000");
  EXPECT_CONTAINS(
      parse_error("detectors:\n  hang:\n    call_threshold: 500ms\n"),
      "detectors.hang.call_threshold: invalid value '500ms': must be between 1s and 24h");
  EXPECT_CONTAINS(parse_error("detectors:\n  hang:\n    stuck: 1s\n"),
                  "unknown key 'detectors.hang.stuck'");
  EXPECT_CONTAINS(parse_error("alerts:\n  journal: yes\n"),
                  "alerts.journal: expected true or false, got 'yes'");
  EXPECT_CONTAINS(parse_error("alerts:\n  max_per_minute: 0\n"),
                  "alerts.max_per_minute: invalid value 0: must be between 1 and 100000");
}

TEST(ValidateConfig, RejectsOutOfRangeDetectorSettings) {
  Config config;
  config.detectors.leak_probability = 0.3;
  ASSERT_TRUE(validate_config(config).has_value());
  EXPECT_CONTAINS(validate_config(config)->what, "detectors.leak.probability");
  config = Config{};
  config.alerts.max_per_minute = 0;
  EXPECT_CONTAINS(validate_config(config)->what, "alerts.max_per_minute");
}

// ---- parse_config_yaml: rejected input -----------------------------------------------------

TEST(ParseConfigYamlErrors, InvalidYamlNamesSourceAndLine) {
  std::string error =
      parse_error("listen: \"127.0.0.1:80\"\nscan_interval: [1s,\nlog_level: info\n");
  EXPECT_CONTAINS(error, "test.yaml:4: invalid YAML: ");
  EXPECT_CONTAINS(error, "end of sequence flow not found");
}

TEST(ParseConfigYamlErrors, TabIndentationIsInvalidYaml) {
  EXPECT_CONTAINS(parse_error("cuda:\n\tmax_kernels_per_process: 5\n"),
                  "test.yaml:2: invalid YAML: ");
}

TEST(ParseConfigYamlErrors, TopLevelListIsRejected) {
  EXPECT_CONTAINS(parse_error("- listen: 1.2.3.4:5\n"), "test.yaml:1: top level must be a mapping");
}

TEST(ParseConfigYamlErrors, TopLevelScalarIsRejected) {
  EXPECT_CONTAINS(parse_error("just some text\n"), "top level must be a mapping");
}

TEST(ParseConfigYamlErrors, MultipleDocumentsAreRejected) {
  EXPECT_CONTAINS(parse_error("log_level: info\n---\nlog_level: debug\n"),
                  "test.yaml:3: multiple YAML documents");
}

TEST(ParseConfigYamlErrors, UnknownTopLevelKeyIsNamedWithLine) {
  std::string error = parse_error("log_level: info\nlistn: 1.2.3.4:80\n");
  EXPECT_CONTAINS(error, "test.yaml:2: unknown key 'listn'");
  EXPECT_CONTAINS(error,
                  "known keys: listen, scan_interval, log_level, log_format, proc_root, cuda");
}

TEST(ParseConfigYamlErrors, UnknownNestedKeyIsNamedWithFullPath) {
  std::string error = parse_error("cuda:\n  max_kernels_per_process: 5\n  max_kernel: 3\n");
  EXPECT_CONTAINS(error, "test.yaml:3: unknown key 'cuda.max_kernel'");
  EXPECT_CONTAINS(error, "known keys: cuda.max_kernels_per_process");
}

TEST(ParseConfigYamlErrors, DuplicateKeyIsRejected) {
  EXPECT_CONTAINS(parse_error("log_level: info\nlog_level: debug\n"),
                  "test.yaml:2: duplicate key 'log_level'");
}

TEST(ParseConfigYamlErrors, NonScalarKeyIsRejected) {
  EXPECT_CONTAINS(parse_error("? [a, b]\n: 1\n"), "keys must be plain strings");
}

TEST(ParseConfigYamlErrors, ListWhereStringExpected) {
  EXPECT_CONTAINS(parse_error("log_level: info\nlisten: [a, b]\n"),
                  "test.yaml:2: listen: expected a string, got a list");
}

TEST(ParseConfigYamlErrors, MappingWhereDurationExpected) {
  EXPECT_CONTAINS(parse_error("scan_interval:\n  seconds: 2\n"),
                  "test.yaml:1: scan_interval: expected a duration");
}

TEST(ParseConfigYamlErrors, ScalarWhereSectionExpected) {
  EXPECT_CONTAINS(parse_error("cuda: 5\n"),
                  "test.yaml:1: cuda: expected a mapping of keys to values, got '5'");
}

TEST(ParseConfigYamlErrors, MissingValue) {
  EXPECT_CONTAINS(parse_error("log_level: info\nlisten:\n"), "test.yaml:2: listen: missing value");
}

TEST(ParseConfigYamlErrors, TextWhereIntegerExpected) {
  EXPECT_CONTAINS(parse_error("cuda:\n  max_kernels_per_process: abc\n"),
                  "test.yaml:2: cuda.max_kernels_per_process: expected a non-negative "
                  "decimal integer, got 'abc'");
}

TEST(ParseConfigYamlErrors, QuotedStringWhereIntegerExpected) {
  EXPECT_CONTAINS(parse_error("cuda:\n  launch_map_entries: \"abc\"\n"),
                  "test.yaml:2: cuda.launch_map_entries: expected a non-negative integer, "
                  "got the quoted string 'abc'");
  EXPECT_CONTAINS(parse_error("cuda:\n  launch_map_entries: \"2048\"\n"), "quoted string");
}

TEST(ParseConfigYamlErrors, FractionWhereIntegerExpected) {
  EXPECT_CONTAINS(parse_error("cuda:\n  max_kernels_per_process: 1.5\n"),
                  "expected a non-negative decimal integer, got '1.5'");
}

TEST(ParseConfigYamlErrors, NegativeUnsignedIsRejected) {
  EXPECT_CONTAINS(parse_error("cuda:\n  ring_buffer_bytes: -4096\n"),
                  "test.yaml:2: cuda.ring_buffer_bytes: must not be negative");
}

TEST(ParseConfigYamlErrors, HugeIntegerIsRejected) {
  EXPECT_CONTAINS(parse_error("cuda:\n  launch_map_entries: 123456789012345678901234567890\n"),
                  "too large");
  // Above 2^32 but inside 64 bits: must hit the range check, not wrap when narrowed.
  EXPECT_CONTAINS(parse_error("cuda:\n  max_kernels_per_process: 4294967346\n"),
                  "must be between 1 and 10000");
}

TEST(ParseConfigYamlErrors, DurationWithoutUnit) {
  EXPECT_CONTAINS(parse_error("scan_interval: 2\n"),
                  "test.yaml:1: scan_interval: invalid duration '2'");
}

TEST(ParseConfigYamlErrors, DurationWithMicroseconds) {
  EXPECT_CONTAINS(parse_error("cuda:\n  throughput_window: 100us\n"),
                  "test.yaml:2: cuda.throughput_window: invalid duration '100us'");
}

TEST(ParseConfigYamlErrors, ScanIntervalTooShort) {
  EXPECT_CONTAINS(parse_error("scan_interval: 50ms\n"),
                  "test.yaml:1: scan_interval: invalid value '50ms': must be between 100ms "
                  "and 1h");
}

TEST(ParseConfigYamlErrors, ScanIntervalTooLong) {
  EXPECT_CONTAINS(parse_error("scan_interval: 61m\n"), "must be between 100ms and 1h");
}

TEST(ParseConfigYamlErrors, UnknownLogLevel) {
  EXPECT_CONTAINS(parse_error("log_level: verbose\n"),
                  "test.yaml:1: log_level: invalid value 'verbose': must be one of trace, "
                  "debug, info, warn, error, critical, off");
}

TEST(ParseConfigYamlErrors, LogLevelIsCaseSensitive) {
  EXPECT_CONTAINS(parse_error("log_level: INFO\n"), "must be one of");
}

TEST(ParseConfigYamlErrors, MaxKernelsZero) {
  EXPECT_CONTAINS(parse_error("cuda:\n  max_kernels_per_process: 0\n"),
                  "test.yaml:2: cuda.max_kernels_per_process: invalid value 0: must be "
                  "between 1 and 10000");
}

TEST(ParseConfigYamlErrors, MaxKernelsTooLarge) {
  EXPECT_CONTAINS(parse_error("cuda:\n  max_kernels_per_process: 10001\n"),
                  "must be between 1 and 10000");
}

TEST(ParseConfigYamlErrors, LaunchMapEntriesTooSmall) {
  EXPECT_CONTAINS(parse_error("cuda:\n  launch_map_entries: 1023\n"),
                  "cuda.launch_map_entries: invalid value 1023: must be between 1024 and "
                  "4194304");
}

TEST(ParseConfigYamlErrors, LaunchMapEntriesTooLarge) {
  EXPECT_CONTAINS(parse_error("cuda:\n  launch_map_entries: 4194305\n"),
                  "must be between 1024 and 4194304");
}

TEST(ParseConfigYamlErrors, RingBufferNotPowerOfTwo) {
  EXPECT_CONTAINS(parse_error("cuda:\n  ring_buffer_bytes: 12288\n"),
                  "cuda.ring_buffer_bytes: invalid value 12288: must be a power of two "
                  "between 4096 and 1073741824");
}

TEST(ParseConfigYamlErrors, RingBufferTooSmall) {
  EXPECT_CONTAINS(parse_error("cuda:\n  ring_buffer_bytes: 2048\n"), "power of two");
}

TEST(ParseConfigYamlErrors, RingBufferTooLarge) {
  EXPECT_CONTAINS(parse_error("cuda:\n  ring_buffer_bytes: 2147483648\n"), "power of two");
}

TEST(ParseConfigYamlErrors, ThroughputWindowTooShort) {
  EXPECT_CONTAINS(parse_error("cuda:\n  throughput_window: 999ms\n"),
                  "cuda.throughput_window: invalid value '999ms': must be between 1s and "
                  "1h");
}

TEST(ParseConfigYamlErrors, ThroughputWindowTooLong) {
  EXPECT_CONTAINS(parse_error("cuda:\n  throughput_window: 2h\n"), "must be between 1s and 1h");
}

TEST(ParseConfigYamlErrors, ProcRootEmpty) {
  EXPECT_CONTAINS(parse_error("proc_root: \"\"\n"),
                  "test.yaml:1: proc_root: invalid value '': must not be empty");
}

TEST(ParseConfigYamlErrors, ProcRootRelative) {
  EXPECT_CONTAINS(parse_error("proc_root: host/proc\n"), "must be an absolute path");
}

TEST(ParseConfigYamlErrors, BadListenCarriesLine) {
  EXPECT_CONTAINS(parse_error("log_level: info\nlisten: \"::1:80\"\n"),
                  "test.yaml:2: listen: invalid value '::1:80': an IPv6 address needs brackets");
}

// ---- listen addresses (validate_config, shared with the flags) -----------------------------

Config with_listen(const std::string &listen) {
  Config config;
  config.listen = listen;
  return config;
}

TEST(ValidateConfig, DefaultsAreValid) { EXPECT_FALSE(validate_config(Config{})); }

TEST(ValidateConfig, AcceptsGoodListenAddresses) {
  for (const char *listen : {"127.0.0.1:10492", "0.0.0.0:1", "localhost:65535", "10.1.2.3:80"})
    EXPECT_FALSE(validate_config(with_listen(listen))) << listen;
}

TEST(ValidateConfig, ListenMissingPort) {
  EXPECT_CONTAINS(validate_error(with_listen("127.0.0.1")),
                  "listen: invalid value '127.0.0.1': missing port");
  EXPECT_CONTAINS(validate_error(with_listen("127.0.0.1:")), "missing port");
}

TEST(ValidateConfig, ListenPortZero) {
  EXPECT_CONTAINS(validate_error(with_listen("127.0.0.1:0")),
                  "port 0 is out of range; must be between 1 and 65535");
}

TEST(ValidateConfig, ListenPortTooLarge) {
  EXPECT_CONTAINS(validate_error(with_listen("127.0.0.1:70000")), "port 70000 is out of range");
  EXPECT_CONTAINS(validate_error(with_listen("127.0.0.1:123456789")), "must be a number");
}

TEST(ValidateConfig, ListenPortNotNumeric) {
  EXPECT_CONTAINS(validate_error(with_listen("127.0.0.1:http")),
                  "port 'http' must be a number between 1 and 65535");
  EXPECT_CONTAINS(validate_error(with_listen("127.0.0.1:-80")), "must be a number");
}

TEST(ValidateConfig, ListenIpv6NeedsBracketsAndCivetwebSupport) {
  EXPECT_CONTAINS(validate_error(with_listen("::1:80")),
                  "an IPv6 address needs brackets: [::1]:80");
  EXPECT_CONTAINS(validate_error(with_listen("[::1]80")), "missing port after ']'");
  EXPECT_CONTAINS(validate_error(with_listen("[::1:80")), "'[' without ']'");
  EXPECT_CONTAINS(validate_error(with_listen("[1.2.3.4]:80")), "'1.2.3.4' is not an IPv6 address");
  EXPECT_CONTAINS(validate_error(with_listen("[::1]:0")), "port 0 is out of range");
  // A well-formed IPv6 address is refused only where the linked civetweb lacks IPv6.
  const auto error = validate_config(with_listen("[::1]:80"));
  if (civetweb_has_ipv6())
    EXPECT_FALSE(error);
  else
    EXPECT_CONTAINS(error->what, "no IPv6 support");
}

TEST(ValidateConfig, ListenEmptyHostMeansEveryInterface) {
  EXPECT_FALSE(validate_config(with_listen(":9400")));
  EXPECT_CONTAINS(validate_error(with_listen(":")), "missing port");
  EXPECT_CONTAINS(validate_error(with_listen(":x")), "port 'x' must be a number");
}

TEST(ValidateConfig, LogFormat) {
  Config config;
  EXPECT_EQ(config.log_format, "logfmt");
  config.log_format = "json";
  EXPECT_FALSE(validate_config(config));
  config.log_format = "text";
  EXPECT_CONTAINS(validate_error(config),
                  "log_format: invalid value 'text': must be logfmt or json");
  EXPECT_EQ(parse_ok("log_format: json\n").log_format, "json");
  EXPECT_CONTAINS(parse_error("log_format: xml\n"), "test.yaml:1: log_format: invalid value 'xml'");
}

TEST(ValidateConfig, ListenEmpty) {
  EXPECT_CONTAINS(validate_error(with_listen("")), "empty address");
}

TEST(ValidateConfig, ListenHostMustBeIpv4OrLocalhost) {
  for (const char *listen : {"example.com:80", "256.0.0.1:80", "1.2.3:80", "1.2.3.4.5:80",
                             "01.2.3.4:80", "1..3.4:80", "Localhost:80"})
    EXPECT_CONTAINS(validate_error(with_listen(listen)), "must be an IPv4 address") << listen;
}

TEST(ValidateConfig, ChecksEveryField) {
  Config config;
  config.scan_interval = 10ms;
  EXPECT_CONTAINS(validate_error(config), "scan_interval: invalid value '10ms'");
  config = Config{};
  config.log_level = "loud";
  EXPECT_CONTAINS(validate_error(config), "log_level: invalid value 'loud'");
  config = Config{};
  config.proc_root = "proc";
  EXPECT_CONTAINS(validate_error(config), "proc_root: invalid value 'proc'");
  config = Config{};
  config.cuda.max_kernels_per_process = 0;
  EXPECT_CONTAINS(validate_error(config), "cuda.max_kernels_per_process");
  config = Config{};
  config.cuda.launch_map_entries = 5;
  EXPECT_CONTAINS(validate_error(config), "cuda.launch_map_entries");
  config = Config{};
  config.cuda.ring_buffer_bytes = 5000;
  EXPECT_CONTAINS(validate_error(config), "cuda.ring_buffer_bytes");
  config = Config{};
  config.cuda.throughput_window = 0ms;
  EXPECT_CONTAINS(validate_error(config), "cuda.throughput_window");
}

} // namespace
} // namespace neutracer

namespace neutracer {
namespace {

TEST(ParseConfigYaml, ReadsLaunchCountingKeys) {
  const auto config = parse_ok("cuda:\n"
                               "  launch_counting: exact\n"
                               "  launch_max_rate: 250\n"
                               "  launch_sample_period: 500ms\n"
                               "  launch_sample_fraction: 0.5\n"
                               "  launch_rules:\n"
                               "    - {match: \"train*\", counting: off}\n"
                               "    - {match: \"/opt/*\", counting: adaptive}\n");
  EXPECT_EQ(config.cuda.launch_counting, LaunchCounting::exact);
  EXPECT_EQ(config.cuda.launch_max_rate, 250u);
  EXPECT_EQ(config.cuda.launch_sample_period, std::chrono::milliseconds(500));
  const std::vector<std::pair<std::string, LaunchCounting>> rules{
      {"train*", LaunchCounting::off}, {"/opt/*", LaunchCounting::adaptive}};
  EXPECT_EQ(config.cuda.launch_rules, rules);
  EXPECT_EQ(config.cuda.launch_sample_fraction, 0.5);
  // Exact by default: a count users read is a count, not an estimate.
  EXPECT_EQ(Config{}.cuda.launch_counting, LaunchCounting::exact);
  EXPECT_EQ(Config{}.cuda.launch_sample_fraction, 0.0);
}

TEST(ParseConfigYamlErrors, LaunchCountingValuesAreChecked) {
  EXPECT_CONTAINS(parse_error("cuda: {launch_counting: sampled}\n"),
                  "cuda.launch_counting: invalid value 'sampled': must be exact, adaptive or off");
  EXPECT_CONTAINS(parse_error("cuda: {launch_max_rate: 0}\n"), "must be between 1 and 10000000");
  EXPECT_CONTAINS(parse_error("cuda: {launch_sample_period: 50ms}\n"),
                  "must be between 100ms and 1m");
  EXPECT_CONTAINS(parse_error("cuda: {launch_sample_fraction: 1.5}\n"),
                  "cuda.launch_sample_fraction: invalid value 1.5: must be 0 (from "
                  "launch_max_rate) or between 0.001 and 0.9");
  EXPECT_CONTAINS(parse_error("cuda: {launch_rules: {match: x}}\n"),
                  "expected a list of {match: PATTERN, counting: MODE}");
  EXPECT_CONTAINS(parse_error("cuda:\n  launch_rules:\n    - {match: x, counting: fast}\n"),
                  "rule 1: counting 'fast' must be exact, adaptive or off");
  EXPECT_CONTAINS(parse_error("cuda:\n  launch_rules:\n    - {match: \"\", counting: off}\n"),
                  "rule 1: match must not be empty");
  EXPECT_CONTAINS(parse_error("cuda:\n  launch_rules:\n    - {match: x, counting: off, y: 1}\n"),
                  "rule 1: expected exactly the keys match and counting");
}

} // namespace
} // namespace neutracer

namespace neutracer {
namespace {

TEST(ParseConfigYaml, ReadsStacksKeys) {
  const auto config = parse_ok("stacks:\n"
                               "  enabled: false\n"
                               "  max_depth: 32\n"
                               "  launch_sample_every: 0\n"
                               "  max_sites_per_process: 10\n"
                               "  max_sites: 100\n"
                               "  map_entries: 1024\n");
  EXPECT_FALSE(config.stacks.enabled);
  EXPECT_EQ(config.stacks.max_depth, 32u);
  EXPECT_EQ(config.stacks.launch_sample_every, 0u);
  EXPECT_EQ(config.stacks.max_sites_per_process, 10u);
  EXPECT_EQ(config.stacks.max_sites, 100u);
  EXPECT_EQ(config.stacks.map_entries, 1024u);
  EXPECT_TRUE(Config{}.stacks.enabled);
  EXPECT_EQ(Config{}.stacks.launch_sample_every, 1000u);
}

TEST(ParseConfigYamlErrors, StacksValuesAreChecked) {
  EXPECT_CONTAINS(parse_error("stacks: {max_depth: 128}\n"),
                  "stacks.max_depth: invalid value 128: must be between 1 and 127");
  EXPECT_CONTAINS(parse_error("stacks: {max_depth: 0}\n"), "must be between 1 and 127");
  EXPECT_CONTAINS(parse_error("stacks: {launch_sample_every: 2000000000}\n"),
                  "must be between 1 and 1073741824 (or 0 for no launch sites)");
  EXPECT_CONTAINS(parse_error("stacks: {map_entries: 10}\n"),
                  "stacks.map_entries: invalid value 10: must be between 64 and 1048576");
  EXPECT_CONTAINS(parse_error("stacks: {enabled: sometimes}\n"), "expected true or false");
  Config config;
  config.stacks.max_sites_per_process = 500;
  config.stacks.max_sites = 100;
  EXPECT_CONTAINS(validate_error(config), "stacks.max_sites: invalid value '100': must be at least "
                                          "stacks.max_sites_per_process (500)");
  config.stacks.max_sites = 500;
  config.stacks.max_depth = 0;
  EXPECT_CONTAINS(validate_error(config), "stacks.max_depth");
  EXPECT_CONTAINS(parse_error("stacks: {depth: 3}\n"), "unknown key 'stacks.depth'");
}

} // namespace
} // namespace neutracer
