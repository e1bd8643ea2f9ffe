#include "stacks/frame.h"

#include <cstdio>

namespace neutracer {
namespace {

std::string_view base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// The driver and the runtime are how a program reaches the GPU, not where it decided to.
bool in_cuda_library(const Frame &frame) {
  if (!frame.module || frame.kind != FrameKind::native)
    return false;
  const auto name = base_name(*frame.module);
  return name.starts_with("libcuda.") || name.starts_with("libcudart.");
}

} // namespace

std::string_view frame_kind_name(FrameKind kind) {
  return kind == FrameKind::python ? "python" : "native";
}

std::string_view stack_end_name(StackEnd end) {
  switch (end) {
  case StackEnd::complete:
    return "complete";
  case StackEnd::depth_limit:
    return "depth_limit";
  case StackEnd::no_frame_pointer:
    return "no_frame_pointer";
  case StackEnd::unresolved:
    return "unresolved";
  }
  return "complete";
}

std::string frame_text(const Frame &frame) {
  if (frame.kind == FrameKind::python) {
    std::string text = frame.function ? *frame.function : std::string("?");
    // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false positive) on
    // "literal" + std::string chains here.
    if (frame.module) {
      text += " (";
      text += base_name(*frame.module);
      if (frame.line) {
        text += ':';
        text += std::to_string(frame.line);
      }
      text += ')';
    }
    return text;
  }
  if (!frame.module)
    return hex(frame.address);
  const std::string place = std::string(base_name(*frame.module)) + "+" + hex(frame.module_offset);
  return frame.function ? *frame.function + " (" + place + ")" : place;
}

bool in_python_library(const Frame &frame) {
  if (frame.kind != FrameKind::python || !frame.module)
    return false;
  const std::string_view file = *frame.module;
  if (file.starts_with("<frozen ") || file.find("/site-packages/") != std::string_view::npos ||
      file.find("/dist-packages/") != std::string_view::npos)
    return true;
  // The standard library: .../lib/python3.12/threading.py (one level below, or deeper).
  constexpr std::string_view kStdlib = "/lib/python";
  const auto lib = file.find(kStdlib);
  const auto version = lib + kStdlib.size();
  return lib != std::string_view::npos && version < file.size() && file[version] >= '0' &&
         file[version] <= '9' && file.find('/', version) != std::string_view::npos;
}

const Frame *program_python_frame(std::span<const Frame> frames) {
  const Frame *innermost = nullptr;
  for (const auto &frame : frames) {
    if (frame.kind != FrameKind::python)
      continue;
    if (!in_python_library(frame))
      return &frame;
    if (!innermost)
      innermost = &frame;
  }
  return innermost;
}

const Frame *headline_frame(const SymbolizedStack &stack) {
  if (const Frame *python = program_python_frame(stack.frames))
    return python;
  for (const auto &frame : stack.frames)
    if (frame.function && !in_cuda_library(frame))
      return &frame;
  return stack.frames.empty() ? nullptr : &stack.frames.front();
}

} // namespace neutracer
