// SPDX-License-Identifier: Apache-2.0
#pragma once
// The configuration's reference texts, rendered from the key table (config_keys.h): the shipped
// config/neutracerd.yaml and the key tables of docs/configuration.md. A unit test keeps both
// files equal to what is rendered here (NEUTRACER_UPDATE_GOLDEN=1 rewrites them).
#include <string>

namespace neutracer {

// The whole default config file: every key at its default, with its help as comments.
std::string render_default_config_file();

// Markdown: one table per section (key, default, flag, meaning).
std::string render_config_tables();

} // namespace neutracer
