// SPDX-License-Identifier: Apache-2.0
#pragma once
// One stack of a CUDA call from a Python program: native frames and Python frames together, as
// a reader follows them. Pure.
#include <string_view>
#include <vector>

#include "stacks/frame.h"

namespace neutracer {

// `native` with the Python frames of the same call (innermost first): the native frames from
// the call up to the interpreter (the first frame in `interpreter_path`, the file the process
// maps it from), then the Python frames; the interpreter's own frames below them are left out,
// being how it ran those Python frames. A native stack that never reaches the interpreter (cut
// short) loses the bare addresses it ends in and is followed by the Python frames.
// `python_truncated`: the walk kept only the innermost Python frames (the stack then ends at
// depth_limit).
SymbolizedStack with_python_frames(SymbolizedStack native, std::vector<Frame> python,
                                   std::string_view interpreter_path, bool python_truncated);

} // namespace neutracer
