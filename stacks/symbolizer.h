// SPDX-License-Identifier: Apache-2.0
#pragma once
// Names the frames of native stacks: each address is placed in the file its process maps there
// (/proc/<pid>/maps), and named from that file's ELF function symbols, demangled. Bounded
// caches: names by (build id, file offset), symbol tables of the files most recently used, and
// the maps of the processes asked about (dropped by forget()).
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/process_id.h"
#include "common/procfs.h"
#include "stacks/call_site_stack.h"
#include "stacks/frame.h"
#include "stacks/function_table.h"
#include "stacks/process_maps.h"

namespace neutracer {

struct SymbolizerSettings {
  std::size_t max_names = 65536; // (build id, offset) -> function name entries
  std::size_t max_tables = 8;    // ELF files whose symbols are kept, most recently used
  // A file with more function symbols is not read (its frames keep file and offset): a table
  // costs ~24 bytes per symbol.
  std::size_t max_symbols_per_table = 2'000'000;
  std::size_t max_modules = 4096; // files (device, inode) whose identity is kept
};

struct SymbolizerStats {
  std::size_t names = 0;  // cached frame names
  std::size_t tables = 0; // symbol tables held
  std::uint64_t tables_loaded = 0;
  std::uint64_t unreadable_files = 0; // files that could not be opened as ELF
};

class Symbolizer {
public:
  explicit Symbolizer(const ProcFs &procfs, SymbolizerSettings settings = {});

  // The frames of `stack`, a stack of process `id` taken just now (the process should still be
  // alive: its maps place the addresses).
  SymbolizedStack symbolize(const ProcessId &id, const CallSiteStack &stack);
  // Drops what is kept about a process (its maps).
  void forget(const ProcessId &id);
  SymbolizerStats stats() const;

private:
  struct Module {
    std::shared_ptr<const std::string> path; // as the first process seen maps it
    std::string key;                         // build id, or "dev:inode" without one
    bool readable = false;
  };
  struct Name {
    std::shared_ptr<const std::string> function; // null: no function holds the offset
    std::uint64_t offset = 0;
  };
  struct Table {
    std::optional<FunctionTable> functions; // nullopt: too many symbols
    std::list<std::string>::iterator use;
  };

  const ProcessMaps *maps_of(const ProcessId &id, bool refresh);
  const Module &module_of(const ProcessId &id, const MapsEntry &mapping);
  Name name_of(const Module &module, const ProcessId &id, const MapsEntry &mapping,
               std::uint64_t file_offset);
  const FunctionTable *table_of(const Module &module, const ProcessId &id,
                                const MapsEntry &mapping);
  std::optional<ElfFile> open_file(const ProcessId &id, const MapsEntry &mapping);

  const ProcFs &procfs_;
  SymbolizerSettings settings_;
  std::map<ProcessId, ProcessMaps> maps_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, Module> modules_; // (dev, inode)
  // Least recently used first.
  std::list<std::pair<std::string, std::uint64_t>> name_use_;
  std::map<std::pair<std::string, std::uint64_t>,
           std::pair<Name, std::list<std::pair<std::string, std::uint64_t>>::iterator>>
      names_;
  std::list<std::string> table_use_;
  std::unordered_map<std::string, Table> tables_;
  std::uint64_t tables_loaded_ = 0;
  std::uint64_t unreadable_files_ = 0;
};

} // namespace neutracer
