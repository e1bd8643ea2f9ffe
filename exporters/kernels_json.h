#pragma once
// JSON view of kernel names per process: the full demangled names behind the short labels.
#include <string>

#include "cuda/cuda_state.h"

namespace neutracer {

std::string kernels_json(const CudaState &state);

} // namespace neutracer
