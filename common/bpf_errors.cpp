// SPDX-License-Identifier: Apache-2.0
#include "common/bpf_errors.h"

#include <bpf/libbpf.h>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <spdlog/spdlog.h>

namespace neutracer {
namespace {

int libbpf_log(enum libbpf_print_level level, const char *format, va_list args) {
  char line[1024];
  vsnprintf(line, sizeof line, format, args);
  std::string text(line);
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  if (level == LIBBPF_WARN)
    spdlog::warn("libbpf: {}", text);
  else
    spdlog::debug("libbpf: {}", text);
  return 0;
}

} // namespace

std::string errno_text(int error) { return std::strerror(error < 0 ? -error : error); }

bool is_permission_error(int error) {
  const int e = error < 0 ? -error : error;
  return e == EPERM || e == EACCES;
}

void route_libbpf_logs_to_spdlog() { libbpf_set_print(libbpf_log); }

TracerError bpf_load_error(const std::string &what, int error, const std::string &kernel_needs) {
  const std::string message = "cannot " + what + ": " + errno_text(error);
  if (is_permission_error(error))
    return TracerError(TracerError::Reason::permission, message + "; " + permission_hint());
  return TracerError(TracerError::Reason::unsupported, message + "; " + kernel_needs);
}

TracerError missing_btf_error(const std::string &path, const std::string &why) {
  return TracerError(TracerError::Reason::unsupported,
                     "kernel BTF (" + path + ") is not usable: " + why +
                         "; neutracerd's BPF programs need a kernel built with "
                         "CONFIG_DEBUG_INFO_BTF=y (Debian's kernels are)");
}

std::string permission_hint() {
  return "neutracerd needs CAP_SYS_ADMIN (with CAP_BPF and CAP_PERFMON) to load BPF programs and "
         "attach uprobes: CAP_PERFMON alone is refused when kernel.perf_event_paranoid > 2 "
         "(Debian's "
         "default) and on kernels with the CVE-2025-38466 fix; run it as root or from the shipped "
         "systemd unit";
}

} // namespace neutracer
