// SPDX-License-Identifier: Apache-2.0
#include "common/elf_symbols.h"
#include "common/proc_parsers.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace neutracer {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The stand-in driver is built at <build>/tests/standin/libcuda.so.1; this executable is
// <build>/tests/neutracer_unit_tests.
fs::path standin_library() {
  return fs::read_symlink("/proc/self/exe").parent_path() / "standin" / "libcuda.so.1";
}

std::vector<unsigned char> read_bytes(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class TempFile {
public:
  explicit TempFile(const std::string &contents) {
    std::string pattern = (fs::temp_directory_path() / "neutracer-elf-XXXXXX").string();
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0)
      throw std::runtime_error("mkstemp failed");
    ::close(fd);
    path_ = pattern;
    std::ofstream(path_, std::ios::binary) << contents;
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  const fs::path &path() const { return path_; }

private:
  fs::path path_;
};

// Where the dynamic loader maps `symbol` of `library`, as a file offset: the uprobe rule
// (address - mapping start + mapping file offset), using /proc/self/maps.
std::optional<std::uint64_t> loaded_file_offset(const fs::path &library, const char *symbol) {
  void *handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return std::nullopt;
  const auto address = reinterpret_cast<std::uint64_t>(::dlsym(handle, symbol));
  std::optional<std::uint64_t> offset;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto canonical = fs::canonical(library).string();
  while (address != 0 && std::getline(maps, line)) {
    std::uint64_t start = 0, end = 0, file_offset = 0;
    char perms[8] = {};
    char path[4096] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx %*s %*s %4095[^\n]", &start, &end, perms,
                    &file_offset, path) != 5)
      continue;
    std::string mapped = path;
    while (!mapped.empty() && mapped.front() == ' ')
      mapped.erase(0, 1);
    if (mapped == canonical && address >= start && address < end) {
      offset = address - start + file_offset;
      break;
    }
  }
  ::dlclose(handle);
  return offset;
}

TEST(ElfSymbols, StandinLibraryIsBuilt) {
  ASSERT_TRUE(fs::exists(standin_library()))
      << standin_library() << " missing: build the standin_cuda target";
}

TEST(ElfSymbols, FindsProbedFunctions) {
  const auto library = standin_library();
  ASSERT_TRUE(fs::exists(library)) << library;
  const auto result =
      find_symbol_offsets(library.string(), {"cuLaunchKernel", "cuMemAlloc_v2", "cuMemFree_v2",
                                             "cuLaunchKernel_ptsz", "cuStreamSynchronize"});
  EXPECT_EQ(result.error, "");
  EXPECT_TRUE(result.missing.empty());
  ASSERT_EQ(result.found.size(), 5u);
  const auto bytes = read_bytes(library);
  ASSERT_FALSE(bytes.empty());
  std::set<std::uint64_t> distinct;
  for (const auto &[name, offset] : result.found) {
    EXPECT_NE(offset, 0u) << name;
    ASSERT_LT(offset, bytes.size()) << name;
    // The stand-in guarantees every export starts with `push %rbp`.
    EXPECT_EQ(bytes[offset], 0x55) << name << " at 0x" << std::hex << offset;
    distinct.insert(offset);
  }
  // Twins are separate functions: no two names share an offset.
  EXPECT_EQ(distinct.size(), result.found.size());
}

TEST(ElfSymbols, OffsetsMatchTheDynamicLoader) {
  const auto library = standin_library();
  ASSERT_TRUE(fs::exists(library)) << library;
  const auto result = find_symbol_offsets(library.string(), {"cuLaunchKernel", "cuMemAlloc_v2"});
  ASSERT_EQ(result.found.size(), 2u) << result.error;
  for (const char *symbol : {"cuLaunchKernel", "cuMemAlloc_v2"}) {
    const auto loaded = loaded_file_offset(library, symbol);
    ASSERT_TRUE(loaded.has_value()) << symbol << ": " << ::dlerror();
    EXPECT_EQ(result.found.at(symbol), *loaded) << symbol;
  }
}

