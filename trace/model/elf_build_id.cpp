#include "trace/model/elf_build_id.hpp"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace scalescope::trace {
namespace {

constexpr uint16_t kMaxProgramHeaders = 4096;            // real files have tens
constexpr uint64_t kMaxNoteSegment = uint64_t{1} << 16;  // real note segments are under 1 KiB
constexpr uint16_t kMaxSections = 8192;                  // real files have tens
constexpr size_t kSymbolChunk = 512;                     // symbols read at once

}  // namespace

std::optional<std::string> elf_build_id(const ElfReadAt& read, std::string* error) {
  Elf64_Ehdr eh;
  if (!read(0, sizeof eh, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    *error = "not an ELF file";
    return std::nullopt;
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    *error = "not a 64-bit little-endian ELF";
    return std::nullopt;
  }
  if (eh.e_phnum == 0) return std::string();
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > kMaxProgramHeaders) {
    *error = "unexpected program header table";
    return std::nullopt;
  }
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!read(eh.e_phoff, ph.size() * sizeof(Elf64_Phdr), ph.data())) {
    *error = "truncated program headers";
    return std::nullopt;
  }
  std::vector<uint8_t> notes;
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type != PT_NOTE || p.p_filesz == 0 || p.p_filesz > kMaxNoteSegment) continue;
    notes.resize(static_cast<size_t>(p.p_filesz));
    if (!read(p.p_offset, notes.size(), notes.data())) continue;  // a cut file: look at the other notes
    // Name and descriptor are padded to 4 bytes (8 in segments aligned to 8,
    // which hold GNU property notes).
    const uint64_t align = p.p_align == 8 ? 8 : 4;
    auto pad = [align](uint64_t v) { return (v + align - 1) / align * align; };
    for (uint64_t pos = 0; notes.size() - pos >= sizeof(Elf64_Nhdr);) {
      Elf64_Nhdr nh;
      std::memcpy(&nh, notes.data() + pos, sizeof nh);
      pos += sizeof nh;
      const uint64_t name_size = pad(nh.n_namesz), desc_size = pad(nh.n_descsz);
      if (name_size > notes.size() - pos || desc_size > notes.size() - pos - name_size) break;
      const uint8_t* name = notes.data() + pos;
      const uint8_t* desc = name + name_size;
      pos += name_size + desc_size;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 && nh.n_descsz > 0) {
        static constexpr char kHex[] = "0123456789abcdef";
        std::string hex;
        hex.reserve(size_t{nh.n_descsz} * 2);
        for (uint32_t i = 0; i < nh.n_descsz; ++i) {
          hex += kHex[desc[i] >> 4];
          hex += kHex[desc[i] & 15];
        }
        return hex;
      }
    }
  }
  return std::string();
}

std::optional<std::string> elf_build_id(std::span<const uint8_t> bytes, std::string* error) {
  return elf_build_id(
      [bytes](uint64_t offset, size_t n, void* out) {
        if (offset > bytes.size() || n > bytes.size() - offset) return false;
        if (n) std::memcpy(out, bytes.data() + offset, n);
        return true;
      },
      error);
}

// Reads through one open descriptor; *error names why the file could not be opened.
template <typename Fn>
auto with_file(const char* path, std::string* error, Fn&& fn) -> decltype(fn(ElfReadAt())) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = std::strerror(errno);
    return std::nullopt;
  }
  auto result = fn(ElfReadAt([fd](uint64_t offset, size_t n, void* out) {
    auto* p = static_cast<uint8_t*>(out);
    while (n > 0) {
      const ssize_t got = pread(fd, p, n, static_cast<off_t>(offset));
      if (got <= 0) return false;
      p += got;
      n -= static_cast<size_t>(got);
      offset += static_cast<uint64_t>(got);
    }
    return true;
  }));
  close(fd);
  return result;
}

std::optional<std::string> elf_build_id_of_file(const char* path, std::string* error) {
  return with_file(path, error, [error](const ElfReadAt& read) { return elf_build_id(read, error); });
}

std::optional<ElfSymbolValues> elf_symbol_values(const ElfReadAt& read, std::span<const std::string_view> names,
                                                 std::string* error) {
  Elf64_Ehdr eh;
  if (!read(0, sizeof eh, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    *error = "not an ELF file";
    return std::nullopt;
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    *error = "not a 64-bit little-endian ELF";
    return std::nullopt;
  }
  ElfSymbolValues out;
  out.values.assign(names.size(), 0);
  if (eh.e_phnum > 0 && eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum <= kMaxProgramHeaders) {
    std::vector<Elf64_Phdr> ph(eh.e_phnum);
    if (!read(eh.e_phoff, ph.size() * sizeof(Elf64_Phdr), ph.data())) {
      *error = "truncated program headers";
      return std::nullopt;
    }
    for (const Elf64_Phdr& p : ph)
      if (p.p_type == PT_LOAD) {
        out.first_load_vaddr = p.p_vaddr & ~(p.p_align > 1 ? p.p_align - 1 : 0);
        break;
      }
  }
  if (eh.e_shnum == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum > kMaxSections) {
    *error = "no section headers";
    return std::nullopt;
  }
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  if (!read(eh.e_shoff, sh.size() * sizeof(Elf64_Shdr), sh.data())) {
    *error = "truncated section headers";
    return std::nullopt;
  }
  size_t longest = 0;
  for (std::string_view n : names) longest = std::max(longest, n.size());
  std::vector<char> name(longest + 1);
  size_t found = 0;
  // .symtab first (all symbols where the file is not stripped), then .dynsym.
  for (uint32_t kind : {uint32_t{SHT_SYMTAB}, uint32_t{SHT_DYNSYM}}) {
    for (const Elf64_Shdr& table : sh) {
      if (table.sh_type != kind || table.sh_entsize != sizeof(Elf64_Sym) || table.sh_link >= sh.size()) continue;
      const Elf64_Shdr& strings = sh[table.sh_link];
      const uint64_t count = table.sh_size / sizeof(Elf64_Sym);
      std::vector<Elf64_Sym> chunk(kSymbolChunk);
      for (uint64_t first = 0; first < count && found < names.size(); first += kSymbolChunk) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kSymbolChunk, count - first));
        if (!read(table.sh_offset + first * sizeof(Elf64_Sym), n * sizeof(Elf64_Sym), chunk.data())) {
          *error = "truncated symbol table";
          return std::nullopt;
        }
        for (size_t i = 0; i < n; ++i) {
          const Elf64_Sym& sym = chunk[i];
          if (sym.st_value == 0 || sym.st_name >= strings.sh_size) continue;
          const uint64_t room = std::min<uint64_t>(name.size(), strings.sh_size - sym.st_name);
          if (!read(strings.sh_offset + sym.st_name, static_cast<size_t>(room), name.data())) continue;
          const std::string_view got(name.data(), strnlen(name.data(), static_cast<size_t>(room)));
          for (size_t k = 0; k < names.size(); ++k)
            if (out.values[k] == 0 && got == names[k]) {
              out.values[k] = sym.st_value;
              ++found;
            }
        }
      }
    }
  }
  return out;
}

std::optional<ElfSymbolValues> elf_symbol_values_of_file(const char* path, std::span<const std::string_view> names,
                                                         std::string* error) {
  return with_file(path, error,
                   [names, error](const ElfReadAt& read) { return elf_symbol_values(read, names, error); });
}

}  // namespace scalescope::trace
