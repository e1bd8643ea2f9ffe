// SPDX-License-Identifier: Apache-2.0
#include "exposition/text_sink.h"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <string_view>
#include <system_error>

#include "exposition/utf8_repair.h"

namespace neutracer {
namespace {

std::string_view type_name(MetricType type) {
  switch (type) {
  case MetricType::counter:
    return "counter";
  case MetricType::gauge:
    return "gauge";
  case MetricType::histogram:
    return "histogram";
  case MetricType::untyped:
    return "untyped";
  }
  return "untyped";
}

// HELP escapes only backslash and newline; quotes are legal there per the spec.
void write_help_escaped(std::string_view text, std::string &out) {
  std::string repaired; // invalid UTF-8 would make Prometheus refuse the whole scrape
  for (char c : as_valid_utf8(text, repaired)) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

void write_label_value_escaped(std::string_view text, std::string &out) {
  std::string repaired; // comm and kernel names are bytes from traced processes, not always UTF-8
  for (char c : as_valid_utf8(text, repaired)) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

// Integers go through to_chars rather than operator<< so that a caller's stream locale or
// format flags (grouping, hex, showpos) cannot corrupt the exposition.
template <typename Int> void write_integer(Int value, std::string &out) {
  char buf[32];
  const auto result = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, static_cast<std::size_t>(result.ptr - buf));
}

void write_value(double value, std::string &out) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += (value > 0 ? "+Inf" : "-Inf");
    return;
  }
  // [-2^63, 2^63) is exactly the range where a whole double converts to int64 without UB.
  constexpr double two_pow_63 = 9223372036854775808.0;
  if (value == std::trunc(value) && value >= -two_pow_63 && value < two_pow_63) {
    write_integer(static_cast<std::int64_t>(value), out);
    return;
  }
  // Shortest representation that parses back to the same double, in %g style as Go's client
  // writes it ("0.0001", "6.4e-05"): le="0.0001" then names the same bucket on every exporter.
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::general);
  if (result.ec == std::errc{}) {
    out.append(buf, static_cast<std::size_t>(result.ptr - buf));
  } else {
    out += "NaN"; // Unreachable with a 64-byte buffer; keeps the line well-formed.
  }
}

void write_label(std::string_view name, std::string_view value, bool &first, std::string &out) {
  if (!first)
    out += ',';
  first = false;
  out += name;
  out += "=\"";
  write_label_value_escaped(value, out);
  out += '"';
}

// {common..., own..., le="bound"}; nothing at all without labels.
void write_labels(const Labels &common, std::initializer_list<LabelView> own, const double *le,
                  std::string &out) {
  if (common.empty() && own.size() == 0 && le == nullptr)
    return;
  out += '{';
  bool first = true;
  for (const auto &[name, value] : common)
    write_label(name, value, first, out);
  for (const auto &[name, value] : own)
    write_label(name, value, first, out);
  if (le != nullptr) {
    if (!first)
      out += ',';
    // le values never need escaping: they are numbers or +Inf.
    out += "le=\"";
    write_value(*le, out);
    out += '"';
  }
  out += '}';
}

} // namespace

void TextSink::family(std::string_view name, std::string_view help, MetricType type) {
  name_ = name;
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  write_help_escaped(help, out_);
  out_ += '\n';
  out_ += "# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type_name(type);
  out_ += '\n';
}

void TextSink::sample(const Labels &common, std::initializer_list<LabelView> own, double value) {
  out_ += name_;
  write_labels(common, own, nullptr, out_);
  out_ += ' ';
  write_value(value, out_);
  out_ += '\n';
}

void TextSink::histogram(const Labels &common, std::initializer_list<LabelView> own,
                         const HistogramCounts &counts) {
  // One line: NAME SUFFIX {labels[, le]} VALUE.
  const auto line = [&](std::string_view suffix, const double *le, auto write) {
    out_ += name_;
    out_ += suffix;
    write_labels(common, own, le, out_);
    out_ += ' ';
    write(out_);
    out_ += '\n';
  };
  const auto integer = [](std::uint64_t value) {
    return [value](std::string &out) { write_integer(value, out); };
  };
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < counts.upper_bounds.size(); ++i) {
    const double bound = counts.upper_bounds[i];
    // The +Inf bucket is always derived from `count` below; skip a caller-supplied one so it
    // is not emitted twice.
    if (std::isinf(bound) && bound > 0)
      continue;
    // Tolerate a short bucket_counts span rather than reading past its end.
    if (i < counts.bucket_counts.size())
      cumulative += counts.bucket_counts[i];
    line("_bucket", &bound, integer(cumulative));
  }
  const double inf = HUGE_VAL;
  line("_bucket", &inf, integer(counts.count));
  line("_sum", nullptr, [&counts](std::string &out) { write_value(counts.sum, out); });
  line("_count", nullptr, integer(counts.count));
}

} // namespace neutracer
