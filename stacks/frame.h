// SPDX-License-Identifier: Apache-2.0
#pragma once
// A call stack as people read it: frames innermost first, and how the stack ended. Native frames
// come from the kernel's frame-pointer walk, symbolised here (symbolizer.h); interpreter frames
// (FrameKind::python) have the same shape, with a source file and line.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace neutracer {

enum class FrameKind : std::uint8_t { native, python };
std::string_view frame_kind_name(FrameKind kind);

struct Frame {
  FrameKind kind = FrameKind::native;
  std::uint64_t address = 0; // native: the return address in the process
  // Shared with the symbol caches: sites hold pointers, not copies.
  std::shared_ptr<const std::string> function; // demangled; null when unknown
  std::shared_ptr<const std::string> module;   // native: the ELF file as the process maps it;
                                               // python: the source file; null when unknown
  std::uint64_t module_offset = 0;             // native: file offset of `address` in `module`
  std::uint64_t function_offset = 0;           // native: bytes from the function's start
  std::uint32_t line = 0;                      // python: line number; 0 when unknown
};

// Why a stack has no more frames.
enum class StackEnd : std::uint8_t {
  complete,    // it reached the thread's or the process's entry function
  depth_limit, // stacks.max_depth frames were kept; callers beyond them are missing
  // The kernel's walk stopped early, or ran into an address that is no code: a caller was built
  // without frame pointers, so frames beyond the last one shown are missing.
  no_frame_pointer,
  // The process was gone (or hid its maps) before its stack could be placed in its files: the
  // frames are bare addresses.
  unresolved,
};
std::string_view stack_end_name(StackEnd end);

struct SymbolizedStack {
  std::vector<Frame> frames; // frames[0]: the code that called the CUDA API
  StackEnd end = StackEnd::complete;
  // The probe took Python frames, but they were gone from the kernel's map when read (evicted):
  // native frames only, until a later call from the same site finds them again.
  bool python_lost = false;
};

// The last part of a path: "libcuda.so.1" for "/usr/lib/x86_64-linux-gnu/libcuda.so.1".
std::string_view base_name(std::string_view path);

// "function (module+0x1a2b)", "module+0x1a2b" without a function name, "0x7f.." without a
// module; python frames "function (file:line)". Module names are shown without their directory.
std::string frame_text(const Frame &frame);

// Whether a Python frame's file is part of an installed package (site-packages,
// dist-packages) or the interpreter's standard library (lib/pythonX.Y/, frozen modules): code
// the program calls, not the program.
bool in_python_library(const Frame &frame);

// The Python frame that names where a program is: the innermost of the program's own files
// (PyTorch's synchronize() is how a script waits, not where; a pip console-script wrapper is
// not the program). When every frame is library code, the program is an installed package:
// the innermost frame of the package the outermost installed frame belongs to (vllm's own
// code, not PyTorch's); else the innermost frame. nullptr when there is no Python frame.
const Frame *program_python_frame(std::span<const Frame> frames);

// The frame an alert names: the program's Python frame of a mixed stack
// (program_python_frame); else the innermost frame outside the CUDA libraries (libcuda,
// libcudart) that has a function name; else the innermost frame; nullptr for an empty stack.
const Frame *headline_frame(const SymbolizedStack &stack);

} // namespace neutracer
