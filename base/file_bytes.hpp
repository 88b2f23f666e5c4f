#pragma once
// The bytes of a whole file, in a buffer that is not zero-filled first
// (std::vector would write every page once before read() writes it again).

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>

namespace scalescope::trace::detail {

struct FileBytes {
  std::unique_ptr<std::byte[]> data;
  size_t size = 0;
  std::span<const std::byte> span() const { return {data.get(), size}; }
};

// Reads a whole trace file (trace_reader.cpp): read(), not mmap(), so that a
// file truncated while we read it gives a torn tail instead of SIGBUS.
FileBytes read_trace_bytes(const std::filesystem::path& path);

}  // namespace scalescope::trace::detail
