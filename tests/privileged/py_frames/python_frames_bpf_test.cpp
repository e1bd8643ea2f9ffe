// SPDX-License-Identifier: Apache-2.0
// Python frames end to end, for each local CPython (NEUTRACER_TEST_PYTHONS): a script calls a C
// function of a test library through ctypes; a uprobe on that function runs
// bpf/python_frames.bpf.h's walk (tests/privileged/py_frames/py_frames_probe.bpf.c), and the
// frames it records, resolved in user space, must name the script's functions and lines. The
// user-space walker and the detected offsets are checked against the same live process.
// Needs root (BPF, process_vm_readv); observes only the interpreters it starts.
#include <gtest/gtest.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/bpf_link.h"
#include "common/elf_symbols.h"
#include "common/proc_parsers.h"
#include "common/procfs.h"
#include "py_frames_probe.skel.h"
#include "pystacks/python_detection.h"
#include "pystacks/python_frame_resolver.h"
#include "pystacks/python_thread_walker.h"

namespace neutracer {
namespace {

using namespace std::chrono_literals;

const std::string kScript = NEUTRACER_SOURCE_DIR "/tests/privileged/py_frames/py_frames_script.py";

// The sample py_frames_probe.bpf.c sends.
struct PyFramesSample {
  std::uint32_t tid;
  std::uint32_t pad;
  nt_python_stack stack;
};

// The line of the script marked "# line: <name>".
int script_line(const std::string &name) {
  std::ifstream script(kScript);
  int number = 0;
  for (std::string line; std::getline(script, line);) {
    ++number;
    if (line.ends_with("# line: " + name))
      return number;
  }
  ADD_FAILURE() << "no marker " << name;
  return -1;
}

// The interpreter running the script, with pipes to its stdin and stdout; killed at the end.
class ScriptProcess {
public:
  ScriptProcess(const std::string &python, const std::string &library) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
      throw std::runtime_error("pipe2 failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      const char *argv[] = {python.c_str(), "-B", kScript.c_str(), library.c_str(), nullptr};
      ::execv(python.c_str(), const_cast<char *const *>(argv));
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
  }
  ~ScriptProcess() {
    ::close(stdin_);
    ::close(stdout_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ScriptProcess(const ScriptProcess &) = delete;
  ScriptProcess &operator=(const ScriptProcess &) = delete;

  int pid() const { return pid_; }

  // The next line the script prints, "" after 10 s without one.
  std::string read_line() {
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd ready{stdout_, POLLIN, 0};
      if (::poll(&ready, 1, 100) <= 0)
        continue;
      char c;
      if (::read(stdout_, &c, 1) != 1)
        return "";
      if (c == '\n')
        return line;
      line += c;
    }
    return "";
  }
  void send(const std::string &command) {
    const std::string line = command + "\n";
    ASSERT_EQ(::write(stdin_, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  }

private:
  int pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
};

struct SkeletonDeleter {
  void operator()(py_frames_probe *skeleton) const { py_frames_probe::destroy(skeleton); }
};
struct RingBufferDeleter {
  void operator()(ring_buffer *buffer) const { ring_buffer__free(buffer); }
};

class PythonFramesBpf : public testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    script_ = std::make_unique<ScriptProcess>(GetParam(), NEUTRACER_PY_FRAMES_TARGET);
    ASSERT_EQ(script_->read_line(), "ready") << GetParam();
    const int pid = script_->pid();
    const auto stat = procfs_.read(pid, "stat");
    ASSERT_TRUE(stat.has_value());
    const auto parsed = parse_proc_stat(*stat);
    ASSERT_TRUE(parsed.has_value());
    id_ = ProcessId{pid, parsed->start_ticks};
    memory_ = std::make_unique<LiveProcessMemory>(pid);
    const auto detection = detect_python(procfs_, id_, *memory_);
    ASSERT_TRUE(detection.process.has_value()) << GetParam() << ": " << detection.error;
    process_ = *detection.process;

    skeleton_.reset(py_frames_probe::open_and_load());
    ASSERT_TRUE(skeleton_) << "cannot load py_frames_probe: " << std::strerror(errno);
    const std::uint32_t key = static_cast<std::uint32_t>(pid);
    const auto offsets = to_abi_offsets(process_.offsets, process_.runtime_address, id_.start_ticks,
                                        1'000'000'000 / sysconf(_SC_CLK_TCK));
    ASSERT_EQ(bpf_map__update_elem(skeleton_->maps.python_processes, &key, sizeof key, &offsets,
                                   sizeof offsets, BPF_ANY),
              0);
    const auto symbols = find_symbol_offsets(NEUTRACER_PY_FRAMES_TARGET, {"nt_py_frames_target"});
    ASSERT_EQ(symbols.found.size(), 1u) << symbols.error;
    // Only this interpreter gets the breakpoint (pid-filtered uprobe).
    link_.reset(bpf_program__attach_uprobe(skeleton_->progs.py_frames_probe, false, pid,
                                           NEUTRACER_PY_FRAMES_TARGET,
                                           symbols.found.begin()->second));
    ASSERT_TRUE(link_) << "attach: " << std::strerror(errno);
    samples_buffer_.reset(
        ring_buffer__new(bpf_map__fd(skeleton_->maps.samples), on_sample, &samples_, nullptr));
    ASSERT_TRUE(samples_buffer_);
  }

  static int on_sample(void *context, void *data, std::size_t size) {
    auto &samples = *static_cast<std::vector<PyFramesSample> *>(context);
    if (size >= sizeof(PyFramesSample)) {
      PyFramesSample sample;
      std::memcpy(&sample, data, sizeof sample);
      samples.push_back(sample);
    }
    return 0;
  }

  // Runs one command of the script and returns the one sample its call produced.
  PyFramesSample run(const std::string &command) {
    samples_.clear();
    script_->send(command);
    EXPECT_EQ(script_->read_line(), "done") << command;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (samples_.empty() && std::chrono::steady_clock::now() < deadline)
      ring_buffer__poll(samples_buffer_.get(), 100);
    EXPECT_EQ(samples_.size(), 1u) << command;
    return samples_.empty() ? PyFramesSample{} : samples_.front();
  }

  std::vector<PythonFrame> resolve(const nt_python_stack &stack) {
    std::vector<PythonFrame> frames;
    for (std::uint32_t i = 0; i < stack.depth && i < NT_PYTHON_FRAMES_MAX; ++i)
      frames.push_back(resolver_.resolve(process_, *memory_, stack.frames[i]));
    return frames;
  }

  std::string qualified(const std::string &class_name, const std::string &function) const {
    return process_.version.minor >= 11 ? class_name + "." + function : function;
  }

  ProcFs procfs_;
  std::unique_ptr<ScriptProcess> script_;
  ProcessId id_;
  std::unique_ptr<LiveProcessMemory> memory_;
  PythonProcess process_;
  std::unique_ptr<py_frames_probe, SkeletonDeleter> skeleton_;
  BpfLink link_;
  std::unique_ptr<ring_buffer, RingBufferDeleter> samples_buffer_;
  std::vector<PyFramesSample> samples_;
  PythonFrameResolver resolver_;
};

void expect_frame(const PythonFrame &frame, const std::string &function, int line,
                  const std::string &file = kScript) {
  EXPECT_TRUE(frame.readable);
  EXPECT_EQ(frame.function, function);
  EXPECT_EQ(frame.line, line) << function;
  EXPECT_EQ(frame.file, file) << function;
}

TEST_P(PythonFramesBpf, TheMainThreadsCallNamesTheScriptsFunctionsAndLines) {
  const auto sample = run("main");
  EXPECT_EQ(sample.tid, static_cast<std::uint32_t>(script_->pid()));
  EXPECT_EQ(sample.stack.status, 0u);
  const auto frames = resolve(sample.stack);
  ASSERT_EQ(frames.size(), 3u);
  expect_frame(frames[0], "inner", script_line("inner-call"));
  expect_frame(frames[1], "outer", script_line("outer-call"));
  expect_frame(frames[2], "<module>", script_line("command"));
}

TEST_P(PythonFramesBpf, AnotherThreadIsFoundWhileTheMainOneWaitsWithoutTheGil) {
  const auto sample = run("thread");
  EXPECT_NE(sample.tid, static_cast<std::uint32_t>(script_->pid()));
  EXPECT_EQ(sample.stack.status, 0u);
  const auto frames = resolve(sample.stack);
  ASSERT_GE(frames.size(), 4u);
  expect_frame(frames[0], "inner", script_line("inner-call"));
  expect_frame(frames[1], "outer", script_line("outer-call"));
  expect_frame(frames[2], qualified("Worker", "run"), script_line("worker-call"));
  // Then threading.py's own frames, which start the thread.
  EXPECT_NE(frames.back().file.find("threading.py"), std::string::npos) << frames.back().file;
  EXPECT_EQ(frames.back().function, qualified("Thread", "_bootstrap"));
}

TEST_P(PythonFramesBpf, DeepStacksKeepTheInnermostFramesAndSayTheyAreCut) {
  const auto sample = run("deep");
  EXPECT_EQ(sample.stack.depth, static_cast<std::uint32_t>(NT_PYTHON_FRAMES_MAX));
  EXPECT_EQ(sample.stack.status, static_cast<std::uint32_t>(NT_PYTHON_TRUNCATED));
  const auto frames = resolve(sample.stack);
  ASSERT_EQ(frames.size(), static_cast<std::size_t>(NT_PYTHON_FRAMES_MAX));
  expect_frame(frames[0], "deep", script_line("deep-call"));
  for (std::size_t i = 1; i < frames.size(); ++i)
    expect_frame(frames[i], "deep", script_line("deep-recurse"));
}

TEST_P(PythonFramesBpf, AProcessWithoutOffsetsGetsNoFrames) {
  const std::uint32_t key = static_cast<std::uint32_t>(script_->pid());
  ASSERT_EQ(bpf_map__delete_elem(skeleton_->maps.python_processes, &key, sizeof key, 0), 0);
  const auto sample = run("main");
  EXPECT_EQ(sample.stack.depth, 0u);
  EXPECT_EQ(sample.stack.status, static_cast<std::uint32_t>(NT_PYTHON_NOT_PYTHON));
}

TEST_P(PythonFramesBpf, AReusedPidDoesNotTakeAnEarlierProcesssOffsets) {
  const std::uint32_t key = static_cast<std::uint32_t>(script_->pid());
  const auto offsets = to_abi_offsets(process_.offsets, process_.runtime_address,
                                      id_.start_ticks + 500, 1'000'000'000 / sysconf(_SC_CLK_TCK));
  ASSERT_EQ(bpf_map__update_elem(skeleton_->maps.python_processes, &key, sizeof key, &offsets,
                                 sizeof offsets, BPF_ANY),
            0);
  EXPECT_EQ(run("main").stack.status, static_cast<std::uint32_t>(NT_PYTHON_NOT_PYTHON));
}

// The user-space walk of the same live process: the main thread waits in the command loop,
// which the detected offsets (3.13: read from _PyRuntime.debug_offsets) must lead to.
TEST_P(PythonFramesBpf, UserSpaceWalkFindsTheWaitingMainThread) {
  const auto threads = walk_python_threads(*memory_, process_);
  ASSERT_TRUE(threads.error.empty()) << threads.error;
  ASSERT_EQ(threads.threads.size(), 1u);
  const auto &main = threads.threads[0];
  if (process_.version.minor >= 11) {
    EXPECT_EQ(main.native_thread_id, static_cast<std::uint64_t>(script_->pid()));
  }
  EXPECT_NE(main.pthread_id, 0u);
  ASSERT_EQ(main.frames.size(), 1u);
  expect_frame(resolver_.resolve(process_, *memory_, main.frames[0]), "<module>",
               script_line("command") - 1); // `for command in sys.stdin:`
}

TEST_P(PythonFramesBpf, DetectionNamesTheInterpreterAndItsVersion) {
  const auto expected_minor = python_version_from_path(GetParam());
  ASSERT_TRUE(expected_minor.has_value()) << GetParam();
  EXPECT_EQ(process_.version.minor, expected_minor->minor);
  EXPECT_NE(process_.runtime_address, 0u);
  EXPECT_NE(process_.types.code, 0u);
  if (process_.version.minor >= 13) {
    // The debug offsets were used, and the built-in fallback agrees with them for this build.
    EXPECT_TRUE(process_.offsets.from_debug_offsets);
    const auto table = *builtin_offsets(process_.version);
    const auto &live = process_.offsets;
    EXPECT_EQ(table.runtime_interpreters_head, live.runtime_interpreters_head);
    EXPECT_EQ(table.interp_threads_head, live.interp_threads_head);
    EXPECT_EQ(table.thread_native_id, live.thread_native_id);
    EXPECT_EQ(table.thread_frame, live.thread_frame);
    EXPECT_EQ(table.frame_instr, live.frame_instr);
    EXPECT_EQ(table.code_adaptive, live.code_adaptive);
    EXPECT_EQ(table.unicode_ascii_size, live.unicode_ascii_size);
  }
}

std::vector<std::string> test_pythons() {
  std::vector<std::string> pythons;
  std::istringstream list(NEUTRACER_TEST_PYTHONS);
  for (std::string python; std::getline(list, python, '|');)
    if (!python.empty())
      pythons.push_back(python);
  return pythons;
}

INSTANTIATE_TEST_SUITE_P(LocalInterpreters, PythonFramesBpf, testing::ValuesIn(test_pythons()),
                         [](const testing::TestParamInfo<std::string> &info) {
                           std::string name;
                           for (const char c : info.param)
                             name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

} // namespace
} // namespace neutracer
