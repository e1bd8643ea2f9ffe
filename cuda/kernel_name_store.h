// SPDX-License-Identifier: Apache-2.0
#pragma once
// The kernel names one process registered (handle -> label and full name, CUfunction ->
// CUkernel), kept within bounds: a traced program chooses how many names it registers and how
// long they are (Triton and torch.compile generate thousands), and the daemon must not grow
// with them. Names beyond the bounds are counted as dropped, not kept.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace neutracer {

// Longest label (short name) and full demangled name kept; longer ones are cut and end in
// "...". The full-name bound is the BPF name buffer's (NT_NAME_MAX): demangling can make a
// name longer than the mangled bytes the probe copied.
inline constexpr std::size_t kMaxKernelLabelBytes = 256;
inline constexpr std::size_t kMaxKernelFullNameBytes = 4096;

// What one kept name and one kept link cost besides the name text (hash node, bucket, string
// headers, allocator overhead), charged to the budget too: many short names must not get
// around it.
inline constexpr std::size_t kKernelNameEntryBytes = 128;
inline constexpr std::size_t kKernelLinkEntryBytes = 48;

// What every process's names and links together may hold: name text plus the entry costs.
class KernelNameBudget {
public:
  explicit KernelNameBudget(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  bool take(std::size_t bytes); // false, taking nothing, when it would go over
  void give_back(std::size_t bytes);
  std::size_t used_bytes() const { return used_bytes_; }
  std::size_t max_bytes() const { return max_bytes_; }

private:
  std::size_t max_bytes_;
  std::size_t used_bytes_ = 0;
};

struct KernelName {
  std::string short_name; // the label
  std::string full_name;  // demangled
};

class KernelNameStore {
public:
  // Names `handle` from its mangled name, unless the process already holds `max_names` names
  // or `budget` has no room: then the name is dropped and counted. A handle named again (a
  // module loaded twice at the same address) replaces its old name.
  void add(std::uint64_t handle, std::string_view mangled, std::size_t max_names,
           KernelNameBudget &budget);
  // cuKernelGetFunction: the CUfunction `function` runs the CUkernel `kernel`. At most
  // `max_links` links are kept, within `budget`; the rest are counted as dropped.
  void link(std::uint64_t function, std::uint64_t kernel, std::size_t max_links,
            KernelNameBudget &budget);

  // The name of a launch handle (a named handle, or a CUfunction linked to a named CUkernel).
  const KernelName *find(std::uint64_t handle) const;
  // The CUkernel a CUfunction was linked to, 0 when none.
  std::uint64_t kernel_of(std::uint64_t function) const;

  std::size_t size() const { return names_.size(); }
  std::size_t links() const { return function_to_kernel_.size(); }
  std::size_t bytes() const { return bytes_; } // as charged to the budget
  // Names and links not kept since the process was first seen.
  std::uint64_t dropped() const { return dropped_; }

  // Forgets everything and gives its bytes back to `budget`; called when the process goes.
  void clear(KernelNameBudget &budget);

private:
  std::unordered_map<std::uint64_t, KernelName> names_;
  std::unordered_map<std::uint64_t, std::uint64_t> function_to_kernel_;
  std::size_t bytes_ = 0;
  std::uint64_t dropped_ = 0;
};

// `text` cut to at most `max_bytes`, ending in "..." when cut, never inside a UTF-8 sequence.
std::string bounded_name(std::string text, std::size_t max_bytes);

} // namespace neutracer
