// SPDX-License-Identifier: Apache-2.0
#pragma once
// Whether a proc_root can be scanned. Kept apart from validate_config, which is pure (and
// fuzzed): this one reads the file system.
#include <optional>
#include <string>

namespace neutracer {

// The problem with `path` as a /proc tree (e.g. "does not exist"), or nullopt when it is a
// readable directory holding at least one process directory: an all-digit name whose `stat`
// file is a regular file that begins with that same pid ("42 (comm) ..."), as the kernel writes
// it. A typo, an empty directory, another mount or any folder that merely holds a digit-named
// subfolder would otherwise start a daemon that scans nothing and reports itself healthy.
// `self` is not required: a host /proc mounted in a container from another PID namespace may
// lack a usable one, and fixture trees need not have it; the kernel writes each pid as the
// namespace of the mount sees it, so a bind-mounted host /proc passes too.
std::optional<std::string> check_proc_tree(const std::string &path);

} // namespace neutracer
