// SPDX-License-Identifier: Apache-2.0
// docs/architecture.md's layer table against the build: each folder's "links" column must name
// exactly the layers its neutracer_layer(...) call in CMakeLists.txt links, and every layer must
// have a row.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace neutracer {
namespace {

std::string read(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::set<std::string> words(const std::string &text) {
  std::set<std::string> out;
  const std::regex word("[a-z_]+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), word); it != std::sregex_iterator();
       ++it)
    out.insert(it->str());
  return out;
}

// Layer -> the layers it links, from the neutracer_layer(...) calls.
std::map<std::string, std::set<std::string>> build_layers(const std::string &cmake) {
  std::map<std::string, std::set<std::string>> layers;
  const std::regex call(R"(neutracer_layer\(\s*([a-z_]+)([^)]*)\))");
  for (auto it = std::sregex_iterator(cmake.begin(), cmake.end(), call);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    std::string args = (*it)[2];
    if (const auto exclude = args.find("EXCLUDE"); exclude != std::string::npos)
      args.resize(exclude);
    std::set<std::string> links;
    for (const auto &word : words(args))
      if (layers.contains(word)) // a layer may link only layers declared before it
        links.insert(word);
    layers[name] = links;
  }
  return layers;
}

// Folder -> the layers its row's last column names.
std::map<std::string, std::set<std::string>> documented_layers(const std::string &doc,
                                                               const std::set<std::string> &names) {
  std::map<std::string, std::set<std::string>> rows;
  const std::regex row(R"(\n\| `([a-z_]+)/` \|.*\| ([^|\n]*) \|)");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator();
       ++it) {
    std::set<std::string> links;
    for (const auto &word : words((*it)[2]))
      if (names.contains(word))
        links.insert(word);
    rows[(*it)[1]] = links;
  }
  return rows;
}

TEST(ArchitectureDoc, LayerTableMatchesTheBuild) {
  const auto built = build_layers(read(NEUTRACER_SOURCE_DIR "/CMakeLists.txt"));
  ASSERT_GE(built.size(), 15u) << "no neutracer_layer calls found";
  std::set<std::string> names;
  for (const auto &[name, links] : built)
    names.insert(name);
  const auto documented =
      documented_layers(read(NEUTRACER_SOURCE_DIR "/docs/architecture.md"), names);
  for (const auto &[name, links] : built) {
    const auto row = documented.find(name);
    ASSERT_NE(row, documented.end()) << "docs/architecture.md has no row for " << name << "/";
    EXPECT_EQ(row->second, links) << "the links of " << name << "/ differ from CMakeLists.txt";
  }
  for (const auto &[name, links] : documented)
    EXPECT_TRUE(built.contains(name)) << name << "/ is documented but not a layer";
}

} // namespace
} // namespace neutracer
