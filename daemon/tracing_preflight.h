// SPDX-License-Identifier: Apache-2.0
#pragma once
// Checks made before the BPF programs load. A host that cannot trace then gets the reason and
// its exit code (docs/operations.md, "Exit codes") rather than the loader's first errno, and a
// daemon that may not create uprobes stops at start instead of failing every attach later
// (CAP_BPF and CAP_PERFMON load the programs, but uprobes need CAP_SYS_ADMIN on current
// kernels).
#include <string>

namespace neutracer {

inline constexpr const char *kKernelBtfPath = "/sys/kernel/btf/vmlinux";

// Throws TracerError(unsupported) when the kernel's BTF is absent, unreadable or not BTF.
void require_kernel_btf(const std::string &path = kKernelBtfPath);

// Creates and removes a uprobe in this executable, for this process alone, the way the tracer
// attaches its probes. Throws TracerError(permission) when the kernel refuses and
// TracerError(unsupported) when it has no uprobe PMU; other failures are left to the tracer.
void require_uprobe_permission();

} // namespace neutracer
