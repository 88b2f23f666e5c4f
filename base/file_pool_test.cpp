#include "base/file_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace scalescope::trace {
namespace {

TEST(FilePool, ThreadsBoundedByFilesAndMemory) {
  EXPECT_EQ(threads_for_files(1, 0), 1u);
  EXPECT_EQ(threads_for_files(0, 0), 1u);
  EXPECT_LE(threads_for_files(1000, 0), std::max(1u, std::thread::hardware_concurrency()));
  // More memory per file than any machine has: one thread, never zero.
  EXPECT_EQ(threads_for_files(8, uint64_t{1} << 62), 1u);
}

}  // namespace
}  // namespace scalescope::trace
