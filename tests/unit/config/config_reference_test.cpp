// SPDX-License-Identifier: Apache-2.0
// The key table drives the shipped config file, the docs' key tables, the flags and parsing.
#include "config/config_reference.h"

#include <gtest/gtest.h>

#include "config/cli.h"
#include "config/config_keys.h"
#include "golden_file.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

namespace neutracer {
namespace {

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(ConfigReference, ShippedConfigFileIsRenderedFromTheKeyTable) {
  test::expect_matches_golden(NEUTRACER_SOURCE_DIR "/config/neutracerd.yaml",
                              render_default_config_file());
}

TEST(ConfigReference, ConfigurationDocHoldsTheRenderedKeyTables) {
  const std::string path = NEUTRACER_SOURCE_DIR "/docs/configuration.md";
  const std::string begin = "<!-- BEGIN key tables: rendered from config/config_keys.cpp -->\n";
  const std::string end = "<!-- END key tables -->\n";
  std::string doc = read_file(path);
  const auto from = doc.find(begin);
  const auto to = doc.find(end);
  ASSERT_NE(from, std::string::npos) << path << " lacks " << begin;
  ASSERT_NE(to, std::string::npos) << path << " lacks " << end;
  ASSERT_LT(from, to);
  const std::string rendered = render_config_tables();
  const char *update = std::getenv("NEUTRACER_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    doc.replace(from + begin.size(), to - from - begin.size(), rendered);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << doc;
    GTEST_SKIP() << "rewritten: " << path;
  }
  EXPECT_EQ(doc.substr(from + begin.size(), to - from - begin.size()), rendered);
}

// Every section with help shows it in the docs, also one whose keys are all in subsections.
TEST(ConfigReference, EverySectionsHelpIsInTheTables) {
  const std::string tables = render_config_tables();
  for (const ConfigSection &section : config_sections()) {
    if (section.help.empty())
      continue;
    const std::string heading = "### `" + std::string(section.name) + "`\n\n";
    const auto at = tables.find(heading);
    ASSERT_NE(at, std::string::npos) << section.name;
    EXPECT_EQ(tables.find(std::string(section.help).substr(0, 40), at), at + heading.size())
        << section.name;
  }
}

TEST(ConfigReference, TheRenderedFileReadsBackAsTheDefaults) {
  const auto parsed = parse_config_yaml(render_default_config_file(), "rendered.yaml");
  ASSERT_FALSE(parsed.error) << parsed.error->what;
  EXPECT_EQ(*parsed.config, Config{});
}

TEST(ConfigReference, EveryKeyIsWhole) {
  std::set<std::string_view> names;
  for (const ConfigKey &key : config_keys()) {
    EXPECT_TRUE(names.insert(key.name).second) << "listed twice: " << key.name;
    EXPECT_FALSE(key.help.empty()) << key.name;
    EXPECT_TRUE(key.read_yaml && key.check && key.show && key.yaml) << key.name;
    EXPECT_TRUE(!key.flag || key.read_text) << key.name << " has a flag but no text reader";
    EXPECT_FALSE(key.check(Config{})) << "default of " << key.name << " fails its own check";
  }
}

// Each key alone in a file, written as the docs show its default, reads back as the defaults:
// the dotted name is the path in the file, and yaml() writes what read_yaml() reads.
TEST(ConfigReference, EachKeyAloneParsesAtItsDottedPath) {
  const Config defaults;
  for (const ConfigKey &key : config_keys()) {
    std::string yaml;
    std::string indent;
    std::string_view rest = key.name;
    for (std::size_t dot = rest.find('.'); dot != std::string_view::npos; dot = rest.find('.')) {
      yaml += indent + std::string(rest.substr(0, dot)) + ":\n";
      indent += "  ";
      rest.remove_prefix(dot + 1);
    }
    yaml += indent + std::string(rest) + ": " + key.yaml(defaults) + "\n";
    const auto parsed = parse_config_yaml(yaml, "one.yaml");
    ASSERT_FALSE(parsed.error) << yaml << parsed.error->what;
    EXPECT_EQ(*parsed.config, defaults) << yaml;
  }
}

TEST(ConfigReference, ValuesShownAreReadBackByFlagsAndTheFile) {
  Config changed;
  changed.scan_interval = std::chrono::milliseconds(1500);
  changed.log_level = "debug";
  changed.cuda.launch_sample_fraction = 0.25;
  changed.cuda.launch_counting = LaunchCounting::adaptive;
  changed.detectors.leak_min_growth_bytes = 3ull << 30;
  changed.stacks.enabled = false;
  for (const ConfigKey &key : config_keys()) {
    if (!key.read_text)
      continue;
    Config read;
    ASSERT_FALSE(key.read_text(key.show(changed), read)) << key.name << " = " << key.show(changed);
    EXPECT_EQ(key.show(read), key.show(changed)) << key.name;
  }
}

TEST(ConfigReference, EveryFlagIsInTheHelpAndSetsItsKey) {
  const std::string usage = usage_text();
  for (const ConfigKey &key : config_keys()) {
    if (!key.flag)
      continue;
    EXPECT_NE(usage.find(std::string(key.flag->name) + " " + std::string(key.flag->placeholder)),
              std::string::npos)
        << key.flag->name;
    const std::string flag(key.flag->name);
    const std::string value = key.show(Config{});
    const char *argv[] = {"neutracerd", flag.c_str(), value.c_str()};
    const auto cli = parse_cli(3, argv);
    ASSERT_TRUE(cli.options) << *cli.error;
    EXPECT_EQ(cli.options->setting(key.name), value);
  }
}

TEST(ConfigReference, UnknownKeysListTheKnownOnesOfTheirLevel) {
  const auto parsed = parse_config_yaml("detectors:\n  leek: {}\n", "t.yaml");
  ASSERT_TRUE(parsed.error);
  EXPECT_NE(parsed.error->what.find(
                "known keys: detectors.leak, detectors.hang, detectors.fragmentation)"),
            std::string::npos)
      << parsed.error->what;
}

} // namespace
} // namespace neutracer
