// SPDX-License-Identifier: Apache-2.0
// Where the daemon's heap goes at PROCS traced processes x KERNELS kernels (issue 19, item 1),
// without root, BPF or the processes themselves: the real DaemonLoop scans a generated /proc
// tree (PROCS processes mapping one libcuda file) and a fake BPF side that hands it, like
// tests/bench/daemon_cost.sh's processes, KERNELS kernel names per process and one launch of
// each; the real /metrics and /api/v1 handlers serve its snapshots. Every operator new and
// delete is counted (usable sizes), so the figures are the C++ heap itself, free of glibc's
// arenas and of the libraries and BPF maps a real daemon maps. Built by
// tests/bench/daemon_heap.sh, which says how to run it.
#include <malloc.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/test_daemon.h"
#include "daemon/http_routes.h"
#include "http/content_encoding.h"
#include "http/http_rejections.h"
#include "http/http_request_counts.h"

namespace {

std::atomic<std::size_t> g_live{0};
std::atomic<std::size_t> g_peak{0};

// Out of line: inlined into operator delete, GCC takes free() for a mismatched deallocation.
[[gnu::noinline]] void *counted_alloc(std::size_t size) {
  void *p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr)
    throw std::bad_alloc();
  const auto live = g_live.fetch_add(malloc_usable_size(p)) + malloc_usable_size(p);
  auto peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
  return p;
}

[[gnu::noinline]] void counted_free(void *p) noexcept {
  if (p == nullptr)
    return;
  g_live.fetch_sub(malloc_usable_size(p));
  std::free(p);
}

} // namespace

void *operator new(std::size_t size) { return counted_alloc(size); }
void *operator new[](std::size_t size) { return counted_alloc(size); }
void operator delete(void *p) noexcept { counted_free(p); }
void operator delete[](void *p) noexcept { counted_free(p); }
void operator delete(void *p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void *p, std::size_t) noexcept { counted_free(p); }

namespace neutracer {
namespace {

const LibraryId kLibrary{makedev(0xfd, 0x01), 1835423};
constexpr std::uint64_t kStartTicks = 123456;
constexpr int kFirstPid = 100000;
constexpr std::uint64_t kFirstHandle = 0x10000;

class FakeTracing : public CudaTracing {
public:
  AttachSummary attach(const CudaLibrary &library) override {
    attached_.insert(library.id);
    return {.probes = 100,
            .missing_symbols = 0,
            .errors = 0,
            .first_error = {},
            .retry = false,
            .out_of_descriptors = false,
            .hot_entries = {}};
  }
  void detach(const LibraryId &id) override { attached_.erase(id); }
  bool is_attached(const LibraryId &id) const override { return attached_.contains(id); }
  std::vector<LibraryId> attached() const override { return {attached_.begin(), attached_.end()}; }
  std::size_t probe_count() const override { return 100 * attached_.size(); }
  bool per_process_launch_probes() const override { return false; }
  std::optional<double> measure_launch_trap_ns() override { return std::nullopt; }
  // Stacks off, as a daemon without call sites: what they cost is measured apart (BENCHMARKS.md,
  // "Call sites").
  std::uint32_t stack_depth() const override { return 0; }
  std::optional<std::vector<std::uint64_t>> read_stack(std::int32_t) const override {
    return std::nullopt;
  }
  std::vector<std::int32_t> stack_ids() const override { return {}; }
  std::optional<nt_python_stack> read_python_stack(std::uint64_t) const override {
    return std::nullopt;
  }
  void delete_python_stack(std::uint64_t) override {}
  bool set_python_process(std::uint32_t, const nt_python_offsets &) override { return false; }
  void forget_python_process(std::uint32_t) override {}
  void delete_stacks(const std::vector<std::int32_t> &) override {}
  std::vector<LaunchStackCount> read_launch_stacks() const override { return {}; }
  void delete_launch_stacks(const std::vector<LaunchStackCount> &) override {}
  // The kernel names of the processes that arrived since the last poll (cuModuleGetFunction).
  void poll(std::chrono::milliseconds,
            const std::function<void(std::span<const std::byte>)> &sink) override {
    nt_name_event event{};
    event.kind = NT_EVENT_NAME;
    event.api = NT_API_MODULE_GET_FUNCTION;
    for (; named_ < visible_; ++named_) {
      const auto &launch = launches[named_];
      event.tgid = event.tid = launch.tgid;
      event.proc_start_ns = launch.proc_start_ns;
      event.handle = launch.handle;
      const int len = std::snprintf(event.name, NT_NAME_MAX, "k%02d",
                                    static_cast<int>(launch.handle - kFirstHandle));
      event.name_len = static_cast<std::uint32_t>(len + 1);
      // As the BPF side writes it: the header and the name's bytes.
      sink(std::as_bytes(std::span(&event, 1)).first(offsetof(nt_name_event, name) + event.name_len));
    }
  }
  std::vector<LaunchCount> read_launch_counts() const override {
    return {launches.begin(), launches.begin() + static_cast<std::ptrdiff_t>(visible_)};
  }
  std::string attach_allocator_probes(int, const std::string &) override { return "none here"; }
  void detach_allocator_probes(int) override {}
  std::vector<InflightCall> read_inflight_calls() const override { return {}; }
  void delete_launch_counts(const std::vector<LaunchCount> &) override {}
  void forget_kernel_functions(const std::function<bool(std::uint32_t, std::uint64_t)> &) override {}
  void delete_inflight_calls(const std::vector<InflightCall> &) override {}
  TracerStats stats() const override { return {}; }
  std::uint32_t launch_map_max_entries() const override { return 65536; }
  std::uint32_t inflight_map_max_entries() const override { return 16384; }
  std::size_t attach_launch_probes(int, const std::vector<LibraryId> &, bool,
                                   std::string &) override {
    return 0;
  }
  void detach_launch_probes(int) override {}
  void set_launch_gate(std::uint32_t, bool) override {}
  LaunchGateHits launch_gate_hits(std::uint32_t) const override { return {}; }
  void forget_launch_gate(std::uint32_t) override {}
  void drop_sampled_calls(std::uint32_t) override {}

