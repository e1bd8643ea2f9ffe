// SPDX-License-Identifier: Apache-2.0
#pragma once
// Turns raw Python frames (code object address, instruction) into file, function and line,
// reading code objects from the process once and keeping them in a bounded cache.
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "bpf/neutracer_abi.h"
#include "pystacks/process_memory.h"
#include "pystacks/python_objects.h"
#include "pystacks/python_process.h"

namespace neutracer {

struct PythonFrame {
  std::string file;      // co_filename
  std::string function;  // co_qualname (3.11+), else co_name
  int line = 0;          // 0 when the line table gives the instruction no line
  bool readable = false; // false: the code object could not be read; file and function are
                         // "<unreadable>"
};

// The byte offset into the code of a frame's instruction, as line_for_offset takes it; negative
// for a frame that has not started.
std::int64_t instruction_byte_offset(const PythonOffsets &offsets, std::uint64_t code_address,
                                     std::uint64_t instr);

class PythonFrameResolver {
public:
  struct Limits {
    std::size_t max_codes = 16384;            // code objects cached, all processes together
    std::size_t max_bytes = 32 * 1024 * 1024; // their strings and line tables
  };
  PythonFrameResolver() : PythonFrameResolver(Limits{}) {}
  explicit PythonFrameResolver(Limits limits) : limits_(limits) {}

  // Reads the frame's code object (or takes it from the cache, after checking that the object
  // at that address is still the same one) and decodes the line.
  PythonFrame resolve(const PythonProcess &process, const ProcessMemory &memory,
                      const nt_python_frame &frame);

  // Drops what was cached for a process that exited.
  void forget(const ProcessId &process);

  std::size_t cached_codes() const { return entries_.size(); }
  std::size_t cached_bytes() const { return bytes_; }

private:
  using Key = std::pair<ProcessId, std::uint64_t>;
  struct Entry {
    std::shared_ptr<const PythonCode> code;
    std::list<Key>::iterator recency;
  };

  std::shared_ptr<const PythonCode> code_at(const PythonProcess &process,
                                            const ProcessMemory &memory, std::uint64_t address);
  void insert(const Key &key, std::shared_ptr<const PythonCode> code);
  void erase(std::map<Key, Entry>::iterator entry);

  Limits limits_;
  std::map<Key, Entry> entries_;
  std::list<Key> recency_; // most recently used first
  std::size_t bytes_ = 0;
};

} // namespace neutracer
