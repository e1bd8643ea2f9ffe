// SPDX-License-Identifier: Apache-2.0
#include "allocator/torch_allocator_probes.h"

#include <string>

namespace neutracer {
namespace {

constexpr std::size_t kMallocArguments = 4; // ptr, device, size, stream
constexpr std::size_t kFreeArguments = 1;   // ptr
constexpr std::string_view kTorchCudaLibrary = "libc10_cuda.so";

// The notes of one pytorch probe: those with the expected argument count, and the argument
// count of one that had another (to say what was found instead).
struct ProbeSites {
  std::size_t matching = 0;
  std::size_t other = 0;
  std::size_t other_arguments = 0;
};

ProbeSites count_sites(const UsdtNotes &notes, std::string_view name, std::size_t arguments) {
  ProbeSites sites;
  for (const UsdtProbe &probe : notes.probes) {
    if (probe.provider != kTorchProvider || probe.name != name)
      continue;
    if (probe.argument_count() == arguments) {
      ++sites.matching;
    } else {
      ++sites.other;
      sites.other_arguments = probe.argument_count();
    }
  }
  return sites;
}

std::string probe_label(std::string_view name) {
  return std::string(kTorchProvider) + ":" + std::string(name);
}

// Why one probe is unusable; empty when it has a site with the expected argument count.
std::string missing_probe(const ProbeSites &sites, std::string_view name, std::size_t expected) {
  if (sites.matching > 0)
    return {};
  if (sites.other == 0)
    return "no " + probe_label(name) + " static tracepoint";
  return probe_label(name) + " has " + std::to_string(sites.other_arguments) +
         " arguments, expected " + std::to_string(expected);
}

} // namespace

TorchAllocatorProbes find_torch_allocator_probes(const UsdtNotes &notes) {
  TorchAllocatorProbes found;
  if (!notes.error.empty()) {
    found.reason = notes.error;
    return found;
  }
  const ProbeSites malloc_sites = count_sites(notes, kTorchMallocProbe, kMallocArguments);
  const ProbeSites free_sites = count_sites(notes, kTorchFreeProbe, kFreeArguments);
  found.malloc_sites = malloc_sites.matching;
  found.free_sites = free_sites.matching;
  if (malloc_sites.matching + malloc_sites.other + free_sites.matching + free_sites.other == 0) {
    found.reason = "no " + probe_label(kTorchMallocProbe) + "/" + probe_label(kTorchFreeProbe) +
                   " static tracepoints (PyTorch built without them?)";
    if (notes.malformed > 0)
      found.reason += "; " + std::to_string(notes.malformed) + " malformed stapsdt notes";
    return found;
  }
  const std::string malloc_problem =
      missing_probe(malloc_sites, kTorchMallocProbe, kMallocArguments);
  const std::string free_problem = missing_probe(free_sites, kTorchFreeProbe, kFreeArguments);
  if (!malloc_problem.empty() && !free_problem.empty())
    found.reason = malloc_problem + "; " + free_problem;
  else
    found.reason = malloc_problem + free_problem;
  found.usable = found.reason.empty();
  return found;
}

bool is_torch_cuda_library(std::string_view path) {
  // A deleted mapping reads ".../libc10_cuda.so (deleted)": its file name no longer matches,
  // and there is no file left to read notes from.
  const std::size_t slash = path.rfind('/');
  const std::string_view file_name =
      slash == std::string_view::npos ? path : path.substr(slash + 1);
  return file_name == kTorchCudaLibrary;
}

} // namespace neutracer
