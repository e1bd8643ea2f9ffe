// SPDX-License-Identifier: Apache-2.0
#include "nvml/nvml_status_text.h"

#include "nvml/nvml_api.h"

namespace neutracer {

std::string nvml_status_text(int status) {
  const char *name = nullptr;
  switch (status) {
  case NT_NVML_SUCCESS:
    name = "NVML_SUCCESS";
    break;
  case NT_NVML_ERROR_UNINITIALIZED:
    name = "NVML_ERROR_UNINITIALIZED";
    break;
  case NT_NVML_ERROR_INVALID_ARGUMENT:
    name = "NVML_ERROR_INVALID_ARGUMENT";
    break;
  case NT_NVML_ERROR_NOT_SUPPORTED:
    name = "NVML_ERROR_NOT_SUPPORTED";
    break;
  case NT_NVML_ERROR_NO_PERMISSION:
    name = "NVML_ERROR_NO_PERMISSION";
    break;
  case NT_NVML_ERROR_NOT_FOUND:
    name = "NVML_ERROR_NOT_FOUND";
    break;
  case NT_NVML_ERROR_INSUFFICIENT_SIZE:
    name = "NVML_ERROR_INSUFFICIENT_SIZE";
    break;
  case NT_NVML_ERROR_DRIVER_NOT_LOADED:
    name = "NVML_ERROR_DRIVER_NOT_LOADED";
    break;
  case NT_NVML_ERROR_TIMEOUT:
    name = "NVML_ERROR_TIMEOUT";
    break;
  case NT_NVML_ERROR_FUNCTION_NOT_FOUND:
    name = "NVML_ERROR_FUNCTION_NOT_FOUND";
    break;
  case NT_NVML_ERROR_GPU_IS_LOST:
    name = "NVML_ERROR_GPU_IS_LOST";
    break;
  case NT_NVML_ERROR_UNKNOWN:
    name = "NVML_ERROR_UNKNOWN";
    break;
  case kNvmlUnrecognisedLayout:
    return "unrecognised running-process entry layout";
  default:
    return "NVML error " + std::to_string(status);
  }
  return std::string(name) + " (" + std::to_string(status) + ")";
}

} // namespace neutracer
