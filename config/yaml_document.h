// SPDX-License-Identifier: Apache-2.0
#pragma once
// Loads the one YAML document of a config file without YAML::LoadAll: Debian 12's yaml-cpp 0.7
// loops forever in LoadAll on some invalid text (a lone ',', jbeder/yaml-cpp#1040), adding a
// null document per turn until memory runs out. Found by tests/fuzz/config_yaml_fuzzer.
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

namespace neutracer {

// The document's root node, or nullopt when the text holds no document (empty, comments only).
// Throws YAML::ParserException for invalid YAML, including text the parser cannot get past, and
// YAML::Exception ("multiple YAML documents are not supported") at a second document's root.
std::optional<YAML::Node> load_single_yaml_document(const std::string &text);

} // namespace neutracer
