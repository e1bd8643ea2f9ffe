// SPDX-License-Identifier: Apache-2.0
#pragma once
// A process found to run CPython: which interpreter, where its runtime state lives, and the
// offsets of its version (pystacks/python_detection.h finds it).
#include <cstdint>
#include <string>

#include "common/process_id.h"
#include "pystacks/python_objects.h"
#include "pystacks/python_offsets.h"
#include "pystacks/python_version.h"

namespace neutracer {

struct PythonProcess {
  ProcessId id;
  std::string interpreter_path; // libpython3.X.so or the python executable, as the process maps it
  PythonVersion version;
  std::uint64_t runtime_address = 0; // &_PyRuntime in the process
  PythonOffsets offsets;
  PythonTypeAddresses types;
};

} // namespace neutracer
