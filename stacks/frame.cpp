// SPDX-License-Identifier: Apache-2.0
#include "stacks/frame.h"

#include "common/enum_names.h"
#include "common/text.h"

namespace neutracer {

std::string_view base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

namespace {

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

constexpr std::array<std::string_view, 4> kStackEndNames = {"complete", "depth_limit",
                                                            "no_frame_pointer", "unresolved"};
static_assert(kStackEndNames.size() == enum_count(StackEnd::unresolved));

std::string_view stack_end_name(StackEnd end) { return enum_name(end, kStackEndNames); }

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
    return hex_text(frame.address);
  const std::string place =
      std::string(base_name(*frame.module)) + "+" + hex_text(frame.module_offset);
  return frame.function ? *frame.function + " (" + place + ")" : place;
}

namespace {

// The folder of installed packages a file is in, and what follows it: "torch/nn/x.py" for
// ".../site-packages/torch/nn/x.py"; empty when it is in none.
std::string_view installed_path(std::string_view file) {
  for (const std::string_view folder : {"/site-packages/", "/dist-packages/"})
    if (const auto at = file.rfind(folder); at != std::string_view::npos)
      return file.substr(at + folder.size());
  return {};
}

// The standard library: .../lib/python3.12/threading.py or .../lib/python3/x.py (one level
// below the version, or deeper); not .../lib/python3-tools/x.py.
bool in_standard_library(std::string_view file) {
  constexpr std::string_view kStdlib = "/lib/python";
  for (auto lib = file.find(kStdlib); lib != std::string_view::npos;
       lib = file.find(kStdlib, lib + 1)) {
    auto at = lib + kStdlib.size();
    const auto digits = [&] {
      const auto start = at;
      while (at < file.size() && file[at] >= '0' && file[at] <= '9')
        ++at;
      return at > start;
    };
    if (!digits())
      continue;
    if (at < file.size() && file[at] == '.') {
      ++at;
      if (!digits())
        continue;
    }
    if (at < file.size() && file[at] == '/')
      return true;
  }
  return false;
}

// A console-script wrapper that pip writes (/usr/local/bin/vllm: `sys.exit(main())`): where a
// program starts, not where it is.
bool entry_point_wrapper(std::string_view file) {
  return file.find("/bin/") != std::string_view::npos && !file.ends_with(".py");
}

} // namespace

bool in_python_library(const Frame &frame) {
  if (frame.kind != FrameKind::python || !frame.module)
    return false;
  const std::string_view file = *frame.module;
  return file.starts_with("<frozen ") || !installed_path(file).empty() || in_standard_library(file);
}

const Frame *program_python_frame(std::span<const Frame> frames) {
  const Frame *innermost = nullptr;
  const Frame *outermost_installed = nullptr;
  for (const auto &frame : frames) {
    if (frame.kind != FrameKind::python)
      continue;
    if (!in_python_library(frame) && !(frame.module && entry_point_wrapper(*frame.module)))
      return &frame;
    if (!innermost)
      innermost = &frame;
    if (frame.module && !installed_path(*frame.module).empty())
      outermost_installed = &frame;
  }
  if (!outermost_installed)
    return innermost;
  // A program installed as a package (vllm serve, python -m pkg): the innermost frame of the
  // package the call began in, not of the framework it called.
  const auto package_of = [](const Frame &frame) {
    const auto path = installed_path(*frame.module);
    return path.substr(0, path.find('/'));
  };
  const auto program = package_of(*outermost_installed);
  for (const auto &frame : frames)
    if (frame.kind == FrameKind::python && frame.module && !installed_path(*frame.module).empty() &&
        package_of(frame) == program)
      return &frame;
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
