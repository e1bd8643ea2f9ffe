// SPDX-License-Identifier: Apache-2.0
#include "os/os_proc_parsers.h"

#include "common/proc_parsers.h"
#include "common/text.h"

#include <array>

namespace neutracer {
namespace {

template <typename T> Parsed<T> failure(std::string error) {
  return {std::nullopt, std::move(error)};
}

std::string_view trim_line(std::string_view text) { return trim(text, " \t\r\n"); }

// Calls fn(key, value) for each "key: value" line; false when a line has no colon.
template <typename Fn> bool for_each_key_value(std::string_view text, Fn &&fn) {
  while (!text.empty()) {
    const auto end = text.find('\n');
    const auto line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (trim_line(line).empty())
      continue;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos)
      return false;
    fn(trim_line(line.substr(0, colon)), trim_line(line.substr(colon + 1)));
  }
  return true;
}

} // namespace

Parsed<ProcStat> parse_process_stat(std::string_view text) {
  auto stat = parse_proc_stat(text);
  if (!stat)
    return failure<ProcStat>("stat: not in proc(5)'s format (no comm, or a field up to 22 "
                             "missing or not a number)");
  if (!stat->vsize_bytes || !stat->rss_pages)
    return failure<ProcStat>("stat: no vsize and rss (fields 23 and 24)");
  return {std::move(stat), {}};
}

Parsed<ProcIoCounters> parse_proc_io(std::string_view text) {
  ProcIoCounters io;
  struct Key {
    std::string_view name;
    std::uint64_t *target;
    bool required;
    bool seen = false;
  };
  std::array<Key, 7> keys = {{{"rchar", &io.rchar, true},
                              {"wchar", &io.wchar, true},
                              {"syscr", &io.syscr, true},
                              {"syscw", &io.syscw, true},
                              {"read_bytes", &io.read_bytes, true},
                              {"write_bytes", &io.write_bytes, true},
                              {"cancelled_write_bytes", &io.cancelled_write_bytes, false}}};
  std::string error;
  const bool lines_ok =
      for_each_key_value(text, [&](std::string_view name, std::string_view value) {
        for (auto &key : keys) {
          if (key.name != name)
            continue;
          const auto number = parse_number<std::uint64_t>(value);
          if (!number) {
            if (error.empty())
              error = "io: bad value for " + std::string(name) + ": '" + std::string(value) + "'";
            return;
          }
          *key.target = *number;
          key.seen = true;
        }
      });
  if (!lines_ok)
    return failure<ProcIoCounters>("io: a line without 'key: value'");
  if (!error.empty())
    return failure<ProcIoCounters>(error);
  for (const auto &key : keys)
    if (key.required && !key.seen)
      return failure<ProcIoCounters>("io: missing " + std::string(key.name));
  return {io, {}};
}

Parsed<ProcStatusFields> parse_proc_status(std::string_view text) {
  ProcStatusFields status;
  bool threads_seen = false;
  std::string error;
  const auto number = [&](std::string_view name, std::string_view value,
                          std::uint64_t multiplier) -> std::optional<std::uint64_t> {
    std::string_view digits = value;
    if (multiplier != 1) {
      if (!digits.ends_with("kB")) {
        if (error.empty())
          error = "status: " + std::string(name) + " without kB: '" + std::string(value) + "'";
        return std::nullopt;
      }
      digits = trim_line(digits.substr(0, digits.size() - 2));
    }
    const auto parsed = parse_number<std::uint64_t>(digits);
    if (!parsed) {
      if (error.empty())
        error = "status: bad value for " + std::string(name) + ": '" + std::string(value) + "'";
      return std::nullopt;
    }
    return *parsed * multiplier;
  };
  // Other lines (Name, Cpus_allowed_list, ...) are free text; only the ones used are checked.
  for (std::string_view rest = text; !rest.empty();) {
    const auto end = rest.find('\n');
    const auto line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos)
      continue;
    const auto name = trim_line(line.substr(0, colon));
    const auto value = trim_line(line.substr(colon + 1));
    if (name == "VmRSS") {
      status.vm_rss_bytes = number(name, value, 1024);
    } else if (name == "VmSize") {
      status.vm_size_bytes = number(name, value, 1024);
    } else if (name == "Threads") {
      const auto threads = number(name, value, 1);
      threads_seen = threads.has_value();
      status.threads = threads.value_or(0);
    } else if (name == "voluntary_ctxt_switches") {
      status.voluntary_ctxt_switches = number(name, value, 1);
    } else if (name == "nonvoluntary_ctxt_switches") {
      status.nonvoluntary_ctxt_switches = number(name, value, 1);
    }
  }
  if (!error.empty())
    return failure<ProcStatusFields>(error);
  if (!threads_seen)
    return failure<ProcStatusFields>("status: no Threads line");
  return {status, {}};
}

Parsed<std::vector<std::uint32_t>> parse_cpu_list(std::string_view text) {
  constexpr std::uint64_t kMaxCpus = 65536;
  std::vector<std::uint32_t> cpus;
  text = trim_line(text);
  while (!text.empty()) {
    const auto comma = text.find(',');
    const auto item = trim_line(text.substr(0, comma));
    text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
    const auto dash = item.find('-');
    const auto first = parse_number<std::uint64_t>(item.substr(0, dash));
    const auto last =
        dash == std::string_view::npos ? first : parse_number<std::uint64_t>(item.substr(dash + 1));
    if (!first || !last || *last < *first || *last >= kMaxCpus)
      return failure<std::vector<std::uint32_t>>("cpu list: bad range '" + std::string(item) + "'");
    if (cpus.size() + (*last - *first + 1) > kMaxCpus)
      return failure<std::vector<std::uint32_t>>("cpu list: more than 65536 CPUs");
    for (auto cpu = *first; cpu <= *last; ++cpu)
      cpus.push_back(static_cast<std::uint32_t>(cpu));
  }
  return {cpus, {}};
}

} // namespace neutracer
