// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Python frames of CUDA calls, as Frame values: from the kernel's walk at an allocation, a
// sync call's entry or a sampled launch (bpf/python_stacks.bpf.h, a raw stack of code objects
// and instructions), or read from the
// process's memory while a thread waits in a call (a hang then names the script's line that
// synchronised). Each process's interpreter is found once (detect_python) and kept; one that is
// not initialised yet, or was read while it moved, is asked again on later calls, a few times.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "bpf/neutracer_abi.h"
#include "common/process_id.h"
#include "common/procfs.h"
#include "pystacks/python_frame_resolver.h"
#include "pystacks/python_process.h"
#include "stacks/frame.h"

namespace neutracer {

class PythonCallFrames {
public:
  explicit PythonCallFrames(const ProcFs &procfs) : procfs_(procfs) {}

  // The process's CPython, found on the first calls; nullptr when it runs none this can read
  // (or not yet: an interpreter that is mapped but not initialised is asked again later).
  const PythonProcess *process_of(const ProcessId &id);
  // Thread `tid`'s Python frames, innermost first; empty when the process runs no CPython this
  // can read, or the thread has no Python frames. Threads are matched by their native id,
  // which CPython keeps from 3.11 on: before, empty.
  std::vector<Frame> waiting_frames(const ProcessId &id, int tid);
  // The frames of a stack the kernel walked in process `id`, innermost first; a frame whose
  // code object cannot be read any more is named "<unreadable>". Both give nothing once the
  // process is gone (its PID may be another program's).
  std::vector<Frame> frames(const ProcessId &id, const nt_python_stack &stack);
  void forget(const ProcessId &id);

private:
  struct Known {
    std::optional<PythonProcess> process;
    int attempts = 0; // detections tried while the interpreter was not ready
    std::chrono::steady_clock::time_point last_attempt;
    bool final = false;
  };
  Frame resolve(const PythonProcess &process, const ProcessMemory &memory,
                const nt_python_frame &raw);
  bool still_running(const ProcessId &id) const;

  const ProcFs &procfs_;
  std::map<ProcessId, Known> known_;
  PythonFrameResolver resolver_;
};

} // namespace neutracer
