// SPDX-License-Identifier: Apache-2.0
#pragma once
// JSON view of kernel names per process: the full demangled names behind the short labels.
#include <string>

#include "cuda/cuda_state.h"

namespace neutracer {

std::string kernels_json(const CudaState &state);
// The same document gzip-compressed, compressed as it is written: the text is never held whole.
std::string kernels_json_gzip(const CudaState &state);

} // namespace neutracer
