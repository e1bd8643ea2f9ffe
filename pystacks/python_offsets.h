// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where a Python frame walk finds what it reads, per CPython minor version (3.9-3.13): the
// thread list, each thread's current frame, a frame's code and instruction, a code object's
// names and line table, and how str and bytes objects hold their characters.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "bpf/neutracer_abi.h"
#include "pystacks/line_table.h"
#include "pystacks/python_version.h"

namespace neutracer {

// What a frame's instruction field holds.
enum class InstructionKind {
  kLastiBytes, // 3.9: int f_lasti, a byte offset (-1 before the first instruction)
  kLastiUnits, // 3.10: int f_lasti, in two-byte code units
  kPointer,    // 3.11+: prev_instr / instr_ptr, a _Py_CODEUNIT pointer into the code
};

constexpr std::uint32_t kNoField = NT_PYTHON_NO_FIELD;

struct PythonOffsets {
  PythonVersion version;
  bool from_debug_offsets = false; // 3.13: read from _PyRuntime.debug_offsets

  // _PyRuntimeState
  std::uint32_t runtime_interpreters_head = 0;
  // PyInterpreterState
  std::uint32_t interp_next = 0;
  std::uint32_t interp_threads_head = 0;
  // PyThreadState
  std::uint32_t thread_next = 0;
  std::uint32_t thread_interp = 0;
  std::uint32_t thread_pthread_id = 0;           // thread_id: pthread_self() of the thread
  std::uint32_t thread_native_id = kNoField;     // native_thread_id: the TID (3.11+)
  std::uint32_t thread_frame = 0;                // frame / cframe / current_frame
  std::uint32_t cframe_current_frame = kNoField; // _PyCFrame.current_frame (3.11, 3.12)
  // PyFrameObject (3.9, 3.10) / _PyInterpreterFrame (3.11+)
  std::uint32_t frame_previous = 0;
  std::uint32_t frame_code = 0;
  std::uint32_t frame_instr = 0;
  InstructionKind instr_kind = InstructionKind::kPointer;
  std::uint32_t frame_owner = kNoField;
  std::uint32_t frame_owner_cstack = kNoField; // owner value of the C stack's entry frames
  // PyCodeObject
  std::uint32_t code_filename = 0;
  std::uint32_t code_name = 0;
  std::uint32_t code_qualname = kNoField; // 3.11+
  std::uint32_t code_firstlineno = 0;
  std::uint32_t code_linetable = 0;       // co_lnotab (3.9) / co_linetable
  std::uint32_t code_adaptive = kNoField; // co_code_adaptive: the first code unit (3.11+)
  LineTableFormat line_format = LineTableFormat::kLocations311;
  // PyObject, PyBytesObject, PyASCIIObject / PyCompactUnicodeObject
  std::uint32_t object_type = 8;
  std::uint32_t bytes_size = 16;
  std::uint32_t bytes_data = 32;
  std::uint32_t unicode_length = 16;
  std::uint32_t unicode_state = 32;
  std::uint32_t unicode_ascii_size = 48;   // sizeof(PyASCIIObject): compact ASCII data follows
  std::uint32_t unicode_compact_size = 72; // sizeof(PyCompactUnicodeObject): other compact data
};

// The built-in table, for release builds (no Py_DEBUG, no Py_TRACE_REFS, not free-threaded) of
// x86-64 and other LP64 Linux builds; nullopt for a version outside 3.9-3.13.
std::optional<PythonOffsets> builtin_offsets(const PythonVersion &version);

// Size of 3.13's _Py_DebugOffsets, the first member of _PyRuntime.
constexpr std::size_t kDebugOffsetsSize = 584;

// Offsets from the _Py_DebugOffsets block at the start of a 3.13 _PyRuntime (`bytes` holds at
// least kDebugOffsetsSize bytes read from there). The cookie, version and every offset are
// checked: an error names what did not fit, and the caller falls back to builtin_offsets.
struct DebugOffsetsResult {
  std::optional<PythonOffsets> offsets;
  std::string error;
};
DebugOffsetsResult offsets_from_debug_offsets(std::span<const std::uint8_t> bytes);

// Whether the frame fields sit where the kernel walk reads them: within the frame's first
// NT_PYTHON_FRAME_WINDOW bytes, pointers 8-aligned, f_lasti 4-aligned.
bool frame_fields_fit_window(const PythonOffsets &offsets);

// The BPF side's copy (struct nt_python_offsets), for the process whose _PyRuntime is at
// runtime_address and that started start_ticks clock ticks after boot (0: any process of
// that PID).
nt_python_offsets to_abi_offsets(const PythonOffsets &offsets, std::uint64_t runtime_address,
                                 std::uint64_t start_ticks, std::uint64_t ns_per_tick);

} // namespace neutracer
