// SPDX-License-Identifier: Apache-2.0
#pragma once
// Opening and loading a libbpf skeleton, shared by the BPF loaders (CudaTracer, OsTracer).
#include <cerrno>
#include <functional>
#include <string>

#include "common/bpf_errors.h"

namespace neutracer {

// Opens the skeleton, lets `configure` set it up (map sizes, read-only globals, attach types)
// and loads it; the caller owns it once it is returned. On any failure the skeleton is
// destroyed and a TracerError names `name` and, for a refusal of the kernel, `kernel_needs`.
template <typename Skeleton, typename Open, typename Load, typename Destroy>
Skeleton *open_and_load_skeleton(const char *name, Open open, Load load, Destroy destroy,
                                 const std::function<void(Skeleton *)> &configure,
                                 const std::string &kernel_needs) {
  Skeleton *skeleton = open(nullptr);
  if (!skeleton) {
    const int error = errno;
    throw TracerError(TracerError::Reason::other,
                      std::string("cannot open BPF object ") + name + ": " + errno_text(error));
  }
  try {
    configure(skeleton);
    if (const int error = load(skeleton); error != 0)
      throw bpf_load_error(std::string("load BPF object ") + name, error, kernel_needs);
  } catch (...) {
    destroy(skeleton);
    throw;
  }
  return skeleton;
}

} // namespace neutracer
