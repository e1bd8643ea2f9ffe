// SPDX-License-Identifier: Apache-2.0
#include "stacks/mixed_stack.h"

#include <algorithm>
#include <iterator>

namespace neutracer {

SymbolizedStack with_python_frames(SymbolizedStack native, std::vector<Frame> python,
                                   std::string_view interpreter_path, bool python_truncated) {
  if (python.empty())
    return native;
  // By file name: the symboliser names a file by the path it first saw it at, which another
  // process (a container, a bind mount) may map elsewhere.
  const auto interpreter_file = base_name(interpreter_path);
  const auto interpreter =
      std::find_if(native.frames.begin(), native.frames.end(), [&](const Frame &frame) {
        return frame.kind == FrameKind::native && frame.module &&
               base_name(*frame.module) == interpreter_file;
      });
  const bool reached = interpreter != native.frames.end();
  native.frames.erase(interpreter, native.frames.end());
  // A walk cut short ends in addresses that are no file's code (a frame pointer that was not
  // one): the Python frames say more than they do.
  while (!reached && !native.frames.empty() && !native.frames.back().module)
    native.frames.pop_back();
  native.frames.insert(native.frames.end(), std::make_move_iterator(python.begin()),
                       std::make_move_iterator(python.end()));
  if (python_truncated)
    native.end = StackEnd::depth_limit;
  else if (reached)
    native.end = StackEnd::complete;
  return native;
}

} // namespace neutracer
