// The real Kineto trace through the file format: import, write, read back,
// and every column, string and metadata field must come back unchanged.
// Labelled slow (the import of 170 MB of JSON is slow under ASan).

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "trace/import/kineto_importer.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/model/trace_format.hpp"

namespace scalescope::trace {
namespace {

namespace fs = std::filesystem;

template <typename Table>
void expect_same_table(const char* what, const Table& a, const StringTable& sa, const Table& b, const StringTable& sb) {
  ASSERT_EQ(a.size(), b.size()) << what;
  std::vector<const void*> string_columns;
  format::for_each_string_column(a, [&](const std::vector<StringId>& c) { string_columns.push_back(&c); });
  format::for_each_column(a, [&](int id, const auto& col_a, format::Transform, const auto*) {
    format::for_each_column(b, [&](int idb, const auto& col_b, format::Transform, const auto*) {
      if constexpr (std::is_same_v<decltype(&col_a), decltype(&col_b)>) {
        if (id != idb) return;
        const bool is_string = std::find(string_columns.begin(), string_columns.end(),
                                         static_cast<const void*>(&col_a)) != string_columns.end();
        for (size_t i = 0; i < col_a.size(); ++i) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(col_a[0])>, StringId>) {
            if (is_string) {
              ASSERT_EQ(sa.view(col_a[i]), sb.view(col_b[i])) << what << " column " << id << " row " << i;
              continue;
            }
          }
          ASSERT_EQ(format::to_bits(col_a[i]), format::to_bits(col_b[i])) << what << " column " << id << " row " << i;
        }
      }
    });
  });
}

TEST(TraceFileReal, RealKinetoTraceRoundTripsExactly) {
  const fs::path json = fs::path(SCALESCOPE_SHARED_DIR) / "data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz";
  if (!fs::exists(json)) GTEST_SKIP() << "shared data not found: " << json;
  const Trace original = import_kineto_file(json);
  ASSERT_EQ(original.kernels.size(), 45420u);
  const fs::path file = fs::temp_directory_path() / ("real-roundtrip-" + std::to_string(::getpid()) + ".sstrace");
  write_trace(file, original);
  const uint64_t size = fs::file_size(file);
  const Trace back = read_trace(file);
  fs::remove(file);
  // The target: at most 12 bytes per event on disk.
  EXPECT_LE(static_cast<double>(size) / static_cast<double>(original.event_count()), 12.0);
  EXPECT_EQ(format::metadata_to_json(original.meta), format::metadata_to_json(back.meta));
  EXPECT_EQ(original.problems.counts, back.problems.counts);
  format::for_each_table(original, [&](format::ChunkType type, const auto& table) {
    format::for_each_table(back, [&](format::ChunkType type_b, const auto& table_b) {
      if constexpr (std::is_same_v<decltype(&table), decltype(&table_b)>)
        if (type == type_b)
          expect_same_table(std::to_string(static_cast<int>(type)).c_str(), table, original.strings, table_b,
                            back.strings);
    });
  });
}

}  // namespace
}  // namespace scalescope::trace
