// SPDX-License-Identifier: Apache-2.0
#include "pystacks/python_detection.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "common/elf_symbols.h"
#include "common/proc_parsers.h"
#include "pystacks/python_objects.h"
#include "pystacks/python_thread_walker.h"

namespace neutracer {
namespace {

bool looks_like_interpreter(std::string_view path, bool &library) {
  const auto slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  library = name.starts_with("libpython3");
  return library || name.starts_with("python");
}

std::string symbol_error(const std::string &path) {
  return path + " exports no _PyRuntime (not CPython 3.9+, or stripped of its dynamic symbols)";
}

// Thread states the layout check looks at.
constexpr std::size_t kCheckedThreads = NT_PYTHON_THREADS_MAX;

// Whether the offsets fit the live process: the thread states of interpreters.head point back
// at it, at least one carries the TID of a live thread of the process (3.11+), and the code
// object of each thread's innermost frame reads as one.
PythonDetection check_layout(const ProcessMemory &memory, PythonProcess process,
                             const std::vector<int> &live_thread_ids) {
  PythonDetection detection;
  const PythonOffsets &offsets = process.offsets;
  const auto interpreter =
      memory.read_value<std::uint64_t>(process.runtime_address + offsets.runtime_interpreters_head);
  if (!interpreter) {
    detection.error = "cannot read _PyRuntime";
    return detection;
  }
  if (*interpreter == 0) {
    detection.error = "the interpreter is not initialised yet";
    detection.retry_later = true;
    return detection;
  }
  const auto threads = walk_python_threads(memory, process, kCheckedThreads, 1);
  if (!threads.error.empty()) {
    detection.error = threads.error;
    detection.retry_later = true; // a thread list walked while a thread came or went
    return detection;
  }
  if (threads.threads.empty()) {
    detection.error = "the interpreter has no thread state yet";
    detection.retry_later = true;
    return detection;
  }
  const std::set<int> live(live_thread_ids.begin(), live_thread_ids.end());
  bool live_thread_found = false;
  bool frame_seen = false;
  bool frame_read = false;
  for (const auto &thread : threads.threads) {
    const auto owner =
        memory.read_value<std::uint64_t>(thread.thread_state + offsets.thread_interp);
    if (!owner || *owner != *interpreter) {
      detection.error = "thread states do not point back at their interpreter: the offsets of " +
                        process.version.text() + " do not fit this build";
      return detection;
    }
    if (thread.native_thread_id != 0 && thread.native_thread_id <= INT32_MAX &&
        live.contains(static_cast<int>(thread.native_thread_id)))
      live_thread_found = true;
    if (!thread.frames.empty()) {
      frame_seen = true;
      if (read_python_code_header(memory, offsets, process.types, thread.frames.front().code))
        frame_read = true;
    }
  }
  // These two read state that moves while the process runs (threads come and go, frames are
  // pushed and popped under the reader), so a miss is asked again; offsets that truly do not
  // fit miss every time and run out of attempts.
  if (offsets.thread_native_id != kNoField && !live.empty() && !live_thread_found) {
    detection.error = "no thread state carries a thread id of the process: the offsets of " +
                      process.version.text() + " do not fit this build";
    detection.retry_later = true;
    return detection;
  }
  if (frame_seen && !frame_read) {
    detection.error = "frames do not lead to code objects: the offsets of " +
                      process.version.text() + " do not fit this build";
    detection.retry_later = true;
    return detection;
  }
  detection.process = std::move(process);
  return detection;
}

} // namespace

std::vector<PythonInterpreterFile> python_interpreter_files(std::string_view maps_text) {
  // (dev, inode) -> the file; its mapping of offset 0 gives the load address.
  std::map<std::pair<std::uint64_t, std::uint64_t>, PythonInterpreterFile> files;
  std::istringstream lines{std::string(maps_text)};
  for (std::string line; std::getline(lines, line);) {
    const auto entry = parse_maps_line(line);
    bool library = false;
    if (!entry || !looks_like_interpreter(entry->path, library))
      continue;
    const auto version = python_version_from_path(entry->path);
    if (library && !version)
      continue; // libpython3.so: the stable-ABI shim
    auto &file = files[{entry->dev, entry->inode}];
    if (file.path.empty()) {
      file.path = entry->path;
      file.library = library;
      file.version_from_name = version;
      file.deleted = entry->deleted;
    }
    if (entry->offset == 0 && (file.load_start == 0 || entry->start < file.load_start)) {
      file.load_start = entry->start;
      file.load_end = entry->end;
    }
  }
  std::vector<PythonInterpreterFile> out;
  for (auto &[key, file] : files)
    if (file.load_start != 0)
      out.push_back(std::move(file));
  std::stable_sort(out.begin(), out.end(),
                   [](const auto &a, const auto &b) { return a.library > b.library; });
  return out;
}

PythonDetection describe_python(const ProcessMemory &memory, const ProcessId &id,
                                const PythonInterpreterFile &file, const PythonSymbols &symbols,
                                const std::vector<int> &live_thread_ids) {
  PythonDetection detection;
  const std::uint64_t bias = file.load_start - symbols.first_load_address;
  std::optional<PythonVersion> version = file.version_from_name;
  if (symbols.version != 0) {
    const auto hex = memory.read_value<std::uint64_t>(bias + symbols.version);
    const auto exported = hex ? python_version_from_hex(*hex) : std::nullopt;
    if (exported && version && !exported->same_minor(*version)) {
      detection.error =
          file.path + " is named for " + version->text() + " but says it is " + exported->text();
      return detection;
    }
    if (exported)
      version = exported;
  }
  if (!version) {
    detection.error = "cannot tell the version of " + file.path;
    return detection;
  }
  PythonProcess process;
  process.id = id;
  process.interpreter_path = file.path;
  process.version = *version;
  process.runtime_address = bias + symbols.runtime;
  const auto table = builtin_offsets(*version);
  if (!table) {
    detection.error = "CPython " + version->text() + " is not supported (3.9 to 3.13 are)";
    return detection;
  }
  process.offsets = *table;
  if (version->minor >= 13) {
    std::vector<std::uint8_t> block(kDebugOffsetsSize);
    if (memory.read(process.runtime_address, block)) {
      auto parsed = offsets_from_debug_offsets(block);
      if (parsed.offsets) {
        process.offsets = *parsed.offsets;
        process.offsets.version = *version; // Py_Version and the block agree on the minor
      } else {
        detection.note = "debug offsets unusable (" + parsed.error + "), built-in table used";
      }
    } else {
      detection.note = "debug offsets unreadable, built-in table used";
    }
  }
  process.types.code = symbols.code_type ? bias + symbols.code_type : 0;
  process.types.unicode = symbols.unicode_type ? bias + symbols.unicode_type : 0;
  process.types.bytes = symbols.bytes_type ? bias + symbols.bytes_type : 0;
  auto checked = check_layout(memory, std::move(process), live_thread_ids);
  checked.note = detection.note;
  return checked;
}

PythonDetection detect_python(const ProcFs &procfs, const ProcessId &id,
                              const ProcessMemory &memory) {
  PythonDetection detection;
  const auto maps = procfs.read(id.pid, "maps", 16 << 20);
  if (!maps) {
    detection.error = "cannot read the process's maps";
    return detection;
  }
  const auto files = python_interpreter_files(*maps);
  if (files.empty()) {
    detection.error = "no Python interpreter mapped";
    return detection;
  }
  for (const auto &file : files) {
    // The mapping itself, even when the file was replaced on disk or lives in a container; the
    // path inside the process's root when map_files is not open to us.
    SymbolValues symbols = find_symbol_values(
        procfs.mapped_file_path(id.pid, file.load_start, file.load_end).string(),
        {"_PyRuntime", "Py_Version", "PyCode_Type", "PyUnicode_Type", "PyBytes_Type"});
    if (!symbols.error.empty() && !file.deleted)
      symbols = find_symbol_values(
          procfs.path_in_process_root(id.pid, file.path).string(),
          {"_PyRuntime", "Py_Version", "PyCode_Type", "PyUnicode_Type", "PyBytes_Type"});
    if (!symbols.error.empty()) {
      detection.error = symbols.error;
      continue;
    }
    const auto runtime = symbols.found.find("_PyRuntime");
    if (runtime == symbols.found.end()) {
      detection.error = symbol_error(file.path);
      continue;
    }
    const auto value_of = [&](const char *name) {
      const auto found = symbols.found.find(name);
      return found == symbols.found.end() ? 0 : found->second.value;
    };
    PythonSymbols python_symbols;
    python_symbols.runtime = runtime->second.value;
    python_symbols.version = value_of("Py_Version");
    python_symbols.code_type = value_of("PyCode_Type");
    python_symbols.unicode_type = value_of("PyUnicode_Type");
    python_symbols.bytes_type = value_of("PyBytes_Type");
    python_symbols.first_load_address = symbols.first_load_address;
    return describe_python(memory, id, file, python_symbols, procfs.list_thread_ids(id.pid));
  }
  return detection;
}

} // namespace neutracer
