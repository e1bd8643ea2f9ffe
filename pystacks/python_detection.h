// SPDX-License-Identifier: Apache-2.0
#pragma once
// Finds the CPython interpreter a process runs, from its maps and the interpreter file's ELF
// symbols: libpython3.X.so, or a python executable linked statically; its version, where
// _PyRuntime is, the offsets of that version, and a check that they fit the live process.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/process_id.h"
#include "common/procfs.h"
#include "pystacks/process_memory.h"
#include "pystacks/python_process.h"

namespace neutracer {

// A file mapped by the process that may hold the interpreter.
struct PythonInterpreterFile {
  std::string path;             // as the process maps it
  std::uint64_t load_start = 0; // start of its mapping of file offset 0
  std::uint64_t load_end = 0;
  bool library = false; // libpython3.X.so (tried before executables)
  std::optional<PythonVersion> version_from_name;
  bool deleted = false;
};

// The candidates in a maps file's text: libpython3.X.so first, then files named python*.
// Pure, for fixtures.
std::vector<PythonInterpreterFile> python_interpreter_files(std::string_view maps_text);

struct PythonDetection {
  std::optional<PythonProcess> process;
  // Why there is none: "no Python interpreter mapped", "CPython 3.8 is not supported", ...
  std::string error;
  // Ask again later: the interpreter is mapped but not initialised yet (no interpreter or
  // thread state), or a check that reads moving state (live thread ids, the innermost frames)
  // missed, which a running process can make happen once.
  bool retry_later = false;
  // Notes on the way (3.13's debug offsets unusable and the built-in table used instead).
  std::string note;
};

// Every symbol detect_python looks up in the interpreter file.
struct PythonSymbols {
  std::uint64_t runtime = 0; // _PyRuntime, link-time address
  std::uint64_t version = 0; // Py_Version (3.11+), 0 when absent
  std::uint64_t code_type = 0, unicode_type = 0, bytes_type = 0;
  std::uint64_t first_load_address = 0;
};

// From the symbols and the live memory: the version (Py_Version wins over the file name), the
// offsets (3.13: _PyRuntime.debug_offsets when usable), and the layout check. Kept apart from
// the file reading so that tests run it on fake memory.
PythonDetection describe_python(const ProcessMemory &memory, const ProcessId &id,
                                const PythonInterpreterFile &file, const PythonSymbols &symbols,
                                const std::vector<int> &live_thread_ids);

// The whole detection for a live process (reads /proc/<pid>/maps, the interpreter file, and the
// process's memory).
PythonDetection detect_python(const ProcFs &procfs, const ProcessId &id,
                              const ProcessMemory &memory);

} // namespace neutracer