// A data symbol of this very executable (in .symtab: it is not exported), which
// find_symbol_values must place where the loader put it: load bias + st_value.
extern "C" {
extern const int neutracer_elf_values_probe;
const int neutracer_elf_values_probe = 42;
}

TEST(ElfSymbolValues, DataSymbolsLandWhereTheLoaderPutThem) {
  const auto self = fs::read_symlink("/proc/self/exe");
  const auto result = find_symbol_values(self.string(), {"neutracer_elf_values_probe", "nope"});
  ASSERT_TRUE(result.error.empty()) << result.error;
  ASSERT_EQ(result.found.size(), 1u);
  EXPECT_EQ(result.found.at("neutracer_elf_values_probe").size, sizeof(int));
  // The load bias: the start of this file's mapping of offset 0, minus its first PT_LOAD.
  std::ifstream maps("/proc/self/maps");
  std::uint64_t load_start = 0;
  for (std::string line; std::getline(maps, line);) {
    const auto entry = parse_maps_line(line);
    if (entry && entry->offset == 0 && entry->path == self.string()) {
      load_start = entry->start;
      break;
    }
  }
  ASSERT_NE(load_start, 0u);
  const std::uint64_t address =
      load_start - result.first_load_address + result.found.at("neutracer_elf_values_probe").value;
  EXPECT_EQ(address, reinterpret_cast<std::uint64_t>(&neutracer_elf_values_probe));
}

TEST(ElfSymbolValues, ErrorsAsForOffsets) {
  EXPECT_FALSE(find_symbol_values("/nonexistent/libpython3.11.so", {"_PyRuntime"}).error.empty());
  const TempFile text("not an ELF file");
  EXPECT_FALSE(find_symbol_values(text.path().string(), {"_PyRuntime"}).error.empty());
}

TEST(ElfSymbols, ReportsMissingNames) {
  const auto library = standin_library();
  ASSERT_TRUE(fs::exists(library)) << library;
  const auto result = find_symbol_offsets(
      library.string(),
      {"cuLaunchKernel", "cuNoSuchFunction", "cuMemAlloc", /* only the _v2 exists */
       "malloc" /* imported, undefined here */, "pthread_mutex_lock"});
  EXPECT_EQ(result.error, "");
  EXPECT_EQ(result.found.size(), 1u);
  EXPECT_TRUE(result.found.contains("cuLaunchKernel"));
  EXPECT_EQ(result.missing, (std::vector<std::string>{"cuNoSuchFunction", "cuMemAlloc", "malloc",
                                                      "pthread_mutex_lock"}));
}

TEST(ElfSymbols, EmptyRequest) {
  const auto result = find_symbol_offsets(standin_library().string(), {});
  EXPECT_EQ(result.error, "");
  EXPECT_TRUE(result.found.empty());
  EXPECT_TRUE(result.missing.empty());
}

