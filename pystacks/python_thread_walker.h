// SPDX-License-Identifier: Apache-2.0
#pragma once
// Walks a Python process's thread states and their frames from user space, the same way
// bpf/python_frames.bpf.h does in the kernel: for a thread seen while it waits (a hang), for
// checking a process's offsets before the kernel side uses them, and for tests.
#include <cstdint>
#include <string>
#include <vector>

#include "bpf/neutracer_abi.h"
#include "pystacks/process_memory.h"
#include "pystacks/python_process.h"

namespace neutracer {

struct PythonThreadStack {
  std::uint64_t thread_state = 0;      // PyThreadState address
  std::uint64_t native_thread_id = 0;  // the thread's TID (3.11+); 0 before 3.11
  std::uint64_t pthread_id = 0;        // pthread_self() of the thread
  std::vector<nt_python_frame> frames; // innermost first
  bool truncated = false;              // more than max_frames
  bool read_failed = false;            // a frame could not be read: the stack ends early
};

struct PythonThreads {
  std::uint64_t interpreter = 0; // interpreters.head (the main one unless there are others)
  std::vector<PythonThreadStack> threads;
  bool truncated = false; // more than max_threads thread states
  std::string error;      // non-empty: the runtime or interpreter state could not be read
};

// The threads of interpreters.head, in the order of its thread list (newest first).
PythonThreads walk_python_threads(const ProcessMemory &memory, const PythonProcess &process,
                                  std::size_t max_threads = NT_PYTHON_THREADS_MAX,
                                  std::size_t max_frames = NT_PYTHON_FRAMES_MAX);

// The frames of one thread state, innermost first (what the kernel side records).
PythonThreadStack walk_python_frames(const ProcessMemory &memory, const PythonOffsets &offsets,
                                     std::uint64_t thread_state,
                                     std::size_t max_frames = NT_PYTHON_FRAMES_MAX);

} // namespace neutracer
