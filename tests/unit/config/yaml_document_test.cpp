// SPDX-License-Identifier: Apache-2.0
#include "config/yaml_document.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

#include "config/config.h"

namespace neutracer {
namespace {

// The message of the YAML::Exception (or subclass E) that loading `text` throws.
template <typename E> std::string load_error(const std::string &text, int &line) {
  try {
    load_single_yaml_document(text);
  } catch (const E &error) {
    line = error.mark.line + 1;
    return error.msg;
  }
  ADD_FAILURE() << "no exception for: " << text;
  return "";
}

TEST(LoadSingleYamlDocument, EmptyAndCommentOnlyTextHaveNoDocument) {
  EXPECT_FALSE(load_single_yaml_document("").has_value());
  EXPECT_FALSE(load_single_yaml_document("# only a comment\n\n").has_value());
}

TEST(LoadSingleYamlDocument, ReturnsTheRootOfOneDocument) {
  const auto root = load_single_yaml_document("listen: 127.0.0.1:1\ncuda:\n  a: [1, 2]\n");
  ASSERT_TRUE(root.has_value());
  ASSERT_TRUE(root->IsMap());
  EXPECT_EQ((*root)["listen"].Scalar(), "127.0.0.1:1");
  EXPECT_EQ((*root)["cuda"]["a"].size(), 2u);
}

TEST(LoadSingleYamlDocument, ExplicitDocumentMarkersAreOneDocument) {
  const auto root = load_single_yaml_document("---\nlog_level: debug\n...\n");
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ((*root)["log_level"].Scalar(), "debug");
}

TEST(LoadSingleYamlDocument, SecondDocumentIsRejectedAtItsRoot) {
  int line = 0;
  EXPECT_EQ(load_error<YAML::Exception>("a: 1\n---\nb: 2\n", line),
            "multiple YAML documents are not supported");
  EXPECT_EQ(line, 3);
}

// Each of these made yaml-cpp 0.7's LoadAll loop forever, allocating a document per turn.
TEST(LoadSingleYamlDocument, LoneCommaIsAnErrorNotAnEndlessLoop) {
  int line = 0;
  EXPECT_EQ(load_error<YAML::ParserException>(",", line), "unexpected ','");
  EXPECT_EQ(line, 1);
  EXPECT_EQ(load_error<YAML::ParserException>("a: 1\n,\n", line), "end of map not found");
  EXPECT_EQ(load_error<YAML::ParserException>("\n, 2]\n", line), "unexpected ','");
  EXPECT_EQ(line, 2);
}

TEST(LoadSingleYamlDocument, FuzzerInputThatHungTheConfigParser) {
  // tests/fuzz/corpus/config_yaml/regression_loadall_comma_loop
  int line = 0;
  EXPECT_EQ(load_error<YAML::ParserException>("# cn: [1]\n, 2]\nc$da:\n", line), "unexpected ','");
  EXPECT_EQ(line, 2);
}

// Parses text that made yaml-cpp 0.7's LoadAll loop, under time and memory limits, and exits 0
// when the parser gave the expected error: a regression then fails instead of hanging or
// exhausting the machine's memory.
[[noreturn]] void parse_looping_config_with_limits() {
  const rlimit memory{1ul << 30, 1ul << 30};
  setrlimit(RLIMIT_AS, &memory);
  alarm(10);
  const auto result = parse_config_yaml("# cn: [1]\n, 2]\nc$da:\n", "neutracerd.yaml");
  const bool expected =
      result.error && result.error->what == "neutracerd.yaml:2: invalid YAML: unexpected ','";
  std::exit(expected ? 0 : 1);
}

TEST(LoadSingleYamlDocumentDeathTest, ConfigWithStrayCommaFailsQuickly) {
  EXPECT_EXIT(parse_looping_config_with_limits(), ::testing::ExitedWithCode(0), "");
}

} // namespace
} // namespace neutracer
