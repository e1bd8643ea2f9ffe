#pragma once
// The Python frames of a thread that waits in a CUDA call, read from the process's memory while
// it waits (pystacks): a hang then names the script's line that synchronised, not only the
// native frames under it. Each process's interpreter is found once (detect_python) and kept;
// one that is not initialised yet is asked again on later calls, a few times.
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "common/process_id.h"
#include "common/procfs.h"
#include "pystacks/python_frame_resolver.h"
#include "pystacks/python_process.h"
#include "stacks/frame.h"

namespace neutracer {

class PythonWaitFrames {
public:
  explicit PythonWaitFrames(const ProcFs &procfs) : procfs_(procfs) {}

  // Thread `tid`'s Python frames, innermost first, as FrameKind::python frames; empty when the
  // process runs no CPython this can read, or the thread has no Python frames. Threads are
  // matched by their native id, which CPython keeps from 3.11 on: before, empty.
  std::vector<Frame> frames_of(const ProcessId &id, int tid);
  void forget(const ProcessId &id);

private:
  struct Known {
    std::optional<PythonProcess> process;
    int attempts = 0; // detections tried while the interpreter was not ready
    bool final = false;
  };
  const PythonProcess *process_of(const ProcessId &id);

  const ProcFs &procfs_;
  std::map<ProcessId, Known> known_;
  PythonFrameResolver resolver_;
};

} // namespace neutracer
