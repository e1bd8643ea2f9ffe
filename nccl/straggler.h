// SPDX-License-Identifier: Apache-2.0
#pragma once
// The straggler of a communicator on this node (docs/nccl.md): the rank that arrives last at its
// collectives, consistently, so that the others wait for it. Pure: times are passed in.
//
// For each collective that every rank here has called, the wait is the time from the first
// rank's arrival to the last one's, and it is put down to the last. Arrivals are the host's
// calls: a rank that runs ahead of its GPU arrives early, which is what the others' waiting
// looks like from the host.
//
// Each scan tallies the collectives called since the previous one, and the straggler is judged
// over the tallies of the window, each scan weighing the same whatever the job's collective rate
// (a fast job calls more collectives in a second than the arrivals kept). Ranks that run ahead
// of their GPUs take turns at arriving last for seconds at a time (seen on H200s with DDP): the
// straggler must be last at nearly every collective of the whole window, with tallies spread
// over at least half of it, and a median wait (not a mean: a job's set-up makes a few
// collectives with long waits) above the ranks' jitter.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/process_id.h"
#include "nccl/communicators.h"

namespace neutracer {

struct StragglerSettings {
  double window_seconds = 30;
  double min_wait_share = 0.6;  // of all the waits in the window
  double min_last_share = 0.95; // of the window's collectives, each scan weighing the same
  double min_median_wait_seconds = 0.005; // per collective: below, ranks are in step
  std::size_t min_collectives = 10;       // in the window
  std::size_t max_tallies = 1024;         // per communicator: closer scans share one
};

// A rank of a communicator: its process and the communicator's handle there (a process may hold
// several ranks of one communicator, one per GPU it drives; a split's rank number is unknown).
using StragglerRankKey = std::pair<ProcessId, std::uint64_t>;

// The collectives every rank called in one stretch: who came last at each and the waits.
struct StragglerTally {
  std::uint64_t at_ns = 0;
  std::size_t scans = 1; // more than one: scans that share a tally (StragglerSettings::max_tallies)
  std::size_t collectives = 0;
  double median_wait_seconds = 0;
  std::map<StragglerRankKey, std::size_t> last; // collectives where the rank came last
  std::map<StragglerRankKey, double> waited;    // seconds the others waited for it
};

// Tallies the collectives numbered `next` and on that every rank in `ranks` (one communicator's
// ranks on this node) called, and sets `next` past them. Collectives with a lost arrival are
// left out (who came last is not known), and so are those whose last arrival came before
// `since_ns` (a history begun late must not date old collectives to now).
StragglerTally tally_collectives(const std::vector<NcclRank> &ranks, std::uint64_t &next,
                                 std::uint64_t since_ns, std::uint64_t now_ns);

struct Straggler {
  NcclRank rank;
  double wait_share = 0;          // of the window's waiting, each scan weighing the same
  double last_share = 0;          // of the window's collectives it came last at, likewise
  double median_wait_seconds = 0; // per collective in the window, whoever was last
  std::size_t collectives = 0;    // in the window
};

class StragglerHistory {
public:
  explicit StragglerHistory(StragglerSettings settings = {});

  // Tallies communicator `id`'s collectives since the previous call and judges its window.
  // `ranks`: its ranks on this node (joined_communicators). Needs two or more.
  std::optional<Straggler> judge(const std::string &id, const std::vector<NcclRank> &ranks,
                                 std::uint64_t now_ns);
  // Forgets the communicators not in `ids`.
  void keep_only(const std::vector<std::string> &ids);

private:
  struct History {
    std::uint64_t next = 0; // the number of the first collective not tallied yet
    std::deque<StragglerTally> tallies;
  };
  StragglerSettings settings_;
  std::map<std::string, History> histories_;
};

} // namespace neutracer
