// SPDX-License-Identifier: Apache-2.0
#include "pystacks/python_offsets.h"

#include <cstring>

namespace neutracer {
namespace {

// Each version's numbers were read from that version's own headers (offsetof over a release
// build's structs), and are checked against live interpreters of each version by
// tests/privileged/py_frames/python_frames_bpf_test.cpp.

// 3.9: _PyRuntimeState (pycore_runtime.h), PyInterpreterState (pycore_interp.h), PyThreadState
// (cpython/pystate.h), PyFrameObject (cpython/frameobject.h), PyCodeObject (cpython/code.h).
PythonOffsets offsets_3_9() {
  PythonOffsets o;
  o.runtime_interpreters_head = 32; // interpreters.head
  o.interp_next = 0;
  o.interp_threads_head = 8; // tstate_head
  o.thread_next = 8;
  o.thread_interp = 16;
  o.thread_pthread_id = 176; // thread_id
  o.thread_frame = 24;       // frame
  o.frame_previous = 24;     // f_back
  o.frame_code = 32;         // f_code
  o.frame_instr = 104;       // f_lasti
  o.instr_kind = InstructionKind::kLastiBytes;
  o.code_filename = 104;
  o.code_name = 112;
  o.code_firstlineno = 40;
  o.code_linetable = 120; // co_lnotab
  o.line_format = LineTableFormat::kLnotab;
  o.unicode_ascii_size = 48;   // PyASCIIObject still has wstr
  o.unicode_compact_size = 72; // and PyCompactUnicodeObject wstr_length
  return o;
}

// 3.10: as 3.9 but for PyFrameObject.f_lasti (now in code units) and co_linetable.
PythonOffsets offsets_3_10() {
  PythonOffsets o = offsets_3_9();
  o.frame_instr = 96; // f_lasti
  o.instr_kind = InstructionKind::kLastiUnits;
  o.code_linetable = 120; // co_linetable
  o.line_format = LineTableFormat::kLinetable310;
  return o;
}

// 3.11: PyInterpreterState.threads.head, PyThreadState.cframe -> _PyCFrame.current_frame,
// _PyInterpreterFrame (pycore_frame.h), PyCodeObject with co_qualname and co_code_adaptive.
PythonOffsets offsets_3_11() {
  PythonOffsets o;
  o.runtime_interpreters_head = 40;
  o.interp_next = 0;
  o.interp_threads_head = 16;
  o.thread_next = 8;
  o.thread_interp = 16;
  o.thread_pthread_id = 152;
  o.thread_native_id = 160;
  o.thread_frame = 56;        // cframe
  o.cframe_current_frame = 8; // _PyCFrame.current_frame
  o.frame_previous = 48;
  o.frame_code = 32;  // f_code
  o.frame_instr = 56; // prev_instr
  o.instr_kind = InstructionKind::kPointer;
  o.frame_owner = 69; // no C-stack entry frames in 3.11: is_entry flags the eval loop's first
  o.code_filename = 112;
  o.code_name = 120;
  o.code_qualname = 128;
  o.code_firstlineno = 72;
  o.code_linetable = 136;
  o.code_adaptive = 184;
  o.line_format = LineTableFormat::kLocations311;
  o.unicode_ascii_size = 48;
  o.unicode_compact_size = 72;
  return o;
}

// 3.12: as 3.11 but _PyCFrame.current_frame and _PyInterpreterFrame.f_code first, the C stack's
// entry frames (owner FRAME_OWNED_BY_CSTACK = 3), PyASCIIObject without wstr.
PythonOffsets offsets_3_12() {
  PythonOffsets o = offsets_3_11();
  o.interp_threads_head = 72;
  o.thread_pthread_id = 136;
  o.thread_native_id = 144;
  o.cframe_current_frame = 0;
  o.frame_previous = 8;
  o.frame_code = 0; // f_code
  o.frame_owner = 70;
  o.frame_owner_cstack = 3;
  o.code_firstlineno = 68;
  o.code_adaptive = 192;
  o.unicode_ascii_size = 40;
  o.unicode_compact_size = 56;
  return o;
}

// 3.13 (when _PyRuntime.debug_offsets cannot be used): as 3.12 but _Py_DebugOffsets ahead of
// the runtime state, PyThreadState.current_frame (no _PyCFrame), _PyInterpreterFrame's
// f_executable (at f_code's place) and instr_ptr (at prev_instr's).
PythonOffsets offsets_3_13() {
  PythonOffsets o = offsets_3_12();
  o.runtime_interpreters_head = 632;
  o.interp_next = 7264;
  o.interp_threads_head = 7344;
  o.thread_pthread_id = 152;
  o.thread_native_id = 160;
  o.thread_frame = 72; // current_frame
  o.cframe_current_frame = kNoField;
  o.code_adaptive = 200;
  return o;
}

std::uint64_t u64_at(std::span<const std::uint8_t> bytes, std::size_t at) {
  std::uint64_t value = 0;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

// Positions inside 3.13's _Py_DebugOffsets (every member a uint64_t after the 8-byte cookie;
// each group starts with the size of the structure it describes).
namespace debug {
constexpr std::size_t kVersion = 8, kFreeThreaded = 16;
constexpr std::size_t kRuntimeSize = 24, kRuntimeInterpretersHead = 40;
constexpr std::size_t kInterpSize = 48, kInterpNext = 64, kInterpThreadsHead = 72;
constexpr std::size_t kThreadSize = 152, kThreadNext = 168, kThreadInterp = 176,
                      kThreadCurrentFrame = 184, kThreadId = 192, kThreadNativeId = 200;
constexpr std::size_t kFrameSize = 224, kFramePrevious = 232, kFrameExecutable = 240,
                      kFrameInstrPtr = 248, kFrameOwner = 264;
constexpr std::size_t kCodeSize = 272, kCodeFilename = 280, kCodeName = 288, kCodeQualname = 296,
                      kCodeLinetable = 304, kCodeFirstlineno = 312, kCodeAdaptive = 344;
constexpr std::size_t kObjectSize = 352, kObjectType = 360;
constexpr std::size_t kBytesSize = 512, kBytesObSize = 520, kBytesObSval = 528;
constexpr std::size_t kUnicodeSize = 536, kUnicodeState = 544, kUnicodeLength = 552,
                      kUnicodeAsciiSize = 560;
} // namespace debug

} // namespace

std::optional<PythonOffsets> builtin_offsets(const PythonVersion &version) {
  if (version.major != 3)
    return std::nullopt;
  std::optional<PythonOffsets> offsets;
  switch (version.minor) {
  case 9:
    offsets = offsets_3_9();
    break;
  case 10:
    offsets = offsets_3_10();
    break;
  case 11:
    offsets = offsets_3_11();
    break;
  case 12:
    offsets = offsets_3_12();
    break;
  case 13:
    offsets = offsets_3_13();
    break;
  default:
    return std::nullopt;
  }
  offsets->version = version;
  return offsets;
}

DebugOffsetsResult offsets_from_debug_offsets(std::span<const std::uint8_t> bytes) {
  DebugOffsetsResult result;
  if (bytes.size() < kDebugOffsetsSize) {
    result.error = "debug offsets truncated";
    return result;
  }
  if (std::memcmp(bytes.data(), "xdebugpy", 8) != 0) {
    result.error = "no debug offsets cookie";
    return result;
  }
  const auto version = python_version_from_hex(u64_at(bytes, debug::kVersion));
  if (!version || version->minor != 13) {
    result.error = "debug offsets of an unsupported version";
    return result;
  }
  if (u64_at(bytes, debug::kFreeThreaded) != 0) {
    result.error = "free-threaded builds are not supported";
    return result;
  }
  // Every offset must lie inside the structure its group describes, and structures stay small:
  // a block that says otherwise is not what we think it is.
  constexpr std::uint64_t kLargestStructure = 1 << 20;
  bool fits = true;
  const auto field = [&](std::size_t size_at, std::size_t at) -> std::uint32_t {
    const std::uint64_t size = u64_at(bytes, size_at);
    const std::uint64_t offset = u64_at(bytes, at);
    if (size == 0 || size > kLargestStructure || offset >= size) {
      fits = false;
      return 0;
    }
    return static_cast<std::uint32_t>(offset);
  };
  PythonOffsets o = offsets_3_13();
  o.version = *version;
  o.from_debug_offsets = true;
  o.runtime_interpreters_head = field(debug::kRuntimeSize, debug::kRuntimeInterpretersHead);
  o.interp_next = field(debug::kInterpSize, debug::kInterpNext);
  o.interp_threads_head = field(debug::kInterpSize, debug::kInterpThreadsHead);
  o.thread_next = field(debug::kThreadSize, debug::kThreadNext);
  o.thread_interp = field(debug::kThreadSize, debug::kThreadInterp);
  o.thread_frame = field(debug::kThreadSize, debug::kThreadCurrentFrame);
  o.thread_pthread_id = field(debug::kThreadSize, debug::kThreadId);
  o.thread_native_id = field(debug::kThreadSize, debug::kThreadNativeId);
  o.frame_previous = field(debug::kFrameSize, debug::kFramePrevious);
  o.frame_code = field(debug::kFrameSize, debug::kFrameExecutable);
  o.frame_instr = field(debug::kFrameSize, debug::kFrameInstrPtr);
  o.frame_owner = field(debug::kFrameSize, debug::kFrameOwner);
  o.code_filename = field(debug::kCodeSize, debug::kCodeFilename);
  o.code_name = field(debug::kCodeSize, debug::kCodeName);
  o.code_qualname = field(debug::kCodeSize, debug::kCodeQualname);
  o.code_linetable = field(debug::kCodeSize, debug::kCodeLinetable);
  o.code_firstlineno = field(debug::kCodeSize, debug::kCodeFirstlineno);
  o.code_adaptive = field(debug::kCodeSize, debug::kCodeAdaptive);
  o.object_type = field(debug::kObjectSize, debug::kObjectType);
  o.bytes_size = field(debug::kBytesSize, debug::kBytesObSize);
  o.bytes_data = field(debug::kBytesSize, debug::kBytesObSval);
  o.unicode_state = field(debug::kUnicodeSize, debug::kUnicodeState);
  o.unicode_length = field(debug::kUnicodeSize, debug::kUnicodeLength);
  const std::uint64_t ascii_size = u64_at(bytes, debug::kUnicodeAsciiSize);
  if (!fits || ascii_size == 0 || ascii_size > 1024) {
    result.error = "debug offsets out of range";
    return result;
  }
  if (!frame_fields_fit_window(o)) {
    result.error = "frame fields beyond what the kernel walk reads";
    return result;
  }
  o.unicode_ascii_size = static_cast<std::uint32_t>(ascii_size);
  // PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject (3.12+).
  o.unicode_compact_size = o.unicode_ascii_size + 16;
  result.offsets = o;
  return result;
}

bool frame_fields_fit_window(const PythonOffsets &offsets) {
  constexpr std::uint32_t kWindow = NT_PYTHON_FRAME_WINDOW;
  const auto pointer_fits = [&](std::uint32_t offset) {
    return offset % 8 == 0 && offset + 8 < kWindow;
  };
  const bool instr_fits = offsets.instr_kind == InstructionKind::kPointer
                              ? pointer_fits(offsets.frame_instr)
                              : offsets.frame_instr % 4 == 0 && offsets.frame_instr + 4 < kWindow;
  const bool owner_fits =
      offsets.frame_owner_cstack == kNoField || offsets.frame_owner + 1 < kWindow;
  return pointer_fits(offsets.frame_code) && pointer_fits(offsets.frame_previous) && instr_fits &&
         owner_fits;
}

nt_python_offsets to_abi_offsets(const PythonOffsets &offsets, std::uint64_t runtime_address,
                                 std::uint64_t start_ticks, std::uint64_t ns_per_tick) {
  nt_python_offsets abi{};
  abi.runtime_address = runtime_address;
  abi.proc_start_ns = start_ticks * ns_per_tick;
  abi.ns_per_tick = ns_per_tick;
  abi.version = static_cast<nt_u32>(offsets.version.major << 8 | offsets.version.minor);
  const bool native = offsets.thread_native_id != kNoField;
  abi.thread_match = native ? NT_PYTHON_MATCH_NATIVE_ID : NT_PYTHON_MATCH_PTHREAD;
  abi.thread_id = native ? offsets.thread_native_id : offsets.thread_pthread_id;
  abi.runtime_interpreters_head = offsets.runtime_interpreters_head;
  abi.interp_threads_head = offsets.interp_threads_head;
  abi.thread_next = offsets.thread_next;
  abi.thread_frame = offsets.thread_frame;
  abi.cframe_current_frame = offsets.cframe_current_frame;
  abi.frame_previous = offsets.frame_previous;
  abi.frame_code = offsets.frame_code;
  abi.frame_instr = offsets.frame_instr;
  abi.frame_instr_size = offsets.instr_kind == InstructionKind::kPointer ? 8 : 4;
  abi.frame_owner = offsets.frame_owner_cstack == kNoField ? kNoField : offsets.frame_owner;
  abi.frame_owner_skip = offsets.frame_owner_cstack;
  return abi;
}

} // namespace neutracer
