#include "exposition/exposition.h"

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

void write_labels(const Labels &labels, const std::pair<std::string_view, double> *le,
                  std::string &out) {
  if (labels.empty() && le == nullptr) {
    return;
  }
  out += '{';
  bool first = true;
  for (const auto &[key, value] : labels) {
    if (!first) {
      out += ',';
    }
    first = false;
    out += key;
    out += "=\"";
    write_label_value_escaped(value, out);
    out += '"';
  }
  if (le != nullptr) {
    if (!first) {
      out += ',';
    }
    // le values never need escaping: they are numbers or +Inf.
    out += le->first;
    out += "=\"";
    write_value(le->second, out);
    out += '"';
  }
  out += '}';
}

void write_histogram(const std::string &name, const HistogramSample &hist, std::string &out) {
  const std::string bucket_name = name + "_bucket";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < hist.upper_bounds.size(); ++i) {
    const double bound = hist.upper_bounds[i];
    // The +Inf bucket is always derived from `count` below; skip a caller-supplied one so it
    // is not emitted twice.
    if (std::isinf(bound) && bound > 0) {
      continue;
    }
    // Tolerate a short bucket_counts vector rather than reading past its end.
    if (i < hist.bucket_counts.size()) {
      cumulative += hist.bucket_counts[i];
    }
    const std::pair<std::string_view, double> le{"le", bound};
    out += bucket_name;
    write_labels(hist.labels, &le, out);
    out += ' ';
    write_integer(cumulative, out);
    out += '\n';
  }
  const std::pair<std::string_view, double> le_inf{"le", HUGE_VAL};
  out += bucket_name;
  write_labels(hist.labels, &le_inf, out);
  out += ' ';
  write_integer(hist.count, out);
  out += '\n';

  out += name;
  out += "_sum";
  write_labels(hist.labels, nullptr, out);
  out += ' ';
  write_value(hist.sum, out);
  out += '\n';

  out += name;
  out += "_count";
  write_labels(hist.labels, nullptr, out);
  out += ' ';
  write_integer(hist.count, out);
  out += '\n';
}

} // namespace

void render_text(const std::vector<MetricFamily> &families, std::string &out) {
  for (const auto &family : families) {
    out += "# HELP ";
    out += family.name;
    out += ' ';
    write_help_escaped(family.help, out);
    out += '\n';
    out += "# TYPE ";
    out += family.name;
    out += ' ';
    out += type_name(family.type);
    out += '\n';
    if (family.type == MetricType::histogram) {
      for (const auto &hist : family.histograms) {
        write_histogram(family.name, hist, out);
      }
      continue;
    }
    for (const auto &sample : family.samples) {
      out += family.name;
      write_labels(sample.labels, nullptr, out);
      out += ' ';
      write_value(sample.value, out);
      out += '\n';
    }
  }
}

void render_text(const std::vector<MetricFamily> &families, std::ostream &out) {
  std::string text;
  render_text(families, text);
  out << text;
}

} // namespace neutracer
