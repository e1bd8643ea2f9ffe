// SPDX-License-Identifier: Apache-2.0
#include "stacks/symbolizer.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "cuda/cuda_discovery.h"
#include "cuda/kernel_names.h"

namespace neutracer {
namespace {

// Where every thread's stack begins: a walk that reaches one of these is whole.
bool is_entry_function(std::string_view name) {
  constexpr std::array<std::string_view, 11> kEntries = {"_start",
                                                         "__libc_start_main",
                                                         "__libc_start_call_main",
                                                         "__libc_start_main_impl",
                                                         "start_thread",
                                                         "clone",
                                                         "clone3",
                                                         "__clone",
                                                         "__clone3",
                                                         "__clone_internal",
                                                         "_dl_start_user"};
  return std::find(kEntries.begin(), kEntries.end(), name) != kEntries.end();
}

// The C library calls main and thread functions: a walk that ends inside it, below the
// program's frames, has reached the start even where the library's static functions
// (__libc_start_call_main) have no symbol left to name them (Debian strips .symtab).
bool is_c_library(std::string_view path) {
  const auto name = base_name(path);
  return name.starts_with("libc.so") || name.starts_with("libc-") || name.starts_with("ld-linux") ||
         name.starts_with("libpthread");
}

} // namespace

Symbolizer::Symbolizer(const ProcFs &procfs, SymbolizerSettings settings)
    : procfs_(procfs), settings_(settings) {}

void Symbolizer::forget(const ProcessId &id) { maps_.erase(id); }

SymbolizerStats Symbolizer::stats() const {
  return {names_.size(), tables_.size(), tables_loaded_, unreadable_files_};
}

const ProcessMaps *Symbolizer::maps_of(const ProcessId &id, bool refresh) {
  if (const auto it = maps_.find(id); it != maps_.end() && !refresh)
    return &it->second;
  // The PID must still be this process: a reused PID's maps are another program's.
  auto maps = ProcessMaps::read(procfs_, id.pid);
  if (!maps || process_start_ticks(procfs_, id.pid) != id.start_ticks) {
    maps_.erase(id);
    return nullptr;
  }
  return &maps_.insert_or_assign(id, std::move(*maps)).first->second;
}

std::optional<ElfFile> Symbolizer::open_file(const ProcessId &id, const MapsEntry &mapping) {
  std::string error;
  // The path inside the process's root, if it still names the mapped file; else the mapping
  // itself (a deleted or replaced file, or an overlay whose files show another device).
  if (!mapping.deleted) {
    auto file = ElfFile::open(procfs_.path_in_process_root(id.pid, mapping.path).string(), error);
    if (file && file->device() == mapping.dev && file->inode() == mapping.inode)
      return file;
  }
  auto file =
      ElfFile::open(procfs_.mapped_file_path(id.pid, mapping.start, mapping.end).string(), error);
  if (!file)
    ++unreadable_files_;
  return file;
}

const Symbolizer::Module &Symbolizer::module_of(const ProcessId &id, const MapsEntry &mapping) {
  const std::pair file_id{mapping.dev, mapping.inode};
  if (const auto it = modules_.find(file_id); it != modules_.end())
    return it->second;
  if (modules_.size() >= settings_.max_modules)
    modules_.clear(); // rare: as many files as this mapped since start; they are read again
  Module module;
  module.path = std::make_shared<const std::string>(mapping.path);
  const auto file = open_file(id, mapping);
  module.readable = file.has_value();
  const auto build_id = file ? file->build_id() : std::string();
  module.key = !build_id.empty()
                   ? build_id
                   : std::to_string(mapping.dev) + ":" + std::to_string(mapping.inode);
  return modules_.emplace(file_id, std::move(module)).first->second;
}

const FunctionTable *Symbolizer::table_of(const Module &module, const ProcessId &id,
                                          const MapsEntry &mapping) {
  if (const auto it = tables_.find(module.key); it != tables_.end()) {
    table_use_.splice(table_use_.end(), table_use_, it->second.use);
    return it->second.functions ? &*it->second.functions : nullptr;
  }
  auto file = open_file(id, mapping);
  if (!file)
    return nullptr;
  while (!tables_.empty() && tables_.size() >= std::max<std::size_t>(1, settings_.max_tables)) {
    tables_.erase(table_use_.front());
    table_use_.pop_front();
  }
  ++tables_loaded_;
  Table table{FunctionTable::load(std::move(*file), settings_.max_symbols_per_table),
              table_use_.insert(table_use_.end(), module.key)};
  const auto &kept = tables_.emplace(module.key, std::move(table)).first->second;
  return kept.functions ? &*kept.functions : nullptr;
}

Symbolizer::Name Symbolizer::name_of(const Module &module, const ProcessId &id,
                                     const MapsEntry &mapping, std::uint64_t file_offset) {
  const std::pair key{module.key, file_offset};
  if (const auto it = names_.find(key); it != names_.end()) {
    name_use_.splice(name_use_.end(), name_use_, it->second.second);
    return it->second.first;
  }
  Name name;
  if (const auto *table = table_of(module, id, mapping))
    if (const auto function = table->find(file_offset)) {
      name.function = std::make_shared<const std::string>(demangle(function->name));
      name.offset = function->offset;
    }
  while (!names_.empty() && names_.size() >= std::max<std::size_t>(1, settings_.max_names)) {
    names_.erase(name_use_.front());
    name_use_.pop_front();
  }
  names_.emplace(key, std::pair{name, name_use_.insert(name_use_.end(), key)});
  return name;
}

SymbolizedStack Symbolizer::symbolize(const ProcessId &id, const CallSiteStack &stack) {
  SymbolizedStack result;
  const ProcessMaps *maps = maps_of(id, false);
  // A library loaded since the maps were read: read them again, once. Walks through code without
  // frame pointers bring addresses no maps hold, so this reads the maps of such a process at
  // each new stack; new stacks are few (stacks.max_sites_per_process in its life).
  if (maps && std::any_of(stack.addresses.begin(), stack.addresses.end(),
                          [&](std::uint64_t address) { return !maps->find(address); }))
    maps = maps_of(id, true);
  if (!maps) {
    for (const auto address : stack.addresses)
      result.frames.push_back(Frame{FrameKind::native, address, nullptr, nullptr, 0, 0, 0});
    result.end = StackEnd::unresolved;
    return result;
  }
  for (const auto address : stack.addresses) {
    Frame frame;
    frame.address = address;
    const MapsEntry *mapping = maps->find(address);
    if (!mapping) {
      // Not code of any file: where a caller kept no frame pointer, the walk reads garbage.
      // JIT code is lost the same way; what follows it cannot be trusted either.
      result.frames.push_back(frame);
      result.end = StackEnd::no_frame_pointer;
      return result;
    }
    frame.module_offset = address - mapping->start + mapping->offset;
    const Module &module = module_of(id, *mapping);
    frame.module = module.path;
    // A return address follows its call, which may end the function: name the call.
    if (module.readable && frame.module_offset > 0) {
      const Name name = name_of(module, id, *mapping, frame.module_offset - 1);
      frame.function = name.function;
      frame.function_offset = name.function ? name.offset + 1 : 0;
    }
    result.frames.push_back(std::move(frame));
  }
  if (stack.depth_limited)
    result.end = StackEnd::depth_limit;
  else if (!result.frames.empty() &&
           ((result.frames.back().function && is_entry_function(*result.frames.back().function)) ||
            (result.frames.back().module && is_c_library(*result.frames.back().module))))
    result.end = StackEnd::complete;
  else
    result.end = StackEnd::no_frame_pointer;
  return result;
}

} // namespace neutracer