  // The launches of the first `processes` processes are counted, their names sent.
  void arrive(std::size_t processes, std::size_t kernels) {
    visible_ = std::min(launches.size(), processes * kernels);
  }

  std::vector<LaunchCount> launches; // one per process and kernel: handle kFirstHandle + kernel

private:
  std::set<LibraryId> attached_;
  std::size_t visible_ = 0;
  std::size_t named_ = 0;
};

void write_file(const std::filesystem::path &path, const std::string &text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Processes [first, end) like neutracer-scenario's: comm, one libcuda mapping, a start time.
void make_proc(const std::filesystem::path &root, int first, int end) {
  for (int i = first; i < end; ++i) {
    const int pid = kFirstPid + i;
    const auto dir = root / std::to_string(pid);
    std::filesystem::create_directories(dir);
    std::string stat = std::to_string(pid) + " (neutracer-scena) S 1 " + std::to_string(pid);
    for (int field = 6; field <= 21; ++field)
      stat += " " + std::to_string(field);
    write_file(dir / "stat", stat + " " + std::to_string(kStartTicks) + " 8589934592 51200\n");
    write_file(dir / "comm", "neutracer-scena\n");
    write_file(dir / "cgroup", "0::/user.slice/user-0.slice/session-2.scope\n");
    write_file(dir / "maps",
               "7f3a1c000000-7f3a1c200000 r--p 00000000 fd:01 1835423"
               "                    /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05\n");
    std::filesystem::create_symlink("/usr/bin/neutracer-scenario", dir / "exe");
  }
}

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

std::size_t rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.starts_with("VmRSS:"))
      return std::stoul(line.substr(6));
  return 0;
}

} // namespace
} // namespace neutracer

