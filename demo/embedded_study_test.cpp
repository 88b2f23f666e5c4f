#include "demo/embedded_study.hpp"

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace scalescope::demo {
namespace {

namespace fs = std::filesystem;

TEST(EmbeddedStudy, WritesWhatTheBuildEmbedded) {
  const fs::path out = fs::temp_directory_path() / ("scalescope-embedded-study-" + std::to_string(::getpid()));
  fs::remove_all(out);
  const auto written = write_embedded_study(out);
  EXPECT_EQ(written.size(), study_files().size());
  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(fs::file_size(written[i]), study_files()[i].data.size());
    EXPECT_EQ(written[i], out / study_files()[i].path);
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace scalescope::demo
