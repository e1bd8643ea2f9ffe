// SPDX-License-Identifier: Apache-2.0
#pragma once
// Human-readable labels for GPU kernel names, which the driver receives Itanium-mangled.
#include <string>
#include <string_view>

namespace neutracer {

// Demangles an Itanium C++ ABI name with abi::__cxa_demangle; returns the input unchanged when
// it is not a mangled name or demangling fails.
std::string demangle(std::string_view mangled);

// The short label for a kernel: demangled, with template arguments, the argument list, the return
// type and namespaces/classes removed.
std::string short_kernel_name(std::string_view mangled_or_plain);

} // namespace neutracer
