// SPDX-License-Identifier: Apache-2.0
// Fuzzes the container id and Slurm job extraction from /proc/<pid>/cgroup. Cgroup names are
// chosen by whoever creates the cgroup (container runtimes, users with delegated cgroups).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "containers/container_identity.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

namespace {

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  const auto id = neutracer::container_identity_from_cgroup(text).id;
  require(id.empty() || id.size() == 64, "an id has 64 characters");
  for (const char c : id)
    require(is_lower_hex(c), "an id is lower-case hex");
  require(id.empty() || text.find(id) != std::string_view::npos, "the id is in the text");

  const auto job = neutracer::slurm_job_from_cgroup(text);
  require(job.size() <= 10, "a Slurm job id has at most 10 digits");
  for (const char c : job)
    require(c >= '0' && c <= '9', "a Slurm job id is decimal");
  require(job.empty() || text.find("/job_" + job) != std::string_view::npos,
          "the job directory is in the text");
  require(neutracer::container_identity_from_cgroup(text).slurm_job == job,
          "the identity carries the same job");
  return 0;
}
