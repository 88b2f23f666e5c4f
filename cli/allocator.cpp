// operator new and delete on mimalloc, throwing std::bad_alloc when memory
// runs out. libmimalloc's own operator new is built as C and calls abort()
// there (it cannot see a new-handler either), so a command that reached its
// memory limit died with SIGABRT and no message; with these, the command's
// boundary (cli/main.cpp) prints one line and exits 1. Defined in the
// executable, they take precedence over libmimalloc's for the whole process;
// every block still comes from mimalloc and goes back to it.

#include "cli/allocator.hpp"

#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <new>

#include <mimalloc.h>

namespace {

std::atomic<bool> in_main{false};

// Out of memory with no new-handler to free some.
[[noreturn]] void out_of_memory() {
  if (in_main.load(std::memory_order_relaxed)) throw std::bad_alloc();
  // Before main (static initialisers, under a limit too low for mimalloc's
  // first segment): a throw here ends in std::terminate and SIGABRT.
  static const char kLine[] = "scalescope: error: out of memory\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, kLine, sizeof kLine - 1);
  ::_exit(1);
}

void* allocate(std::size_t n) {
  for (;;) {
    if (void* p = mi_malloc(n)) return p;
    std::new_handler handler = std::get_new_handler();
    if (!handler) out_of_memory();
    handler();
  }
}

void* allocate_aligned(std::size_t n, std::align_val_t align) {
  for (;;) {
    if (void* p = mi_malloc_aligned(n, static_cast<std::size_t>(align))) return p;
    std::new_handler handler = std::get_new_handler();
    if (!handler) out_of_memory();
    handler();
  }
}

}  // namespace

void scalescope::cli::allocator_entered_main() noexcept { in_main.store(true, std::memory_order_relaxed); }

void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }

void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return allocate_aligned(n, a);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t& t) noexcept {
  return operator new(n, a, t);
}

void operator delete(void* p) noexcept { mi_free(p); }
void operator delete[](void* p) noexcept { mi_free(p); }
void operator delete(void* p, std::size_t) noexcept { mi_free(p); }
void operator delete[](void* p, std::size_t) noexcept { mi_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { mi_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { mi_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { mi_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { mi_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { mi_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { mi_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { mi_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { mi_free(p); }