int main(int argc, char **argv) {
  using namespace neutracer;
  // As the daemon (daemon/main.cpp), so that the RSS line means the same.
  mallopt(M_ARENA_MAX, 2);
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  const int procs = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int kernels = argc > 2 ? std::atoi(argv[2]) : 50;
  const int scans = argc > 3 ? std::atoi(argv[3]) : 5;
  // Processes that start per scan, as daemon_cost.sh starts them in batches; 0: all at once.
  const int arriving = argc > 4 && std::atoi(argv[4]) > 0 ? std::atoi(argv[4]) : procs;
  char root_template[] = "/tmp/neutracer-heap-XXXXXX";
  if (mkdtemp(root_template) == nullptr)
    return 1;
  const std::filesystem::path root(root_template);

  Config config;
  config.proc_root = root.string();
  config.cuda.launch_counting = LaunchCounting::exact;
  config.alerts.journal = false;
  config.gpu_health.read_kernel_log = false;
  config.nvml.enabled = false;
  FakeTracing tracing;
  MetricsPublisher publisher;
  ServiceNotifier notifier;
  const std::uint64_t start_ns = kStartTicks * (1'000'000'000ull / sysconf(_SC_CLK_TCK));
  for (int i = 0; i < procs; ++i)
    for (int k = 0; k < kernels; ++k)
      tracing.launches.push_back({static_cast<std::uint32_t>(kFirstPid + i), start_ns,
                                  NT_API_LAUNCH_KERNEL,
                                  kFirstHandle + static_cast<std::uint64_t>(k), 1, 0});

  const std::size_t before = g_live.load();
  std::printf("%d processes x %d kernels, %d per scan, then %d scans\n", procs, kernels, arriving,
              scans);
  {
    test::TestDaemon loop(config, tracing, publisher, notifier);
    int arrived = 0;
    for (int scan = 1, steady = 0; steady < scans; ++scan) {
      if (arrived < procs) {
        const int next = std::min(procs, arrived + arriving);
        make_proc(root, arrived, next);
        arrived = next;
        tracing.arrive(static_cast<std::size_t>(arrived), static_cast<std::size_t>(kernels));
      } else {
        ++steady;
      }
      const auto live = g_live.load();
      g_peak = live;
      const auto started = std::chrono::steady_clock::now();
      loop.scan_once();
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
              .count();
      const auto arenas = mallinfo2();
      std::printf("scan %d: %.0f ms; heap live %.2f MiB (peak %.2f, +%.2f during the scan); RSS "
                  "%.1f MiB; glibc: %.1f MiB in arenas (%.1f free), %.1f MiB mmapped\n",
                  scan, ms, mib(g_live.load() - before), mib(g_peak.load() - before),
                  mib(g_peak.load() - live), static_cast<double>(rss_kib()) / 1024,
                  mib(arenas.arena), mib(arenas.fordblks), mib(arenas.hblkhd));
    }
    const auto snapshot = publisher.latest();
    std::printf("snapshot: /metrics text %.2f MiB kept deflated in %.2f MiB, gzip of "
                "/api/v1/kernels %.2f MiB and /api/v1/processes %.2f MiB\n",
                mib(snapshot->metrics_deflated->size),
                mib(snapshot->metrics_deflated->deflate.size()),
                mib(snapshot->kernels_json_gzip->size()),
                mib(snapshot->processes_json_gzip->size()));

    HttpRejectionCounters rejections;
    HttpRequestCounts requests;
    const auto routes = daemon_routes(publisher, config, rejections, requests);
    for (const char *path : {"/metrics", "/api/v1/kernels", "/api/v1/processes"})
      for (const char *encoding : {"", "gzip"}) {
        const auto live = g_live.load();
        g_peak = live;
        const auto started = std::chrono::steady_clock::now();
        const auto response = encode_for_client(encoding, route("GET", path, routes));
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
                .count();
        std::printf("GET %s%s: %.0f ms, %.2f MB sent; heap +%.2f MiB at the peak\n", path,
                    *encoding ? " (gzip)" : "", ms, static_cast<double>(response.body_size()) / 1e6,
                    mib(g_peak.load() - live));
      }
    // Without tearing down: a heap profiler's "leaked" figure (heaptrack) is then what the
    // daemon holds between scans.
    std::filesystem::remove_all(root);
    std::fflush(stdout);
    std::_Exit(0);
  }
}
