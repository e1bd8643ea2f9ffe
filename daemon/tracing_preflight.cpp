// SPDX-License-Identifier: Apache-2.0
#include "daemon/tracing_preflight.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <link.h>
#include <linux/perf_event.h>
#include <optional>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/bpf_errors.h"
#include "common/unique_fd.h"

namespace neutracer {
namespace {

constexpr const char *kUprobePmuType = "/sys/bus/event_source/devices/uprobe/type";

// Where the check puts its uprobe, never called: in this executable, which no other process
// maps, so registering the probe costs the kernel no walk over other processes (a libc function
// would, and took seconds on a busy host).
[[gnu::noinline, gnu::used]] void uprobe_permission_target() {
  asm volatile("" ::: "memory"); // a body of its own: the function must exist in the binary
}

struct ProbeSite {
  std::uint64_t address = 0; // run-time address to find
  std::optional<std::uint64_t> file_offset;
};

// The file offset behind a run-time address of the main program, from its program headers.
int find_file_offset(dl_phdr_info *info, std::size_t, void *data) {
  auto *site = static_cast<ProbeSite *>(data);
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0')
    return 0; // a shared library; the main program has an empty name
  const std::uint64_t vaddr = site->address - info->dlpi_addr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &segment = info->dlpi_phdr[i];
    if (segment.p_type == PT_LOAD && vaddr >= segment.p_vaddr &&
        vaddr < segment.p_vaddr + segment.p_filesz) {
      site->file_offset = vaddr - segment.p_vaddr + segment.p_offset;
      return 1;
    }
  }
  return 0;
}

} // namespace

void require_kernel_btf(const std::string &path) {
  const UniqueFd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!file)
    throw missing_btf_error(path, errno_text(errno));
  // struct btf_header starts with magic 0xeB9F (little-endian on x86) and version 1.
  unsigned char header[3] = {};
  const ssize_t got = ::read(file.get(), header, sizeof header);
  if (got < 0)
    throw missing_btf_error(path, errno_text(errno));
  if (got < static_cast<ssize_t>(sizeof header))
    throw missing_btf_error(path, "the file is empty or truncated");
  if (header[0] != 0x9f || header[1] != 0xeb || header[2] != 1)
    throw missing_btf_error(path, "the file does not hold BTF");
}

void require_uprobe_permission() {
  int pmu_type = -1;
  if (!(std::ifstream(kUprobePmuType) >> pmu_type))
    throw TracerError(TracerError::Reason::unsupported,
                      std::string("cannot read ") + kUprobePmuType +
                          ": the kernel needs uprobe events (CONFIG_UPROBE_EVENTS=y)");
  ProbeSite site{reinterpret_cast<std::uint64_t>(&uprobe_permission_target), {}};
  dl_iterate_phdr(find_file_offset, &site);
  if (!site.file_offset) {
    spdlog::debug("uprobe permission not checked: no file offset for the probe site");
    return;
  }
  static const std::string kSelf = "/proc/self/exe"; // the kernel resolves it for this process
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = static_cast<std::uint32_t>(pmu_type);
  attr.config1 = reinterpret_cast<std::uint64_t>(kSelf.c_str()); // uprobe_path
  attr.config2 = *site.file_offset;                              // probe_offset
  const UniqueFd event(static_cast<int>(
      syscall(SYS_perf_event_open, &attr, 0 /* this process */, -1, -1, PERF_FLAG_FD_CLOEXEC)));
  const int error = event ? 0 : errno;
  if (is_permission_error(error))
    throw bpf_load_error("create a uprobe", error, "");
  if (error != 0)
    spdlog::debug("uprobe permission check inconclusive: {}", errno_text(error));
}

} // namespace neutracer
