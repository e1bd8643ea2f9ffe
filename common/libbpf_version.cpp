// SPDX-License-Identifier: Apache-2.0
#include "common/libbpf_version.h"

#include <bpf/libbpf.h>

namespace neutracer {

std::string libbpf_version() {
  const char *version = libbpf_version_string();
  return version != nullptr ? version : "unknown";
}

} // namespace neutracer
