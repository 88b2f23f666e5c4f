#include "base/text_input.hpp"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "base/error.hpp"

namespace scalescope::trace {
namespace {

namespace fs = std::filesystem;

std::string error_of(const fs::path& path, uint64_t max_bytes) {
  try {
    read_text_file(path, max_bytes, "a test input");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TextInput, ReadsTheWholeFileUpToTheLimit) {
  const fs::path p = fs::temp_directory_path() / ("scalescope_text_file_" + std::to_string(::getpid()));
  std::ofstream(p, std::ios::binary) << "line one\r\nline two\n";
  EXPECT_EQ(read_text_file(p, fs::file_size(p), "a test input"), "line one\r\nline two\n");
  fs::remove(p);
}

TEST(TextInput, TooLargeOrMissingIsOneLineNamingTheFile) {
  const fs::path p = fs::temp_directory_path() / ("scalescope_text_file_big_" + std::to_string(::getpid()));
  std::ofstream(p, std::ios::binary) << "0123456789";
  EXPECT_EQ(error_of(p, 9), p.string() + " is 10 bytes, more than a test input can be");
  EXPECT_EQ(error_of(p, 10), "");
  fs::remove(p);
  const std::string missing = error_of(p, 10);
  EXPECT_EQ(missing.rfind("cannot read " + p.string() + ": ", 0), 0u) << missing;
  EXPECT_EQ(missing.find('\n'), std::string::npos);
}

TEST(TextInput, TrimDropsWhiteSpaceAtTheEndsOnly) {
  EXPECT_EQ(trim(" \t 0000:17:00.0\n"), "0000:17:00.0");
  EXPECT_EQ(trim("a b"), "a b");
  EXPECT_EQ(trim(" \r\n "), "");
  EXPECT_EQ(trim(""), "");
}

TEST(TextInput, LowercaseChangesAsciiLettersOnly) {
  EXPECT_EQ(lowercase("NVIDIA H100-SXM5 \xc3\x89"), "nvidia h100-sxm5 \xc3\x89");
  EXPECT_EQ(lowercase(""), "");
}

TEST(TextInput, SplitKeepsEmptyPieces) {
  EXPECT_EQ(split("1,2,,4", ','), (std::vector<std::string_view>{"1", "2", "", "4"}));
  EXPECT_EQ(split("", ','), (std::vector<std::string_view>{""}));
  EXPECT_EQ(split("a|", '|'), (std::vector<std::string_view>{"a", ""}));
  EXPECT_EQ(split("ncclDevKernel_AllReduce_Sum_f32", '_').size(), 4u);
}

}  // namespace
}  // namespace scalescope::trace
