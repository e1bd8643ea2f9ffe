// SPDX-License-Identifier: Apache-2.0
#include "nccl/ras_status.h"

#include <nlohmann/json.hpp>
#include <regex>

namespace neutracer {
namespace {

using nlohmann::json;

template <typename T> T field(const json &object, const char *name, T otherwise) {
  const auto found = object.find(name);
  if (found == object.end() || found->is_null())
    return otherwise;
  try {
    return found->get<T>();
  } catch (const json::exception &) {
    return otherwise;
  }
}

// Where a rank runs, as both its entries (answering or missing) say it.
template <typename Rank> Rank placed(const json &entry) {
  Rank rank;
  rank.rank = field(entry, "rank", -1);
  rank.host = field<std::string>(entry, "host", "");
  rank.pid = field(entry, "pid", -1);
  return rank;
}

RasRank rank_of(const json &entry) {
  auto rank = placed<RasRank>(entry);
  rank.cuda_device = field(entry, "cuda_dev", -1);
  if (const auto status = entry.find("status"); status != entry.end() && status->is_object()) {
    rank.init_state = field(*status, "init_state", 0);
    rank.async_error = field(*status, "async_error", 0);
    rank.aborted = field(*status, "abort_flag", false);
  }
  if (const auto counts = entry.find("collective_counts");
      counts != entry.end() && counts->is_object())
    for (const auto &[op, count] : counts->items())
      if (count.is_number_unsigned() ||
          (count.is_number_integer() && count.get<std::int64_t>() >= 0))
        rank.collectives[op] = count.get<std::uint64_t>();
  return rank;
}

RasMissingRank missing_of(const json &entry) {
  auto rank = placed<RasMissingRank>(entry);
  if (const auto status = entry.find("status"); status != entry.end() && status->is_object()) {
    rank.unresponsive = field(*status, "unresponsive", false);
    rank.considered_dead = field(*status, "considered_dead", false);
  }
  return rank;
}

} // namespace

RasStatusParse parse_ras_status(std::string_view reply) {
  const auto start = reply.find('{');
  if (start == std::string_view::npos)
    return {std::nullopt, "no JSON document in the reply"};
  std::string text(reply.substr(start));
  // NCCL 2.28.7-2.28.9: `"nvml_dev": 1 "status"` in missing ranks.
  static const std::regex kMissingComma(R"re(("nvml_dev"\s*:\s*-?\d+)(\s*"status"))re");
  text = std::regex_replace(text, kMissingComma, "$1,$2");
  const auto document = json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.is_object())
    return {std::nullopt, "the reply is not a JSON object"};
  RasStatus status;
  status.nccl_version = field<std::string>(document, "nccl_version", "");
  if (const auto ras = document.find("ras"); ras != document.end() && ras->is_object()) {
    status.collection_seconds = field(*ras, "collection_time_sec", 0.0);
    status.timeouts = field<std::uint64_t>(*ras, "timeouts_count", 0);
  }
  const auto comms = document.find("communicators");
  if (comms == document.end() || !comms->is_array())
    return {std::nullopt, "no communicators array"};
  for (const auto &entry : *comms) {
    if (!entry.is_object())
      continue;
    RasCommunicator comm;
    comm.hash = field<std::string>(entry, "hash", "");
    comm.secondary_hash = field<std::string>(entry, "secondary_hash", "");
    comm.size = field(entry, "size", 0);
    if (comm.size <= 0 || comm.hash.empty() || comm.hash == "0x0")
      continue; // still initialising: NCCL leaves such entries zeroed
    if (const auto ranks = entry.find("ranks"); ranks != entry.end() && ranks->is_array())
      for (const auto &rank : *ranks)
        if (rank.is_object())
          comm.ranks.push_back(rank_of(rank));
    if (const auto missing = entry.find("missing_ranks");
        missing != entry.end() && missing->is_array())
      for (const auto &rank : *missing)
        if (rank.is_object())
          comm.missing.push_back(missing_of(rank));
    status.communicators.push_back(std::move(comm));
  }
  return {std::move(status), {}};
}

} // namespace neutracer
