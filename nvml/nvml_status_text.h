// SPDX-License-Identifier: Apache-2.0
#pragma once
// Names NVML return codes for log lines. Pure.
#include <string>

namespace neutracer {

// "NVML_ERROR_NOT_SUPPORTED (3)"; codes without a name here read "NVML error 27".
std::string nvml_status_text(int status);

} // namespace neutracer
