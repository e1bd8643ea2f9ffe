// SPDX-License-Identifier: Apache-2.0
#pragma once
// Builds CPython's objects (str, bytes, code, frames, thread states, interpreter, runtime) in
// fake process memory, at the offsets of a given version, for the pystacks tests.
#include <cstdint>
#include <string_view>
#include <vector>

#include "pystacks/python_offsets.h"
#include "pystacks/python_process.h"
#include "tests/unit/fake_process_memory.h"

namespace neutracer::test {

class FakePython {
public:
  explicit FakePython(PythonVersion version) : offsets(*builtin_offsets(version)) {
    for (const std::uint64_t type : {types.code, types.unicode, types.bytes})
      memory.map(type, 64);
  }

  FakeProcessMemory memory;
  PythonOffsets offsets;
  PythonTypeAddresses types{0x1000, 0x2000, 0x3000};

  // A compact str of `kind` (1, 2, 4) code units, ASCII when every code point is < 128 and
  // kind is 1.
  std::uint64_t str(const std::vector<std::uint32_t> &code_points, std::uint32_t kind = 1) {
    bool ascii = kind == 1;
    for (const auto point : code_points)
      ascii = ascii && point < 0x80;
    const std::uint32_t header = ascii ? offsets.unicode_ascii_size : offsets.unicode_compact_size;
    const std::uint64_t address = allocate(header + (code_points.size() + 1) * kind);
    memory.put<std::uint64_t>(address + offsets.object_type, types.unicode);
    memory.put<std::int64_t>(address + offsets.unicode_length,
                             static_cast<std::int64_t>(code_points.size()));
    memory.put<std::uint32_t>(address + offsets.unicode_state,
                              (kind << 2) | 0x20 | (ascii ? 0x40 : 0) | 0x80);
    for (std::size_t i = 0; i < code_points.size(); ++i) {
      const std::uint64_t at = address + header + i * kind;
      if (kind == 1)
        memory.put<std::uint8_t>(at, static_cast<std::uint8_t>(code_points[i]));
      else if (kind == 2)
        memory.put<std::uint16_t>(at, static_cast<std::uint16_t>(code_points[i]));
      else
        memory.put<std::uint32_t>(at, code_points[i]);
    }
    return address;
  }
  std::uint64_t str(std::string_view ascii) {
    return str(std::vector<std::uint32_t>(ascii.begin(), ascii.end()));
  }

  std::uint64_t bytes(const std::vector<std::uint8_t> &data) {
    const std::uint64_t address = allocate(offsets.bytes_data + data.size() + 1);
    memory.put<std::uint64_t>(address + offsets.object_type, types.bytes);
    memory.put<std::int64_t>(address + offsets.bytes_size, static_cast<std::int64_t>(data.size()));
    memory.write(address + offsets.bytes_data, data);
    return address;
  }

  // A code object; co_name and co_qualname both get `name` unless `qualname` is given.
  std::uint64_t code(std::string_view filename, std::string_view name, int first_line,
                     const std::vector<std::uint8_t> &line_table, std::string_view qualname = {}) {
    const std::uint64_t address = allocate(512);
    memory.put<std::uint64_t>(address + offsets.object_type, types.code);
    memory.put<std::uint64_t>(address + offsets.code_filename, str(filename));
    memory.put<std::uint64_t>(address + offsets.code_name, str(name));
    if (offsets.code_qualname != kNoField)
      memory.put<std::uint64_t>(address + offsets.code_qualname,
                                str(qualname.empty() ? name : qualname));
    memory.put<std::int32_t>(address + offsets.code_firstlineno, first_line);
    memory.put<std::uint64_t>(address + offsets.code_linetable, bytes(line_table));
    return address;
  }

  // The frame's instruction field for the instruction `byte_offset` bytes into `code`.
  std::uint64_t instr_at(std::uint64_t code_address, std::int64_t byte_offset) const {
    switch (offsets.instr_kind) {
    case InstructionKind::kLastiBytes:
      return static_cast<std::uint32_t>(static_cast<std::int32_t>(byte_offset));
    case InstructionKind::kLastiUnits:
      return static_cast<std::uint32_t>(static_cast<std::int32_t>(byte_offset / 2));
    case InstructionKind::kPointer:
      break;
    }
    return code_address + offsets.code_adaptive + static_cast<std::uint64_t>(byte_offset);
  }

  std::uint64_t frame(std::uint64_t code_address, std::uint64_t instr, std::uint64_t previous,
                      std::uint8_t owner = 0) {
    const std::uint64_t address = allocate(128);
    memory.put<std::uint64_t>(address + offsets.frame_code, code_address);
    if (offsets.instr_kind == InstructionKind::kPointer)
      memory.put<std::uint64_t>(address + offsets.frame_instr, instr);
    else
      memory.put<std::uint32_t>(address + offsets.frame_instr, static_cast<std::uint32_t>(instr));
    memory.put<std::uint64_t>(address + offsets.frame_previous, previous);
    if (offsets.frame_owner != kNoField)
      memory.put<std::uint8_t>(address + offsets.frame_owner, owner);
    return address;
  }

  // A thread state whose current frame is `top` (through a _PyCFrame in 3.11 and 3.12).
  std::uint64_t thread(std::uint64_t interpreter, std::uint64_t native_id, std::uint64_t pthread_id,
                       std::uint64_t top, std::uint64_t next = 0) {
    const std::uint64_t address = allocate(256);
    memory.put<std::uint64_t>(address + offsets.thread_next, next);
    memory.put<std::uint64_t>(address + offsets.thread_interp, interpreter);
    memory.put<std::uint64_t>(address + offsets.thread_pthread_id, pthread_id);
    if (offsets.thread_native_id != kNoField)
      memory.put<std::uint64_t>(address + offsets.thread_native_id, native_id);
    if (offsets.cframe_current_frame != kNoField) {
      const std::uint64_t cframe = allocate(32);
      memory.put<std::uint64_t>(cframe + offsets.cframe_current_frame, top);
      memory.put<std::uint64_t>(address + offsets.thread_frame, cframe);
    } else {
      memory.put<std::uint64_t>(address + offsets.thread_frame, top);
    }
    return address;
  }

  // The interpreter state, allocated before its threads (they point back at it).
  std::uint64_t interpreter() { return allocate(offsets.interp_threads_head + 64); }
  void set_threads(std::uint64_t interpreter, std::uint64_t first_thread) {
    memory.put<std::uint64_t>(interpreter + offsets.interp_threads_head, first_thread);
  }

  std::uint64_t runtime(std::uint64_t interpreter) {
    const std::uint64_t address = allocate(offsets.runtime_interpreters_head + 64);
    memory.put<std::uint64_t>(address + offsets.runtime_interpreters_head, interpreter);
    return address;
  }

  PythonProcess process(std::uint64_t runtime_address, int pid = 4242) const {
    PythonProcess process;
    process.id = ProcessId{pid, 1000};
    process.version = offsets.version;
    process.runtime_address = runtime_address;
    process.offsets = offsets;
    process.types = types;
    return process;
  }

  std::uint64_t allocate(std::size_t size) {
    const std::uint64_t address = next_;
    memory.map(address, size);
    next_ += (size + 0xfff) & ~std::uint64_t{0xfff}; // a gap: reads past an object fail
    next_ += 0x1000;
    return address;
  }

private:
  std::uint64_t next_ = 0x100000;
};

} // namespace neutracer::test
