// SPDX-License-Identifier: Apache-2.0
#pragma once
// The straggler of a communicator on this node (docs/nccl.md): the rank that arrives last at its
// collectives, consistently, so that the others wait for it. Pure: times are passed in.
//
// For each collective that every rank here has called within the window, the wait is the time
// from the first rank's arrival to the last one's, and it is put down to the last. A rank's wait
// share is the part of all those waits put down to it. Arrivals are the host's calls: a rank
// that runs ahead of its GPU arrives early, which is what the others' waiting looks like from the
// host, and the latest caller is still the one they wait for.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "nccl/communicators.h"

namespace neutracer {

struct StragglerSettings {
  double window_seconds = 30;
  double min_wait_share = 0.6;          // of all the waits in the window
  double min_mean_wait_seconds = 0.005; // per collective: below, ranks are in step
  std::size_t min_collectives = 10;     // in the window
};

struct Straggler {
  NcclRank rank;
  double wait_share = 0;
  double mean_wait_seconds = 0; // per collective in the window, whoever was last
  std::size_t collectives = 0;  // in the window
};

// `ranks`: one communicator's ranks on this node (joined_communicators). Needs two or more.
std::optional<Straggler> find_straggler(const std::vector<NcclRank> &ranks, std::uint64_t now_ns,
                                        const StragglerSettings &settings);

} // namespace neutracer
