#pragma once
// The GNU build-id of an ELF file: the identity that tells whether the file
// the analysing machine has is the one a profiled process ran (perf and
// Nsight use it the same way). The collector reads it at exit for each
// module its frames fell in (a few small reads per file, no symbol table);
// trace/model/frame_namer.hpp reads it again on the analysing machine.
//
// Hand-written over <elf.h> rather than through libelf: the injected
// collector must not depend on libelf, and the read is a header, the
// program headers and the PT_NOTE segments (at most a few KiB).
//
// Also the values of a few named symbols (.symtab, else .dynsym) and the
// first loaded address: where a variable of a mapped executable or library
// lies in a running process (the outside Python stack reader finds
// _PyRuntime so).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace scalescope::trace {

// Reads `n` bytes at `offset` of the file into `out`; false when it cannot.
using ElfReadAt = std::function<bool(uint64_t offset, size_t n, void* out)>;

// Lowercase hex of the NT_GNU_BUILD_ID note; "" when the ELF has none.
// nullopt, with *error set ("not an ELF file", "not a 64-bit little-endian
// ELF", "truncated program headers"), when the bytes are not a readable
// 64-bit little-endian ELF.
std::optional<std::string> elf_build_id(const ElfReadAt& read, std::string* error);
// The same over bytes in memory (tests, fuzzer).
std::optional<std::string> elf_build_id(std::span<const uint8_t> bytes, std::string* error);
// The same for a file; *error names why it could not be read ("No such file or directory").
std::optional<std::string> elf_build_id_of_file(const char* path, std::string* error);

struct ElfSymbolValues {
  std::vector<uint64_t> values;    // st_value of each name asked for, 0 where absent
  uint64_t first_load_vaddr = 0;   // p_vaddr of the first PT_LOAD (its page): load bias = map start - this
};
// Looks the names up in the symbol tables. nullopt, with *error set, when the
// bytes are not a readable 64-bit little-endian ELF or its tables are cut short.
std::optional<ElfSymbolValues> elf_symbol_values(const ElfReadAt& read, std::span<const std::string_view> names,
                                                 std::string* error);
// The same for a file.
std::optional<ElfSymbolValues> elf_symbol_values_of_file(const char* path, std::span<const std::string_view> names,
                                                         std::string* error);

}  // namespace scalescope::trace
