// SPDX-License-Identifier: Apache-2.0
// A native stack and the Python frames of the same call, joined where the interpreter starts.
#include "stacks/mixed_stack.h"

#include <gtest/gtest.h>

namespace neutracer {
namespace {

Frame frame(FrameKind kind, std::string function, std::string module) {
  Frame f;
  f.kind = kind;
  f.function = std::make_shared<const std::string>(std::move(function));
  f.module = std::make_shared<const std::string>(std::move(module));
  return f;
}

std::vector<std::string> functions(const SymbolizedStack &stack) {
  std::vector<std::string> names;
  for (const auto &f : stack.frames)
    names.push_back(*f.function);
  return names;
}

constexpr const char *kInterpreter = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";

SymbolizedStack native_stack(StackEnd end) {
  return {{frame(FrameKind::native, "cudaMalloc", "/usr/lib/libcudart.so.12"),
           frame(FrameKind::native, "alloc_block", "/venv/torch/lib/libc10_cuda.so"),
           frame(FrameKind::native, "_PyEval_EvalFrameDefault", kInterpreter),
           frame(FrameKind::native, "PyEval_EvalCode", kInterpreter),
           frame(FrameKind::native, "main", "/usr/bin/python3.11")},
          end};
}

std::vector<Frame> python_frames() {
  return {frame(FrameKind::python, "grow_cache", "/srv/train.py"),
          frame(FrameKind::python, "main", "/srv/train.py")};
}

TEST(MixedStack, PythonFramesTakeTheInterpretersPlace) {
  const auto mixed =
      with_python_frames(native_stack(StackEnd::no_frame_pointer), python_frames(), kInterpreter,
                         false);
  EXPECT_EQ(functions(mixed),
            (std::vector<std::string>{"cudaMalloc", "alloc_block", "grow_cache", "main"}));
  EXPECT_EQ(mixed.frames[2].kind, FrameKind::python);
  EXPECT_EQ(mixed.end, StackEnd::complete) << "the Python frames reach the program's start";
}

TEST(MixedStack, TheInterpreterIsKnownByItsFileNameWhereverItIsMounted) {
  const auto mixed = with_python_frames(native_stack(StackEnd::no_frame_pointer), python_frames(),
                                        "/proc/4242/root/usr/lib/x86_64-linux-gnu/"
                                        "libpython3.11.so.1.0",
                                        false);
  EXPECT_EQ(functions(mixed),
            (std::vector<std::string>{"cudaMalloc", "alloc_block", "grow_cache", "main"}));
}

TEST(MixedStack, ANativeStackCutShortIsFollowedByThePythonFrames) {
  Frame garbage; // a "return address" that points into the stack: no module
  garbage.address = 0x7ffd2b459f60;
  garbage.function = std::make_shared<const std::string>("?");
  SymbolizedStack cut{{frame(FrameKind::native, "cudaMalloc", "/usr/lib/libcudart.so.12"), garbage},
                      StackEnd::no_frame_pointer};
  const auto mixed = with_python_frames(cut, python_frames(), kInterpreter, false);
  EXPECT_EQ(functions(mixed), (std::vector<std::string>{"cudaMalloc", "grow_cache", "main"}));
  EXPECT_EQ(mixed.end, StackEnd::no_frame_pointer) << "native frames may be missing between";
}

TEST(MixedStack, TruncatedPythonFramesEndAtTheDepthLimit) {
  const auto mixed =
      with_python_frames(native_stack(StackEnd::complete), python_frames(), kInterpreter, true);
  EXPECT_EQ(mixed.end, StackEnd::depth_limit);
}

TEST(MixedStack, NoPythonFramesLeaveTheNativeStackAlone) {
  const auto mixed = with_python_frames(native_stack(StackEnd::complete), {}, kInterpreter, false);
  EXPECT_EQ(mixed.frames.size(), 5u);
  EXPECT_EQ(mixed.end, StackEnd::complete);
}

} // namespace
} // namespace neutracer
