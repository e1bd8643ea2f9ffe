// SPDX-License-Identifier: Apache-2.0
#include "pystacks/python_thread_walker.h"

namespace neutracer {

PythonThreadStack walk_python_frames(const ProcessMemory &memory, const PythonOffsets &offsets,
                                     std::uint64_t thread_state, std::size_t max_frames) {
  PythonThreadStack stack;
  stack.thread_state = thread_state;
  stack.pthread_id =
      memory.read_value<std::uint64_t>(thread_state + offsets.thread_pthread_id).value_or(0);
  if (offsets.thread_native_id != kNoField)
    stack.native_thread_id =
        memory.read_value<std::uint64_t>(thread_state + offsets.thread_native_id).value_or(0);

  auto frame = memory.read_value<std::uint64_t>(thread_state + offsets.thread_frame);
  if (frame && *frame && offsets.cframe_current_frame != kNoField)
    frame = memory.read_value<std::uint64_t>(*frame + offsets.cframe_current_frame);
  if (!frame) {
    stack.read_failed = true;
    return stack;
  }
  std::uint64_t current = *frame;
  // C-stack entry frames (3.12+) are skipped but still bounded: twice the frames kept.
  for (std::size_t step = 0; current != 0 && step < 2 * max_frames; ++step) {
    if (stack.frames.size() == max_frames) {
      stack.truncated = true;
      break;
    }
    bool python_frame = true;
    if (offsets.frame_owner_cstack != kNoField) {
      const auto owner = memory.read_value<std::uint8_t>(current + offsets.frame_owner);
      if (!owner) {
        stack.read_failed = true;
        break;
      }
      python_frame = *owner != offsets.frame_owner_cstack;
    }
    if (python_frame) {
      const auto code = memory.read_value<std::uint64_t>(current + offsets.frame_code);
      std::optional<std::uint64_t> instr;
      if (offsets.instr_kind == InstructionKind::kPointer)
        instr = memory.read_value<std::uint64_t>(current + offsets.frame_instr);
      else if (const auto lasti = memory.read_value<std::uint32_t>(current + offsets.frame_instr))
        instr = *lasti;
      if (!code || !instr) {
        stack.read_failed = true;
        break;
      }
      stack.frames.push_back(nt_python_frame{*code, *instr});
    }
    const auto previous = memory.read_value<std::uint64_t>(current + offsets.frame_previous);
    if (!previous) {
      stack.read_failed = true;
      break;
    }
    current = *previous;
  }
  if (current != 0 && !stack.read_failed)
    stack.truncated = true;
  return stack;
}

PythonThreads walk_python_threads(const ProcessMemory &memory, const PythonProcess &process,
                                  std::size_t max_threads, std::size_t max_frames) {
  PythonThreads result;
  const PythonOffsets &offsets = process.offsets;
  const auto interpreter =
      memory.read_value<std::uint64_t>(process.runtime_address + offsets.runtime_interpreters_head);
  if (!interpreter || *interpreter == 0) {
    result.error = interpreter ? "no interpreter yet" : "cannot read _PyRuntime";
    return result;
  }
  result.interpreter = *interpreter;
  auto thread = memory.read_value<std::uint64_t>(*interpreter + offsets.interp_threads_head);
  if (!thread) {
    result.error = "cannot read the interpreter state";
    return result;
  }
  std::uint64_t current = *thread;
  while (current != 0) {
    if (result.threads.size() == max_threads) {
      result.truncated = true;
      break;
    }
    result.threads.push_back(walk_python_frames(memory, offsets, current, max_frames));
    const auto next = memory.read_value<std::uint64_t>(current + offsets.thread_next);
    if (!next) {
      result.error = "cannot read a thread state";
      break;
    }
    current = *next;
  }
  return result;
}

} // namespace neutracer
