// SPDX-License-Identifier: Apache-2.0
#include "stacks/python_call_frames.h"

#include <chrono>
#include <memory>
#include <spdlog/spdlog.h>
#include <string>

#include "cuda/cuda_discovery.h"
#include "pystacks/python_detection.h"
#include "pystacks/python_thread_walker.h"

namespace neutracer {
namespace {

// An interpreter that is not ready (or read while it moved) is asked again this many times, at
// least kRetrySpacing apart: one scan's burst of calls must not spend every attempt on one
// moment of the process.
constexpr int kMaxAttempts = 8;
constexpr auto kRetrySpacing = std::chrono::milliseconds(500);

} // namespace

const PythonProcess *PythonCallFrames::process_of(const ProcessId &id) {
  auto &known = known_[id];
  const auto now = std::chrono::steady_clock::now();
  if (!known.final && known.attempts < kMaxAttempts &&
      (known.attempts == 0 || now - known.last_attempt >= kRetrySpacing)) {
    ++known.attempts;
    known.last_attempt = now;
    auto detection = detect_python(procfs_, id, LiveProcessMemory(id.pid));
    if (detection.process) {
      known.process = std::move(detection.process);
      known.final = true;
    } else if (!detection.retry_later || known.attempts == kMaxAttempts) {
      known.final = true;
      // Most GPU processes without Python end here at once; an interpreter that was found
      // but cannot be read is worth a line, once.
      if (detection.retry_later)
        spdlog::info("pid {}: no Python frames for its calls after {} attempts: {}", id.pid,
                     known.attempts, detection.error);
      else
        spdlog::debug("pid {}: no Python frames for its calls: {}", id.pid, detection.error);
    }
  }
  return known.process ? &*known.process : nullptr;
}

bool PythonCallFrames::still_running(const ProcessId &id) const {
  // Read after the frames: a PID reused meanwhile is another program, whose memory says nothing
  // about this one's lines.
  return process_start_ticks(procfs_, id.pid) == id.start_ticks;
}

Frame PythonCallFrames::resolve(const PythonProcess &process, const ProcessMemory &memory,
                                const nt_python_frame &raw) {
  const auto resolved = resolver_.resolve(process, memory, raw);
  Frame frame;
  frame.kind = FrameKind::python;
  frame.function = std::make_shared<const std::string>(resolved.function);
  frame.module = std::make_shared<const std::string>(resolved.file);
  frame.line = resolved.line > 0 ? static_cast<std::uint32_t>(resolved.line) : 0;
  return frame;
}

std::vector<Frame> PythonCallFrames::waiting_frames(const ProcessId &id, int tid) {
  const PythonProcess *process = process_of(id);
  if (!process || tid <= 0)
    return {};
  const LiveProcessMemory memory(id.pid);
  const auto threads = walk_python_threads(memory, *process);
  for (const auto &thread : threads.threads) {
    if (thread.native_thread_id != static_cast<std::uint64_t>(tid))
      continue;
    std::vector<Frame> frames;
    frames.reserve(thread.frames.size());
    for (const auto &raw : thread.frames)
      frames.push_back(resolve(*process, memory, raw));
    return still_running(id) ? frames : std::vector<Frame>{};
  }
  return {};
}

std::vector<Frame> PythonCallFrames::frames(const ProcessId &id, const nt_python_stack &stack) {
  const PythonProcess *process = process_of(id);
  if (!process)
    return {};
  const LiveProcessMemory memory(id.pid);
  std::vector<Frame> frames;
  const auto depth = std::min<std::uint32_t>(stack.depth, NT_PYTHON_FRAMES_MAX);
  frames.reserve(depth);
  for (std::uint32_t i = 0; i < depth; ++i)
    frames.push_back(resolve(*process, memory, stack.frames[i]));
  return still_running(id) ? frames : std::vector<Frame>{};
}

void PythonCallFrames::forget(const ProcessId &id) {
  known_.erase(id);
  resolver_.forget(id);
}

} // namespace neutracer
