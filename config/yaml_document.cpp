// SPDX-License-Identifier: Apache-2.0
#include "config/yaml_document.h"

#include <cstddef>
#include <sstream>
#include <vector>
#include <yaml-cpp/eventhandler.h>

namespace neutracer {
namespace {

// Records where each document starts and where its root node is, and nothing else.
class DocumentMarks : public YAML::EventHandler {
public:
  struct Document {
    YAML::Mark start;
    std::optional<YAML::Mark> root;
  };
  std::vector<Document> documents;

  void OnDocumentStart(const YAML::Mark &mark) override { documents.push_back({mark, {}}); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark &mark, YAML::anchor_t) override { node(mark); }
  void OnAlias(const YAML::Mark &mark, YAML::anchor_t) override { node(mark); }
  void OnScalar(const YAML::Mark &mark, const std::string &, YAML::anchor_t,
                const std::string &) override {
    node(mark);
  }
  void OnSequenceStart(const YAML::Mark &mark, const std::string &, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark &mark, const std::string &, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node(mark);
  }
  void OnMapEnd() override {}

private:
  void node(const YAML::Mark &mark) {
    if (!documents.empty() && !documents.back().root)
      documents.back().root = mark;
  }
};

std::string unexpected_at(const std::string &text, const YAML::Mark &mark) {
  const auto at = static_cast<std::size_t>(mark.pos);
  if (mark.pos < 0 || at >= text.size() || text[at] < ' ' || text[at] > '~')
    return "unexpected content";
  return std::string("unexpected '") + text[at] + "'";
}

} // namespace

std::optional<YAML::Node> load_single_yaml_document(const std::string &text) {
  // First pass: events only, at most three documents, so a parser that stops advancing cannot
  // keep us here. Two documents starting at the same place mean it stopped advancing.
  std::istringstream input(text);
  YAML::Parser parser(input);
  DocumentMarks marks;
  while (marks.documents.size() < 3 && parser.HandleNextDocument(marks)) {
    const auto &documents = marks.documents;
    if (documents.size() >= 2 && documents.back().start.pos == documents.end()[-2].start.pos)
      throw YAML::ParserException(documents.back().start,
                                  unexpected_at(text, documents.back().start));
  }
  if (marks.documents.empty())
    return std::nullopt;
  if (marks.documents.size() > 1) {
    const auto &second = marks.documents[1];
    throw YAML::Exception(second.root.value_or(second.start),
                          "multiple YAML documents are not supported");
  }
  // One document, which the first pass read to its end: YAML::Load parses exactly that.
  return YAML::Load(text);
}

} // namespace neutracer
