#pragma once
// The executable's operator new (cli/allocator.cpp, built with mimalloc).

namespace scalescope::cli {

// Called first in main(). Before it, memory that runs out cannot become
// std::bad_alloc (nothing could catch it, and the runtime's reserve for
// exceptions may itself be missing), so operator new prints the one line
// main() would and exits 1; from then on it throws std::bad_alloc.
void allocator_entered_main() noexcept;

}  // namespace scalescope::cli
