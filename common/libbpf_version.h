// SPDX-License-Identifier: Apache-2.0
#pragma once
// The libbpf the daemon runs with, for neutracer_build_info: the shared library can be newer
// than the headers it was built against.
#include <string>

namespace neutracer {

// "v1.1" (libbpf_version_string()).
std::string libbpf_version();

} // namespace neutracer