TEST(ElfSymbols, NonElfFile) {
  const TempFile text("this is not an ELF file, just text\n");
  const auto result = find_symbol_offsets(text.path().string(), {"cuLaunchKernel"});
  EXPECT_NE(result.error, "");
  EXPECT_NE(result.error.find("not an ELF"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find(text.path().string()), std::string::npos) << result.error;
  EXPECT_TRUE(result.found.empty());
}

TEST(ElfSymbols, EmptyFile) {
  const TempFile empty("");
  const auto result = find_symbol_offsets(empty.path().string(), {"cuLaunchKernel"});
  EXPECT_NE(result.error, "");
  EXPECT_TRUE(result.found.empty());
}

TEST(ElfSymbols, TruncatedElf) {
  // The first 64 bytes of a real ELF: a valid header whose sections lie past the end.
  const auto bytes = read_bytes(standin_library());
  ASSERT_GE(bytes.size(), 64u);
  const TempFile truncated(std::string(bytes.begin(), bytes.begin() + 64));
  const auto result = find_symbol_offsets(truncated.path().string(), {"cuLaunchKernel"});
  EXPECT_TRUE(result.found.empty());
  // Either a clear error or the name reported missing; never a bogus offset.
  EXPECT_TRUE(!result.error.empty() ||
              result.missing == std::vector<std::string>{"cuLaunchKernel"});
}

TEST(ElfSymbols, MissingFile) {
  const std::string path = "/nonexistent/dir/libcuda.so.1";
  const auto result = find_symbol_offsets(path, {"cuLaunchKernel"});
  EXPECT_NE(result.error.find("cannot open"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find(path), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("No such file"), std::string::npos) << result.error;
  EXPECT_TRUE(result.found.empty());
}

// The stand-in library with cuLaunchKernel's address moved past the bytes its executable
// segment has in the file, into a zero-filled tail made as large as the whole address space:
// the shape of the first elf_symbols_fuzzer finding.
std::string with_launch_past_the_file(std::vector<unsigned char> bytes) {
  auto *header = reinterpret_cast<Elf64_Ehdr *>(bytes.data());
  auto *phdrs = reinterpret_cast<Elf64_Phdr *>(bytes.data() + header->e_phoff);
  auto *sections = reinterpret_cast<Elf64_Shdr *>(bytes.data() + header->e_shoff);
  Elf64_Phdr *text = nullptr;
  for (int i = 0; i < header->e_phnum; ++i)
    if (phdrs[i].p_type == PT_LOAD && (phdrs[i].p_flags & PF_X))
      text = &phdrs[i];
  if (text == nullptr)
    throw std::runtime_error("no executable segment");
  text->p_memsz = UINT64_MAX - text->p_vaddr;
  for (int i = 0; i < header->e_shnum; ++i) {
    if (sections[i].sh_type != SHT_DYNSYM && sections[i].sh_type != SHT_SYMTAB)
      continue;
    const char *names =
        reinterpret_cast<const char *>(bytes.data()) + sections[sections[i].sh_link].sh_offset;
    auto *symbols = reinterpret_cast<Elf64_Sym *>(bytes.data() + sections[i].sh_offset);
    for (std::size_t j = 0; j < sections[i].sh_size / sizeof(Elf64_Sym); ++j)
      if (std::string(names + symbols[j].st_name) == "cuLaunchKernel")
        symbols[j].st_value = text->p_vaddr + bytes.size() + 0x1000;
  }
  return {bytes.begin(), bytes.end()};
}

TEST(ElfSymbols, NoOffsetOutsideTheFile) {
  const TempFile crafted(with_launch_past_the_file(read_bytes(standin_library())));
  const auto result =
      find_symbol_offsets(crafted.path().string(), {"cuLaunchKernel", "cuMemAlloc_v2"});
  EXPECT_EQ(result.error, "");
  for (const auto &[name, offset] : result.found)
    EXPECT_LT(offset, fs::file_size(crafted.path())) << name;
  EXPECT_EQ(result.missing, std::vector<std::string>{"cuLaunchKernel"});
  EXPECT_TRUE(result.found.contains("cuMemAlloc_v2")) << "the other symbols are still found";
}

TEST(ElfSymbols, FifoIsAnErrorNotAHang) {
  // The daemon opens a path any user's process maps, as root; a FIFO put at that path between
  // the maps read and the open blocked the main loop for good.
  const TempFile placeholder("");
  const fs::path fifo = placeholder.path().string() + ".fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto lookup = std::async(std::launch::async,
                           [&] { return find_symbol_offsets(fifo.string(), {"cuLaunchKernel"}); });
  if (lookup.wait_for(10s) == std::future_status::timeout) {
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK); // let the blocked open end
    if (writer >= 0)
      ::close(writer);
    lookup.wait();
    fs::remove(fifo);
    FAIL() << "find_symbol_offsets blocked on a FIFO";
  }
  const auto result = lookup.get();
  fs::remove(fifo);
  EXPECT_NE(result.error.find("not a regular file"), std::string::npos) << result.error;
  EXPECT_TRUE(result.found.empty());
}

TEST(ElfSymbols, DirectoryIsNotAnElf) {
  const auto result = find_symbol_offsets(fs::temp_directory_path().string(), {"cuLaunchKernel"});
  EXPECT_NE(result.error, "");
  EXPECT_TRUE(result.found.empty());
}

} // namespace
} // namespace neutracer
