#include "trace/elf_build_id.hpp"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace scalescope::trace {
namespace {

constexpr uint16_t kMaxProgramHeaders = 4096;            // real files have tens
constexpr uint64_t kMaxNoteSegment = uint64_t{1} << 16;  // real note segments are under 1 KiB

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

std::optional<std::string> elf_build_id_of_file(const char* path, std::string* error) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = std::strerror(errno);
    return std::nullopt;
  }
  auto result = elf_build_id(
      [fd](uint64_t offset, size_t n, void* out) {
        auto* p = static_cast<uint8_t*>(out);
        while (n > 0) {
          const ssize_t got = pread(fd, p, n, static_cast<off_t>(offset));
          if (got <= 0) return false;
          p += got;
          n -= static_cast<size_t>(got);
          offset += static_cast<uint64_t>(got);
        }
        return true;
      },
      error);
  close(fd);
  return result;
}

}  // namespace scalescope::trace
