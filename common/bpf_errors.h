// SPDX-License-Identifier: Apache-2.0
#pragma once
// Error text and libbpf logging shared by the BPF loaders (CudaTracer, OsTracer).
#include <stdexcept>
#include <string>

namespace neutracer {

// Startup failure of the BPF side, with a reason main() can map to an exit code.
class TracerError : public std::runtime_error {
public:
  enum class Reason { permission, unsupported, other };
  TracerError(Reason reason, const std::string &message)
      : std::runtime_error(message), reason(reason) {}
  Reason reason;
};

// The message for an EPERM from BPF: names the capability, not a bare errno.
std::string permission_hint();

// strerror of a libbpf-style error (negative or positive errno).
std::string errno_text(int error);
bool is_permission_error(int error);

// Routes libbpf's messages to spdlog: warnings as warnings, the rest at debug.
void route_libbpf_logs_to_spdlog();

// "cannot WHAT: REASON", as a permission error (with the privilege hint) or as missing kernel
// support (with `kernel_needs`).
TracerError bpf_load_error(const std::string &what, int error, const std::string &kernel_needs);

// The kernel's BTF at `path` cannot be used (`why`): the BPF programs are CO-RE and need it.
TracerError missing_btf_error(const std::string &path, const std::string &why);

} // namespace neutracer
