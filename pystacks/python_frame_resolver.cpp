// SPDX-License-Identifier: Apache-2.0
#include "pystacks/python_frame_resolver.h"

#include "pystacks/line_table.h"

namespace neutracer {
namespace {

std::size_t footprint(const PythonCode &code) {
  return sizeof(PythonCode) + code.filename.size() + code.name.size() + code.line_table.size();
}

} // namespace

std::int64_t instruction_byte_offset(const PythonOffsets &offsets, std::uint64_t code_address,
                                     std::uint64_t instr) {
  switch (offsets.instr_kind) {
  case InstructionKind::kLastiBytes:
    return static_cast<std::int32_t>(instr);
  case InstructionKind::kLastiUnits:
    return static_cast<std::int64_t>(static_cast<std::int32_t>(instr)) * 2;
  case InstructionKind::kPointer:
    if (instr == 0 || offsets.code_adaptive == kNoField)
      return -1;
    return static_cast<std::int64_t>(instr - (code_address + offsets.code_adaptive));
  }
  return -1;
}

PythonFrame PythonFrameResolver::resolve(const PythonProcess &process, const ProcessMemory &memory,
                                         const nt_python_frame &frame) {
  PythonFrame out;
  const auto code = code_at(process, memory, frame.code);
  if (!code) {
    out.file = out.function = "<unreadable>";
    return out;
  }
  out.readable = true;
  out.file = code->filename;
  out.function = code->name;
  const std::int64_t offset = instruction_byte_offset(process.offsets, frame.code, frame.instr);
  out.line = line_for_offset(process.offsets.line_format, code->line_table, code->header.first_line,
                             offset)
                 .value_or(0);
  return out;
}

std::shared_ptr<const PythonCode> PythonFrameResolver::code_at(const PythonProcess &process,
                                                               const ProcessMemory &memory,
                                                               std::uint64_t address) {
  const Key key{process.id, address};
  const auto header = read_python_code_header(memory, process.offsets, process.types, address);
  const auto cached = entries_.find(key);
  if (cached != entries_.end()) {
    // Code objects are freed and their memory reused: the cached one counts only while the
    // object at the address still points at the same strings and table.
    if (header && cached->second.code->header == *header) {
      recency_.splice(recency_.begin(), recency_, cached->second.recency);
      return cached->second.code;
    }
    erase(cached);
  }
  if (!header)
    return nullptr;
  auto code = read_python_code(memory, process.offsets, process.types, address);
  if (!code)
    return nullptr;
  auto shared = std::make_shared<const PythonCode>(std::move(*code));
  insert(key, shared);
  return shared;
}

void PythonFrameResolver::insert(const Key &key, std::shared_ptr<const PythonCode> code) {
  const std::size_t size = footprint(*code);
  if (limits_.max_codes == 0 || size > limits_.max_bytes)
    return; // never held: each resolve reads it again
  while (!recency_.empty() &&
         (entries_.size() >= limits_.max_codes || bytes_ + size > limits_.max_bytes))
    erase(entries_.find(recency_.back()));
  recency_.push_front(key);
  entries_.emplace(key, Entry{std::move(code), recency_.begin()});
  bytes_ += size;
}

void PythonFrameResolver::erase(std::map<Key, Entry>::iterator entry) {
  bytes_ -= footprint(*entry->second.code);
  recency_.erase(entry->second.recency);
  entries_.erase(entry);
}

void PythonFrameResolver::forget(const ProcessId &process) {
  auto entry = entries_.lower_bound(Key{process, 0});
  while (entry != entries_.end() && entry->first.first == process)
    erase(entry++);
}

} // namespace neutracer
