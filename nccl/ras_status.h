// SPDX-License-Identifier: Apache-2.0
#pragma once
// NCCL's RAS status (`SET FORMAT json`, then `STATUS`, on the port every NCCL >= 2.28.7 process
// serves, localhost:28028 by default): every communicator of the job, its ranks with their
// collective counts and errors, and the ranks missing, whichever node they run on. Pure: parses
// the reply text.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace neutracer {

struct RasRank {
  int rank = -1;
  std::string host; // an IP address; "unknown" when NCCL could not place it
  int pid = -1;
  int cuda_device = -1;
  int init_state = 0;  // 0 ready, 7 still initialising, else an ncclResult_t error
  int async_error = 0; // an ncclResult_t, 0 none
  bool aborted = false;
  std::map<std::string, std::uint64_t> collectives; // launched, by operation ("AllReduce", ...)
};

struct RasMissingRank {
  int rank = -1;
  std::string host;
  int pid = -1;
  bool unresponsive = false;    // did not answer this status query
  bool considered_dead = false; // NCCL declared it dead (unreachable for 60 s)
};

struct RasCommunicator {
  std::string hash; // with secondary_hash, unique in the job
  std::string secondary_hash;
  int size = 0;
  std::vector<RasRank> ranks;
  std::vector<RasMissingRank> missing;
};

struct RasStatus {
  std::string nccl_version;
  std::vector<RasCommunicator> communicators;
  double collection_seconds = 0;
  std::uint64_t timeouts = 0;
};

struct RasStatusParse {
  std::optional<RasStatus> status;
  std::string error; // why not, when status is empty
};

// `reply`: what the server sent until it closed the connection, "OK" lines of earlier commands
// included. Mends the missing comma NCCL 2.28.7 to 2.28.9 leave after a missing rank's nvml_dev;
// leaves out the zeroed communicators NCCL writes while one is still initialising.
RasStatusParse parse_ras_status(std::string_view reply);

} // namespace neutracer
