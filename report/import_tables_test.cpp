#include "report/import_tables.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "trace/model/synthetic_trace.hpp"

namespace scalescope::report {
namespace {

trace::ImportReport kineto_report() {
  trace::ImportReport rep;
  rep.input = "rank3.json.gz";
  rep.json_bytes = 4096;
  rep.events = 120;
  rep.categories = {{"kernel", "X", 100, "kernels"}, {"", "M", 20, "metadata"}};
  rep.flows = 7;
  rep.malformed = 1;
  return rep;
}

// What a trace's import says of it: its rank, world size, devices and the rows of every table, by name.
TEST(ImportTables, ImportedTraceKeepsTheTracesFacts) {
  const trace::Trace t = trace::make_synthetic_trace({.events = 2000, .seed = 1, .rank = 3, .world_size = 8});
  const ImportedTrace it = ImportedTrace::of(t);
  EXPECT_EQ(it.rank, 3);
  EXPECT_EQ(it.world_size, 8);
  EXPECT_EQ(it.devices, t.meta.devices.size());
  EXPECT_GT(it.rows_of("kernels"), 0u);
  EXPECT_EQ(it.rows_of("kernels"), t.kernels.size());
  EXPECT_EQ(it.rows_of("nccl"), t.nccl.size());
  EXPECT_EQ(it.rows_of("no such table"), 0u);
  EXPECT_EQ(it.rows.front().first, "kernels");  // export order
}

// The typed JSON of a Kineto import: numbers as numbers, an unknown rank as null, fields named.
TEST(ImportTables, KinetoImportJsonIsTyped) {
  const trace::Trace t = trace::make_synthetic_trace({.events = 2000, .seed = 1, .rank = 3, .world_size = 8});
  ImportResult r{.input = "in", .output = "out.sstrace", .traces_written = 1};
  r.kineto.push_back({kineto_report(), ImportedTrace::of(t)});
  ImportedTrace unknown = ImportedTrace::of(t);
  unknown.rank = unknown.world_size = -1;
  r.kineto.push_back({kineto_report(), unknown});
  const nlohmann::json j = import_json(r);
  EXPECT_EQ(j["input"], "in");
  EXPECT_EQ(j["output"], "out.sstrace");
  EXPECT_EQ(j["run_directory"], false);
  EXPECT_EQ(j["traces_written"], 1);
  EXPECT_TRUE(j["nsys"].empty());
  ASSERT_EQ(j["kineto"].size(), 2u);
  const nlohmann::json& rep = j["kineto"][0]["report"];
  EXPECT_EQ(rep, import_report_json(kineto_report()));
  EXPECT_EQ(rep["json_bytes"], 4096);
  EXPECT_EQ(rep["flows"], 7);
  EXPECT_EQ(rep["categories"][0],
            nlohmann::json({{"cat", "kernel"}, {"ph", "X"}, {"events", 100}, {"mapped_to", "kernels"}}));
  const nlohmann::json& tr = j["kineto"][0]["trace"];
  EXPECT_EQ(tr["rank"], 3);
  EXPECT_EQ(tr["world_size"], 8);
  EXPECT_EQ(tr["rows"]["kernels"], t.kernels.size());
  EXPECT_TRUE(j["kineto"][1]["trace"]["rank"].is_null());
  EXPECT_TRUE(j["kineto"][1]["trace"]["world_size"].is_null());
}

// An nsys report's tables: kept and dropped are null for tables not read row by row.
TEST(ImportTables, NsysImportJsonIsTyped) {
  trace::NsysImportReport rep;
  rep.input = "saxpy.sqlite";
  rep.product_version = "2024.5";
  rep.tables = {{"CUPTI_ACTIVITY_KIND_KERNEL", true, 10, true, 9, 1, "kernels"},
                {"TARGET_INFO_GPU", true, 1, false, 0, 0, "devices"}};
  rep.processes = {{.pid = 42, .name = "python", .rank = 0, .rank_source = "file name", .kernels = 9}};
  rep.runtime_calls = 5;
  const nlohmann::json j = nsys_import_report_json(rep);
  EXPECT_EQ(j["product_version"], "2024.5");
  EXPECT_EQ(j["schema_version"], "");
  EXPECT_EQ(j["runtime_calls"], 5);
  EXPECT_EQ(j["tables"][0]["kept"], 9);
  EXPECT_EQ(j["tables"][0]["dropped"], 1);
  EXPECT_TRUE(j["tables"][1]["kept"].is_null());
  EXPECT_TRUE(j["tables"][1]["dropped"].is_null());
  EXPECT_EQ(j["processes"][0]["pid"], 42);
  EXPECT_EQ(j["processes"][0]["kernels"], 9);
  EXPECT_EQ(j["processes"][0]["rank_source"], "file name");
}

// The tables say what was written under the last one: one file, or a run
// directory (a table of its own when there is no other).
TEST(ImportTables, LastTableSaysWhatWasWritten) {
  const trace::Trace t = trace::make_synthetic_trace({.events = 2000, .seed = 1, .rank = 3, .world_size = 8});
  ImportResult one{.input = "in", .output = "out.sstrace", .traces_written = 1};
  one.kineto.push_back({kineto_report(), ImportedTrace::of(t)});
  std::vector<Table> tables = import_tables(one);
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables[0].id(), "imported_categories");
  EXPECT_EQ(tables[1].notes(), (std::vector<std::string>{"rank 3, world size 8, 1 device(s)", "wrote out.sstrace"}));
  EXPECT_EQ(std::get<int64_t>(tables[1].rows()[0][1]), static_cast<int64_t>(t.kernels.size()));

  ImportResult dir{.input = "in", .output = "out.ssrun", .run_directory = true, .traces_written = 2};
  dir.kineto = {{kineto_report(), ImportedTrace::of(t)}, {kineto_report(), ImportedTrace::of(t)}};
  tables = import_tables(dir);
  ASSERT_EQ(tables.size(), 4u);
  EXPECT_EQ(tables[3].notes().back(), "wrote 2 trace(s) to out.ssrun");

  const ImportResult empty{.input = "in", .output = "out.ssrun", .run_directory = true, .traces_written = 0};
  tables = import_tables(empty);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].title(), "Import");
  EXPECT_EQ(tables[0].notes().back(), "wrote 0 trace(s) to out.ssrun");
}

}  // namespace
}  // namespace scalescope::report
