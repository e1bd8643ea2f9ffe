// SPDX-License-Identifier: Apache-2.0
#include "config/config_reference.h"

#include "config/config_keys.h"

#include <algorithm>
#include <string_view>
#include <vector>

namespace neutracer {
namespace {

constexpr std::size_t kFileWidth = 96;

// Lines of `help`: paragraphs re-wrapped to `width`, lines starting with two spaces kept.
std::vector<std::string> wrap(std::string_view help, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  const auto flush = [&] {
    if (!line.empty())
      lines.push_back(line);
    line.clear();
  };
  std::size_t start = 0;
  while (start <= help.size() && !help.empty()) {
    const std::size_t end = std::min(help.find('\n', start), help.size());
    const std::string_view text = help.substr(start, end - start);
    if (text.starts_with("  ")) {
      flush();
      lines.emplace_back(text);
    } else {
      std::size_t word_start = 0;
      while (word_start < text.size()) {
        const std::size_t word_end = std::min(text.find(' ', word_start), text.size());
        const std::string_view word = text.substr(word_start, word_end - word_start);
        if (!word.empty()) {
          if (!line.empty() && line.size() + 1 + word.size() > width)
            flush();
          line += (line.empty() ? "" : " ") + std::string(word);
        }
        word_start = word_end + 1;
      }
    }
    start = end + 1;
  }
  flush();
  return lines;
}

std::string comment(std::string_view help, std::size_t indent) {
  std::string out;
  for (const std::string &line : wrap(help, kFileWidth - indent - 2))
    out += std::string(indent, ' ') + "# " + line + "\n";
  return out;
}

std::string_view section_of(std::string_view key) {
  const std::size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : key.substr(0, dot);
}

std::string_view last_part(std::string_view name) {
  const std::size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

std::size_t depth(std::string_view section) {
  if (section.empty())
    return 0;
  return 1 + static_cast<std::size_t>(std::count(section.begin(), section.end(), '.'));
}

std::string_view section_help(std::string_view name) {
  for (const ConfigSection &section : config_sections())
    if (section.name == name)
      return section.help;
  return {};
}

// Markdown table cell: pipes escaped, kept lines set apart as code.
std::string cell(std::string_view help) {
  std::string out;
  for (const std::string &line : wrap(help, std::string::npos)) {
    const bool kept = line.starts_with("  ");
    if (!out.empty())
      out += kept ? "<br>" : " ";
    const std::size_t first = line.find_first_not_of(' ');
    std::string text = kept ? "`" + line.substr(first) + "`" : line;
    for (std::size_t at = text.find('|'); at != std::string::npos; at = text.find('|', at + 2))
      text.replace(at, 1, "\\|");
    out += text;
  }
  return out;
}

bool has_keys_of_its_own(std::string_view section) {
  return std::any_of(config_keys().begin(), config_keys().end(),
                     [&](const ConfigKey &key) { return section_of(key.name) == section; });
}

} // namespace

std::string render_default_config_file() {
  const Config defaults;
  std::string out =
      "# neutracerd configuration.\n"
      "#\n"
      "# Every key is optional; the values below are the built-in defaults, so this file as "
      "shipped\n"
      "# changes nothing. Command-line flags (--listen, --scan-interval, --log-level, "
      "--log-format,\n"
      "# --proc-root) override the values here. Check a change with: neutracerd --check-config\n"
      "# Durations take a unit: ms, s, m or h (e.g. 500ms, 2s, 1.5m, 1h). Every key is described "
      "in\n"
      "# docs/configuration.md too; both are made from the daemon's key table "
      "(config/config_keys.cpp).\n";
  std::string_view open_section;
  for (const ConfigKey &key : config_keys()) {
    const std::string_view section = section_of(key.name);
    // A blank line between keys, none between a section's name and its first key.
    bool after_header = false;
    if (section != open_section) {
      // Open each level of the new section that the previous key was not already in.
      std::string_view common = open_section;
      while (!common.empty() && section != common &&
             !section.starts_with(std::string(common) + "."))
        common = section_of(common);
      for (std::size_t level = depth(common) + 1; level <= depth(section); ++level) {
        std::string_view opened = section;
        while (depth(opened) > level)
          opened = section_of(opened);
        const std::size_t indent = 2 * (level - 1);
        if (level == 1 || !after_header)
          out += "\n";
        out += comment(section_help(opened), indent);
        out += std::string(indent, ' ') + std::string(last_part(opened)) + ":\n";
        after_header = true;
      }
      open_section = section;
    }
    if (!after_header)
      out += "\n";
    const std::size_t indent = 2 * depth(section);
    out += comment(key.help, indent);
    out += std::string(indent, ' ') + std::string(last_part(key.name)) + ": " + key.yaml(defaults) +
           "\n";
  }
  return out;
}

std::string render_config_tables() {
  const Config defaults;
  std::string out;
  std::string_view open_section = "-";
  std::vector<std::string_view> headed; // sections given a heading so far
  const auto heading = [&](std::string_view section) {
    if (!out.empty() && !out.ends_with("\n\n"))
      out += "\n";
    out += "### " +
           (section.empty() ? std::string("Top level") : "`" + std::string(section) + "`") + "\n\n";
    if (const auto help = section_help(section); !help.empty())
      out += cell(help) + "\n\n";
    headed.push_back(section);
  };
  for (const ConfigKey &key : config_keys()) {
    const std::string_view section = section_of(key.name);
    if (section != open_section) {
      // A section with no keys of its own (e.g. `detectors`) is headed, with its help, before
      // its first subsection.
      std::vector<std::string_view> parents;
      for (auto parent = section_of(section); !parent.empty(); parent = section_of(parent))
        parents.insert(parents.begin(), parent);
      for (const auto parent : parents)
        if (std::find(headed.begin(), headed.end(), parent) == headed.end() &&
            !section_help(parent).empty() && !has_keys_of_its_own(parent))
          heading(parent);
      heading(section);
      out += "| Key | Default | Flag | Meaning |\n|---|---|---|---|\n";
      open_section = section;
    }
    std::string flag;
    if (key.flag) {
      flag = "`" + std::string(key.flag->name) + "`";
      if (!key.flag->alias.empty())
        flag += " (`" + std::string(key.flag->alias) + "`)";
    }
    out += "| `" + std::string(key.name) + "` | `" + key.yaml(defaults) + "` | " + flag + " | " +
           cell(key.help) + " |\n";
  }
  return out;
}

} // namespace neutracer
