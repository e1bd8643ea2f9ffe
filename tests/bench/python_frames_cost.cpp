// SPDX-License-Identifier: Apache-2.0
// What the kernel's Python frame walk (bpf/python_frames.bpf.h) adds to a probed call: a Python
// loop calls a C function through ctypes under a stack of a chosen depth, with no probe, with
// the probe but no offsets for the process (the walk returns at once), and with the walk.
// Prints ns per call (median of the rounds) for each, and the time read_python_stack itself
// took per call (bpf_ktime_get_ns around it, summed in the program). Needs root.
//
//   neutracer_python_frames_bench PYTHON DEPTH [CALLS] [ROUNDS]
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include "common/bpf_link.h"
#include "common/elf_symbols.h"
#include "common/proc_parsers.h"
#include "common/procfs.h"
#include "py_frames_probe.skel.h"
#include "pystacks/python_detection.h"

namespace {

using namespace neutracer;

struct Script {
  pid_t pid = -1;
  int in = -1;
  FILE *out = nullptr;
  ~Script() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (out)
      std::fclose(out);
    if (in >= 0)
      ::close(in);
  }
  std::string line() {
    char buffer[256];
    if (!std::fgets(buffer, sizeof buffer, out))
      return "";
    std::string text = buffer;
    while (!text.empty() && text.back() == '\n')
      text.pop_back();
    return text;
  }
  double run() {
    if (::write(in, "run\n", 4) != 4)
      return -1;
    return std::stod(line());
  }
};

// Nanoseconds and walks read_python_stack took so far, summed over the CPUs.
std::pair<double, double> walk_totals(py_frames_probe *skeleton) {
  const int cpus = libbpf_num_possible_cpus();
  std::vector<std::uint64_t> values(2 * static_cast<std::size_t>(cpus));
  const std::uint32_t zero = 0;
  if (cpus <= 0 || bpf_map__lookup_elem(skeleton->maps.walk_times, &zero, sizeof zero,
                                        values.data(), values.size() * 8, 0) != 0)
    return {0, 0};
  double ns = 0, walks = 0;
  for (int cpu = 0; cpu < cpus; ++cpu) {
    ns += static_cast<double>(values[2 * cpu]);
    walks += static_cast<double>(values[2 * cpu + 1]);
  }
  return {ns, walks};
}

double ns_per_walk(py_frames_probe *skeleton, const std::pair<double, double> &since) {
  const auto now = walk_totals(skeleton);
  const double walks = now.second - since.second;
  return walks > 0 ? (now.first - since.first) / walks : 0;
}

double median_of(Script &script, int rounds) {
  std::vector<double> values;
  for (int i = 0; i < rounds; ++i)
    values.push_back(script.run());
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct SkeletonDeleter {
  void operator()(py_frames_probe *skeleton) const { py_frames_probe::destroy(skeleton); }
};

// Empties the ring buffer as the probe fills it, so that reservations never fail.
int drop_sample(void *, void *, std::size_t) { return 0; }

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PYTHON DEPTH [CALLS] [ROUNDS]\n", argv[0]);
    return 2;
  }
  const std::string python = argv[1];
  const std::string depth = argv[2];
  const std::string calls = argc > 3 ? argv[3] : "200000";
  const int rounds = argc > 4 ? std::stoi(argv[4]) : 7;

  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0)
    return 1;
  Script script;
  script.pid = ::fork();
  if (script.pid == 0) {
    ::dup2(to_child[0], 0);
    ::dup2(from_child[1], 1);
    const std::string path = NEUTRACER_SOURCE_DIR "/tests/bench/python_frames_cost.py";
    const char *args[] = {python.c_str(), "-B",          path.c_str(), NEUTRACER_PY_FRAMES_TARGET,
                          depth.c_str(),  calls.c_str(), nullptr};
    ::execv(python.c_str(), const_cast<char *const *>(args));
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  script.in = to_child[1];
  script.out = ::fdopen(from_child[0], "r");
  if (script.line() != "ready") {
    std::fprintf(stderr, "the script did not start\n");
    return 1;
  }

  ProcFs procfs;
  LiveProcessMemory memory(script.pid);
  const auto stat = parse_proc_stat(procfs.read(script.pid, "stat").value_or(""));
  const ProcessId id{script.pid, stat ? stat->start_ticks : 0};
  const auto detection = detect_python(procfs, id, memory);
  if (!detection.process) {
    std::fprintf(stderr, "not detected: %s\n", detection.error.c_str());
    return 1;
  }
  const double bare = median_of(script, rounds);

  std::unique_ptr<py_frames_probe, SkeletonDeleter> skeleton(py_frames_probe::open());
  if (!skeleton)
    return 1;
  skeleton->rodata->submit_flags = BPF_RB_NO_WAKEUP;
  if (py_frames_probe::load(skeleton.get()) != 0)
    return 1;
  const auto symbols = find_symbol_offsets(NEUTRACER_PY_FRAMES_TARGET, {"nt_py_frames_target"});
  if (symbols.found.size() != 1)
    return 1;
  BpfLink link(bpf_program__attach_uprobe(skeleton->progs.py_frames_probe, false, script.pid,
                                          NEUTRACER_PY_FRAMES_TARGET,
                                          symbols.found.begin()->second));
  std::unique_ptr<ring_buffer, void (*)(ring_buffer *)> samples(
      ring_buffer__new(bpf_map__fd(skeleton->maps.samples), drop_sample, nullptr, nullptr),
      ring_buffer__free);
  if (!link || !samples)
    return 1;
  // Drains the ring buffer (no wakeups: every millisecond) so that reservations never fail.
  std::atomic<bool> stop = false;
  std::thread drain([&] {
    while (!stop) {
      ring_buffer__consume(samples.get());
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  const auto before_no_walk = walk_totals(skeleton.get());
  const double probe_only = median_of(script, rounds);
  const double no_walk_ns = ns_per_walk(skeleton.get(), before_no_walk);

  const std::uint32_t key = static_cast<std::uint32_t>(script.pid);
  const auto offsets =
      to_abi_offsets(detection.process->offsets, detection.process->runtime_address, id.start_ticks,
                     1'000'000'000 / sysconf(_SC_CLK_TCK));
  bpf_map__update_elem(skeleton->maps.python_processes, &key, sizeof key, &offsets, sizeof offsets,
                       BPF_ANY);
  const auto before_walk = walk_totals(skeleton.get());
  const double walk = median_of(script, rounds);
  const double walk_ns = ns_per_walk(skeleton.get(), before_walk);
  stop = true;
  drain.join();

  std::printf("CPython %s, %s frames of recursion (+2), %s calls x %d rounds, median ns/call\n",
              detection.process->version.text().c_str(), depth.c_str(), calls.c_str(), rounds);
  std::printf("no probe            %8.1f\n", bare);
  std::printf("probe, no walk      %8.1f  (+%.1f; in the program %.0f ns)\n", probe_only,
              probe_only - bare, no_walk_ns);
  std::printf("probe and walk      %8.1f  (+%.1f; in the program %.0f ns)\n", walk,
              walk - probe_only, walk_ns);
  return 0;
}
