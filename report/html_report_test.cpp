#include "report/html_report.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <fmt/format.h>

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "report/embedded_assets.hpp"
#include "base/error.hpp"
#include "trace/model/trace.hpp"
#include "trace/model/trace_file.hpp"
#include "advise/advise.hpp"
#include "analyze/analyze.hpp"
#include "report/report_document.hpp"
#include "report/run_tables.hpp"
#include "trace/model/synthetic_trace.hpp"

namespace scalescope::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using detail::table_block;  // a table as the page draws it

// A fresh folder per test, removed at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("scalescope-report-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path write(const std::string& name, std::string_view bytes) const {
    std::ofstream(path / name, std::ios::binary) << bytes;
    return path / name;
  }
};

// The JSON between <script type="application/json" id="scalescope-data"> and its </script>.
std::string data_of(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"scalescope-data\">";
  const size_t a = page.find(open);
  EXPECT_NE(a, std::string::npos);
  const size_t b = page.find("</script>", a);
  return page.substr(a + open.size(), b - a - open.size());
}

TEST(ReportHtml, EscapesJsonForScriptElements) {
  const std::string raw = json{{"name", "</script><script>alert(1)</script> & <!-- \u2028\u2029"}}.dump();
  const std::string escaped = escape_json_for_script(raw);
  EXPECT_EQ(escaped.find('<'), std::string::npos);
  EXPECT_EQ(escaped.find('>'), std::string::npos);
  EXPECT_EQ(escaped.find('&'), std::string::npos);
  EXPECT_EQ(escaped.find("\xE2\x80\xA8"), std::string::npos);
  EXPECT_EQ(escaped.find("\xE2\x80\xA9"), std::string::npos);
  EXPECT_NE(escaped.find("\\u003c/script\\u003e"), std::string::npos);
  // Still the same JSON value.
  EXPECT_EQ(json::parse(escaped), json::parse(raw));
}

TEST(ReportHtml, EscapesHtmlText) {
  EXPECT_EQ(escape_html("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(escape_html("plain"), "plain");
}

TEST(ReportHtml, EmbeddedAssetsAreCompleteAndSafeInline) {
  EXPECT_GT(assets::echarts_js().size(), 500'000u);
  EXPECT_NE(assets::echarts_js().find("echarts"), std::string_view::npos);
  EXPECT_FALSE(assets::echarts_version().empty());
  for (auto text : {assets::echarts_js(), assets::report_js()}) {
    std::string lower(text);
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // Either would end or confuse the inline <script> element.
    EXPECT_EQ(lower.find("</script"), std::string::npos);
    EXPECT_EQ(lower.find("<!--"), std::string::npos);
  }
  EXPECT_NE(assets::template_html().find("@DATA@"), std::string_view::npos);
}

TEST(ReportHtml, EmptyReportIsAWholePageWithTitleEscaped) {
  HtmlReport r({.title = "<b>mine</b>"});
  const std::string page = r.html();
  EXPECT_EQ(page.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(page.find("<title>&lt;b&gt;mine&lt;/b&gt;</title>"), std::string::npos);
  EXPECT_EQ(page.find("<b>mine</b>"), std::string::npos);
  EXPECT_NE(page.find("Content-Security-Policy"), std::string::npos);
  EXPECT_EQ(page.find("http://"), page.find("http://"));  // (the library has URLs in comments; CSP blocks fetches)
  const json doc = json::parse(data_of(page));
  EXPECT_EQ(doc["title"], "<b>mine</b>");
  EXPECT_TRUE(doc["sections"].empty());  // no run analysed: no findings section either
  for (const char* marker : {"@TITLE@", "@STYLE@", "@DATA@", "@LIBRARY@", "@SCRIPT@"})
    EXPECT_EQ(page.find(marker), std::string::npos) << marker;
}

TEST(ReportHtml, DetectsInputKindsByContent) {
  TempDir d;
  const fs::path db = d.path / "a.bin";
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
    sqlite3_exec(h, "CREATE TABLE sweeps (id); CREATE TABLE runs (id);", nullptr, nullptr, nullptr);
    sqlite3_close(h);
  }
  EXPECT_EQ(detect_input_kind(db), InputKind::kSweepDatabase);
  EXPECT_EQ(detect_input_kind(d.write("weird.txt", "  {\"traceEvents\": []}")), InputKind::kKinetoJson);
  EXPECT_EQ(detect_input_kind(d.write("t.gz", "\x1f\x8b\x08\x00rest")), InputKind::kKinetoJson);
  EXPECT_EQ(
      detect_input_kind(d.write("runs.txt", "submitter,system,system_name,benchmark,division\nA,B,C,bert,closed\n")),
      InputKind::kMlperfCsv);
  fs::create_directories(d.path / "x.ssrun");
  trace::write_trace(d.path / "x.ssrun" / "h-1.sstrace", trace::make_synthetic_trace(size_t{100}));
  EXPECT_EQ(detect_input_kind(d.path / "x.ssrun"), InputKind::kRunDirectory);
  fs::create_directories(d.path / "kineto");
  d.write("kineto/rank0.json", "{\"traceEvents\": []}");
  EXPECT_EQ(detect_input_kind(d.path / "kineto"), InputKind::kTraceDirectory);

  auto message = [](const fs::path& p) {
    try {
      detect_input_kind(p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto unknown = d.write("notes.csv", "a,b,c\n1,2,3\n");
  EXPECT_EQ(message(unknown), unknown.string() +
                                  ": a file of unrecognised content; the report takes a trace, a run "
                                  "directory, a PyTorch-profiler JSON trace, an Nsight Systems export, a "
                                  "directory of traces, a sweep database or an MLPerf runs CSV");
  EXPECT_EQ(message(d.path / "missing.db"), (d.path / "missing.db").string() + ": no such file or directory");
  EXPECT_NE(message(d.write("empty", "")).find(": an empty file;"), std::string::npos);
  fs::create_directories(d.path / "empty.ssrun");
  EXPECT_NE(message(d.path / "empty.ssrun").find("a directory without traces"), std::string::npos);
}

TEST(ReportHtml, WriteReplacesAtomicallyAndNamesTheFileOnError) {
  TempDir d;
  HtmlReport r;
  const fs::path out = d.path / "report.html";
  r.write(out);
  EXPECT_GT(fs::file_size(out), 500'000u);
  // Only the report: no temporary file left beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(d.path), fs::directory_iterator()), 1);
  try {
    r.write(d.path / "no" / "such" / "report.html");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("report.html: the folder"), std::string::npos) << e.what();
  }
}


std::vector<trace::Trace> synthetic_run(int ranks, size_t events) {
  std::vector<trace::Trace> run;
  for (int r = 0; r < ranks; ++r) {
    trace::SyntheticOptions o;
    o.events = events;
    o.seed = 7 + static_cast<uint64_t>(r);
    o.rank = r;
    o.world_size = ranks;
    run.push_back(trace::make_synthetic_trace(o));
  }
  return run;
}

const json* find_chart(const json& doc, std::string_view kind, std::string_view title_part = {}) {
  for (const auto& s : doc["sections"])
    for (const auto& b : s["blocks"])
      if (b["type"] == "chart" && b["kind"] == kind && b.value("title", "").find(title_part) != std::string::npos)
        return &b;
  return nullptr;
}

TEST(ReportHtml, RunSectionsHaveEveryViewWithData) {
  HtmlReport r({.max_timeline_events = 500, .max_counter_points = 50});
  r.add_run("synthetic", synthetic_run(2, 60'000));
  const json doc = json::parse(r.document_json());
  ASSERT_GE(doc["sections"].size(), 2u);
  EXPECT_EQ(doc["sections"][0]["title"], "Advisor findings");  // first, always
  const json* breakdown = find_chart(doc, "bars", "breakdown");
  ASSERT_NE(breakdown, nullptr);
  EXPECT_EQ((*breakdown)["categories"].size(), 2u);
  EXPECT_EQ((*breakdown)["series"].size(), 4u);
  const json* box = find_chart(doc, "boxplot");
  ASSERT_NE(box, nullptr);
  EXPECT_EQ((*box)["boxes"].size(), 2u);
  for (const auto& b : (*box)["boxes"]) {
    ASSERT_EQ(b.size(), 5u);
    EXPECT_LE(b[0].get<double>(), b[2].get<double>());
    EXPECT_LE(b[2].get<double>(), b[4].get<double>());
  }
  const json* timeline = find_chart(doc, "timeline");
  ASSERT_NE(timeline, nullptr);
  EXPECT_GT((*timeline)["items"].size(), 0u);
  EXPECT_LE((*timeline)["items"].size(), 500u);
  for (const auto& it : (*timeline)["items"]) {
    EXPECT_LT(it[0].get<size_t>(), (*timeline)["lanes"].size());
    EXPECT_LE(it[1].get<double>(), it[2].get<double>());
    EXPECT_LE(it[2].get<double>(), (*timeline)["span"].get<double>());
    EXPECT_LT(it[4].get<size_t>(), (*timeline)["names"].size());
  }
  EXPECT_NE(find_chart(doc, "bars", "Top kernels"), nullptr);
  EXPECT_NE(find_chart(doc, "bars", "NCCL"), nullptr);
  // The GPU counters: one figure of small multiples (a panel per metric), not a chart per metric.
  EXPECT_EQ(find_chart(doc, "xy", "GPU counter"), nullptr);
  const json* counters = find_chart(doc, "panels", "GPU counters");
  ASSERT_NE(counters, nullptr);
  ASSERT_GE((*counters)["panels"].size(), 2u);
  std::set<std::string> metrics;
  for (const auto& p : (*counters)["panels"]) {
    EXPECT_TRUE(metrics.insert(p["name"].get<std::string>()).second) << p["name"] << " twice";
    EXPECT_EQ(p["series"].size(), 2u) << "a series per rank";
    for (const auto& s : p["series"]) EXPECT_LE(s["points"].size(), 50u);
  }
  // The timeline says which iteration it draws, counted from 1, and for how many ranks.
  const std::string note = (*timeline)["notes"][0];
  EXPECT_TRUE(note.starts_with("Iteration ")) << note;
  EXPECT_NE(note.find("drawn for 2 ranks,"), std::string::npos) << note;
  EXPECT_EQ(note.find("rank(s)"), std::string::npos) << note;
}

// Top kernels and copies summed over all ranks: the page's tables are the
// ones `analyze` prints, and each row is the sum of the ranks' figures.
TEST(ReportHtml, KernelsAndCopiesOfAllRanksAsAnalyzePrintsThem) {
  const auto ranks = synthetic_run(2, 20'000);
  HtmlReport r;
  r.add_run("synthetic", ranks);
  const json doc = json::parse(r.document_json());
  const analyze::RunAnalysis run = analyze::analyze_traces(ranks, {"rank0", "rank1"}, analyze::Options{});
  const auto page_table = [&](const std::string& title) -> const json* {
    for (const auto& s : doc["sections"])
      for (const auto& b : s["blocks"])
        if (b["type"] == "table" && b["title"] == title) return &b;
    return nullptr;
  };
  const Table kernels = all_ranks_kernels_table(run, 20);
  const json* page_kernels = page_table(kernels.title());
  ASSERT_NE(page_kernels, nullptr);
  EXPECT_EQ(*page_kernels, table_block(kernels, {0}));
  ASSERT_FALSE(kernels.rows().empty());
  const std::string first = std::get<std::string>(kernels.rows()[0][1]);  // the full name
  int64_t count = 0, total_ns = 0, rank0_count = 0;
  for (const auto& rank : run.ranks)
    for (const auto& k : rank.top_kernels)
      if (k.name == first) {
        count += k.count;
        total_ns += k.total_ns;
        if (&rank == &run.ranks.front()) rank0_count += k.count;
      }
  EXPECT_EQ(std::get<int64_t>(kernels.rows()[0][4]), count);
  EXPECT_EQ(std::get<int64_t>(kernels.rows()[0][5]), total_ns);
  EXPECT_GT(count, rank0_count) << "summed over both ranks";

  const Table copies = all_ranks_copies_table(run);
  const json* page_copies = page_table(copies.title());
  ASSERT_NE(page_copies, nullptr);
  EXPECT_EQ(*page_copies, table_block(copies, {}));
  int64_t copy_count = 0, table_count = 0;
  for (const auto& rank : run.ranks) {
    copy_count += rank.copies.memset_count;
    for (const auto& g : rank.copies.groups) copy_count += g.count;
  }
  for (const auto& row : copies.rows()) table_count += std::get<int64_t>(row[1]);
  EXPECT_EQ(table_count, copy_count);
  EXPECT_GT(copy_count, 0);

  // `analyze` prints both (terminal, CSV, JSON).
  std::set<std::string> ids;
  for (const Table& t : run_tables(run, {}, 10, true)) ids.insert(t.id());
  EXPECT_TRUE(ids.contains("top_kernels_all_ranks"));
  EXPECT_TRUE(ids.contains("copies_all_ranks"));
}

// Import problems in words, with the count and the code after them; finding
// figures with their units as text.
TEST(ReportHtml, ProblemsInWordsAndFiguresWithUnits) {
  auto ranks = synthetic_run(1, 20'000);
  ranks[0].problems.add(trace::Problem::kUnmatchedCorrelation, 138);
  HtmlReport r;
  r.add_run("synthetic", ranks);
  const json doc = json::parse(r.document_json());
  const std::string text = doc.dump();
  EXPECT_EQ(text.find("unmatched_correlation x138"), std::string::npos);
  EXPECT_NE(
      text.find(fmt::format("{} (138, unmatched_correlation)", trace::describe(trace::Problem::kUnmatchedCorrelation))),
      std::string::npos);
  size_t figures = 0;
  for (const auto& s : doc["sections"])
    for (const auto& b : s["blocks"])
      if (b["type"] == "findings")
        for (const auto& f : b["items"])
          for (const auto& g : f["figures"]) {
            ++figures;
            advise::Figure fig{g["name"], g["value"], g["unit"]};
            EXPECT_EQ(g.value("text", ""), advise::format_figure(fig)) << g.dump();
          }
  EXPECT_GT(figures, 0u) << "the synthetic run has findings with figures";
}

size_t column_of(const json& table, std::string_view name);  // below

// The collector's host sampler: a table per run and one per rank's threads,
// only when the trace has host samples.
TEST(ReportHtml, HostThreadTablesOnlyWithHostSamples) {
  auto table = [](const json& doc, std::string_view title_part) -> const json* {
    for (const auto& s : doc["sections"])
      for (const auto& b : s["blocks"])
        if (b["type"] == "table" && b.value("title", "").find(title_part) != std::string::npos) return &b;
    return nullptr;
  };
  auto run = synthetic_run(1, 5'000);
  {
    HtmlReport plain;
    plain.add_run("plain", run);
    EXPECT_EQ(table(json::parse(plain.document_json()), "Host threads"), nullptr);
  }
  trace::Trace& t = run[0];
  t.meta.pid = 4242;
  t.meta.extra["host_sampling_method"] = "procfs+schedstat";
  const auto [first, last] = t.time_span();
  t.host_threads.push({first, last, 4242, 4242, 1, t.strings.intern("python"), 1, trace::ProcessRole::kTraced});
  t.host_threads.push(
      {first, last, 4300, 4300, 4242, t.strings.intern("pt_data_worker"), 1, trace::ProcessRole::kDescendant});
  const int64_t step = std::max<int64_t>(1, (last - first) / 50);
  for (int64_t x = first + step; x <= last; x += step) {
    t.host_samples.push({x, 4242, 4242, trace::ThreadState::kSleeping, 0, uint64_t(step / 4), 0, 1, 0});
    t.host_samples.push({x, 4300, 4300, trace::ThreadState::kRunning, 1, uint64_t(step), 0, 0, 0});
  }
  HtmlReport r;
  r.add_run("sampled", run);
  const json doc = json::parse(r.document_json());
  // The table `analyze` prints (report/run_tables.hpp), the same columns.
  const json* per_rank = table(doc, "Host threads (steady iterations");
  ASSERT_NE(per_rank, nullptr);
  ASSERT_EQ((*per_rank)["rows"].size(), 1u);
  const std::vector<Table> cli = host_tables(analyze::analyze_traces(run, {"sampled"}, analyze::Options{}));
  EXPECT_EQ((*per_rank)["columns"], cli.at(0).json()["columns"]);
  EXPECT_NEAR((*per_rank)["rows"][0][column_of(*per_rank, "main_busy_pct")].get<double>(), 25.0, 1.0);
  EXPECT_EQ((*per_rank)["rows"][0][column_of(*per_rank, "workers")].get<int64_t>(), 1);
  // Threads by CPU time: `analyze`'s table (report/run_tables.hpp), every rank in one.
  const json* threads = table(doc, "Host threads by CPU time");
  ASSERT_NE(threads, nullptr);
  EXPECT_EQ(*threads, table_block(host_threads_by_cpu_table(analyze::analyze_traces(run, {"sampled"}, {})), {}));
  ASSERT_EQ((*threads)["rows"].size(), 2u);
  EXPECT_EQ((*threads)["rows"][0][column_of(*threads, "thread")], "python (main)");
  EXPECT_EQ((*threads)["rows"][1][column_of(*threads, "role")], "descendant");
  EXPECT_GT((*threads)["rows"][1][column_of(*threads, "running")].get<int64_t>(), 0);
  EXPECT_EQ(table(doc, "Host thread stacks"), nullptr);  // no stack samples: no stack table

  // Native stacks (format 1.3/1.4): `analyze`'s top-stacks table, unnamed frames saying why.
  t.meta.extra["host_stack_sampling"] = "perf_event_open task-clock, frame-pointer callchains";
  t.meta.extra["host_stack_naming"] = "offline: 2 of 3 frames named; module missing 1 (libgone.so)";
  const auto exe = t.strings.intern("/usr/bin/python3");
  t.host_callsites.push({1, 0, t.strings.intern("main"), exe, 0x10, trace::FrameStatus::kNamed});
  t.host_callsites.push({2, 1, t.strings.intern("decode_jpeg"), exe, 0x20, trace::FrameStatus::kNamed});
  t.host_callsites.push(
      {3, 1, trace::kNoString, t.strings.intern("/opt/libgone.so"), 0x30, trace::FrameStatus::kModuleMissing});
  int k = 0;
  for (int64_t x = first + step; x <= last; x += step, ++k)
    t.host_stack_samples.push({x - 1, 4300, 4300, k % 4 == 0 ? 3u : 2u});
  HtmlReport rs;
  rs.add_run("stacks", run);
  const json sdoc = json::parse(rs.document_json());
  const json* stacks = table(sdoc, "Host thread stacks");
  ASSERT_NE(stacks, nullptr);
  ASSERT_GE((*stacks)["rows"].size(), 4u);
  const auto& top = (*stacks)["rows"][0];
  EXPECT_EQ(top[column_of(*stacks, "thread")], "pt_data_worker");
  EXPECT_EQ(top[column_of(*stacks, "kind")], "self");
  EXPECT_EQ(top[column_of(*stacks, "where")], "decode_jpeg");
  EXPECT_NEAR(top[column_of(*stacks, "share_pct")].get<double>(), 75.0, 3.0);
  const std::string all = stacks->dump();
  EXPECT_NE(all.find("main;libgone.so+0x30 [module missing]"), std::string::npos) << all;
  EXPECT_NE((*stacks)["notes"].dump().find("module missing 1 (libgone.so)"), std::string::npos);
}

TEST(ReportHtml, NamesFromTracesStayTextInThePage) {
  auto run = synthetic_run(1, 5'000);
  const std::string evil = "</script><script>alert(1)</script>";
  // Rename every kernel: the top-kernel table and the timeline carry the name.
  const auto id = run[0].strings.intern(evil);
  for (auto& n : run[0].kernels.name) n = id;
  HtmlReport r;
  r.add_run(evil, run);
  const std::string page = r.html();
  EXPECT_EQ(page.find(evil), std::string::npos);
  EXPECT_EQ(page.find("<script>alert(1)"), std::string::npos);
  const json doc = json::parse(data_of(page));
  EXPECT_NE(doc.dump().find(evil), std::string::npos);  // the name itself survives, as data
}

// A trace that does not record the size of its collectives: bytes unknown,
// no bandwidth, never "0 bytes at 0 GB/s".
TEST(ReportHtml, NcclBytesUnknownAreLeftEmpty) {
  auto run = synthetic_run(1, 20'000);
  ASSERT_GT(run[0].nccl.size(), 0u);
  for (auto& b : run[0].nccl.bytes) b = 0;
  HtmlReport r;
  r.add_run("no-sizes", run);
  const json doc = json::parse(r.document_json());
  const json* table = nullptr;
  for (const auto& s : doc["sections"])
    for (const auto& b : s["blocks"])
      if (b["type"] == "table" && b["title"].get<std::string>().starts_with("NCCL collectives")) table = &b;
  ASSERT_NE(table, nullptr);
  for (const auto& row : (*table)["rows"]) {
    EXPECT_TRUE(row[column_of(*table, "message_bytes")].is_null());
    EXPECT_TRUE(row[column_of(*table, "algorithm_gbps")].is_null());
  }
  EXPECT_NE((*table)["notes"].dump().find("message_bytes empty"), std::string::npos);
}

// torchrun's agent loads CUDA and leaves a trace without a rank or GPU work:
// a 1-GPU job must read "1 rank(s)", as analyze counts it.
TEST(ReportHtml, RunDirectoryLeavesTheLauncherOut) {
  TempDir dir;
  const fs::path run = dir.path / "job.ssrun";
  fs::create_directories(run);
  auto ranks = synthetic_run(1, 5'000);
  trace::write_trace(run / "node-812.sstrace", ranks[0]);
  trace::Trace agent;
  agent.meta.rank = -1;
  agent.meta.pid = 811;
  agent.meta.clock = ranks[0].meta.clock;
  trace::ApiRecord a;
  a.start = 1, a.end = 2;
  a.name = agent.strings.intern("cudaGetDeviceCount");
  agent.api.push(a);
  trace::write_trace(run / "node-811.sstrace", agent);
  HtmlReport r;
  r.add_input(run);
  const json doc = json::parse(r.document_json());
  bool found = false;
  for (const auto& s : doc["sections"])
    if (s["title"].get<std::string>().starts_with("Run: ")) {
      found = true;
      EXPECT_TRUE(s["subtitle"].get<std::string>().starts_with("1 rank(s)")) << s["subtitle"];
    }
  EXPECT_TRUE(found);
  EXPECT_EQ(doc.dump().find("rank ?"), std::string::npos);
}

// A run over two hosts (two ranks each) in one run directory: host "nodeb"
// reads a clock 3 ms ahead, and its rank 3 reaches every collective 150 us
// late. The report gets a per-node section with the nodes, their ranks, the
// clock estimate and its uncertainty, per-node breakdown and lateness, and
// the very tables `analyze` prints for the same run.
fs::path two_host_run(const fs::path& dir, bool named = true) {
  const fs::path run = dir / (named ? "two-hosts.ssrun" : "unnamed-hosts.ssrun");
  fs::create_directories(run);
  trace::SyntheticOptions o;
  o.events = 20'000;
  o.seed = 3;  // one seed: every rank's collectives end together, as on real GPUs
  o.world_size = 4;
  const trace::Trace base = trace::make_synthetic_trace(o);
  constexpr int64_t kUnix = 1'764'000'000'000'000'000;
  for (int rank = 0; rank < 4; ++rank) {
    trace::Trace t = base;
    const bool b = rank >= 2;
    t.meta.rank = rank;
    t.meta.local_rank = rank % 2;
    t.meta.pid = static_cast<uint32_t>(100 + rank);
    t.meta.hostname = named ? (b ? "nodeb" : "nodea") : "";
    t.meta.extra["node_rank"] = b ? "1" : "0";
    t.meta.extra["node_count"] = "2";
    const int64_t ahead = b ? 3'000'000 : 0;
    t.meta.clock = {{o.start_ns, kUnix + ahead}};
    if (rank == 3)
      for (size_t i = 0; i < t.nccl.size(); ++i)
        t.nccl.start[i] = std::min(t.nccl.start[i] + 150'000, t.nccl.end[i] - 1);
    trace::write_trace(run / fmt::format("{}-{}.sstrace", b ? "nodeb" : "nodea", t.meta.pid), t);
  }
  return run;
}

const json* find_section(const json& doc, std::string_view title) {
  for (const auto& s : doc["sections"])
    if (s["title"] == title) return &s;
  return nullptr;
}

const json* find_table(const json& section, std::string_view title_part) {
  for (const auto& b : section["blocks"])
    if (b["type"] == "table" && b["title"].get<std::string>().find(title_part) != std::string::npos) return &b;
  return nullptr;
}

size_t column_of(const json& table, std::string_view name) {
  const auto& c = table["columns"];
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i] == name) return i;
  ADD_FAILURE() << "no column " << name << " in " << table["title"];
  return 0;
}

// Traces that name no host: each process gets its own clock estimate, but
// the section neither counts processes as hosts nor says they shared one.
TEST(ReportHtml, NodeSectionOfTracesWithoutHostNames) {
  TempDir d;
  const fs::path run = two_host_run(d.path, false);
  HtmlReport r({.max_timeline_events = 200, .max_counter_points = 20, .quiet = true});
  r.add_input(run);
  const json doc = json::parse(r.document_json());
  const json* nodes = find_section(doc, "Nodes: unnamed-hosts.ssrun");
  ASSERT_NE(nodes, nullptr) << doc["sections"].size() << " sections";
  const std::string subtitle = (*nodes)["subtitle"];
  EXPECT_TRUE(subtitle.starts_with("hosts not named in the traces, 4 ranks")) << subtitle;
  const std::string text = nodes->dump();
  EXPECT_EQ(text.find("every rank ran on one host"), std::string::npos);
  EXPECT_NE(text.find("the traces do not name their hosts"), std::string::npos);
}

// The Python bootstrap's stacks of a run directory: the host view shows the
// table `analyze` prints (one formatter, report/run_tables.hpp), the
// worker's hottest frame named.
TEST(ReportHtml, PythonFramesOfARunDirectory) {
  TempDir d;
  const fs::path run = d.path / "py.ssrun";
  fs::create_directories(run);
  trace::SyntheticOptions o;
  o.events = 5'000;
  trace::Trace t = trace::make_synthetic_trace(o);
  t.meta.hostname = "h";
  t.meta.pid = 100;
  trace::write_trace(run / "h-100.sstrace", t);
  std::ofstream(run / "python-stacks-h-201.json")
      << R"({"kind":"scalescope python stacks","format":1,"pid":201,"ppid":100,"hostname":"h","hz":100,)"
         R"("state":"on in windows","samples":10,"thread_samples":10,"dropped":0,"truncated":0,"window_seconds":0.1,)"
         R"("sampler_cpu_per_second":0.001,"threads":[{"id":201,"name":"MainThread","main":true}],)"
         R"("stacks":[{"thread":201,"samples":10,"frames":[["/job/dataset.py",41,"__getitem__"]]}]})";
  HtmlReport r({.max_timeline_events = 200, .max_counter_points = 20, .quiet = true});
  r.add_input(run);
  const json doc = json::parse(r.document_json());
  const json* shown = nullptr;
  for (const auto& section : doc["sections"])
    if (const json* t = find_table(section, "Python frames")) shown = t;
  ASSERT_NE(shown, nullptr);
  const std::vector<Table> cli = python_frame_tables(analyze::analyze_path(run, analyze::Options{}));
  ASSERT_EQ(cli.size(), 1u);
  EXPECT_EQ((*shown)["title"], cli[0].title());
  ASSERT_EQ((*shown)["rows"].size(), 1u);
  EXPECT_EQ((*shown)["rows"][0][column_of(*shown, "where")], "dataset.py:41 __getitem__");
  EXPECT_EQ((*shown)["rows"][0][column_of(*shown, "process")], "worker");
  EXPECT_EQ((*shown).value("notes", json()), json::parse(cli[0].to_json()).value("notes", json()));
}

// The per-rank summary of the NVML samples: the table `analyze` prints (one
// formatter), below the counters, with each rank's SM clock.
TEST(ReportHtml, GpuClocksTableAsAnalyzePrintsIt) {
  HtmlReport r({.max_timeline_events = 100, .max_counter_points = 50});
  r.add_run("synthetic", synthetic_run(2, 20'000));
  const json doc = json::parse(r.document_json());
  const json* run = find_section(doc, "Run: synthetic");
  ASSERT_NE(run, nullptr);
  const json* shown = find_table(*run, "GPU clocks");
  ASSERT_NE(shown, nullptr);
  auto traces = synthetic_run(2, 20'000);
  const Table cli = gpu_clocks_table(analyze::analyze_traces(traces, {"a", "b"}, analyze::Options{}));
  ASSERT_EQ(cli.rows().size(), 2u);
  ASSERT_EQ((*shown)["rows"].size(), 2u);
  EXPECT_EQ((*shown)["columns"].size(), cli.columns().size());
  for (const auto& row : (*shown)["rows"]) EXPECT_EQ(row[column_of(*shown, "sm_median_mhz")], 1980);
}

TEST(ReportHtml, PerNodeSectionOfATwoHostRun) {
  TempDir d;
  const fs::path run = two_host_run(d.path);
  HtmlReport r({.max_timeline_events = 200, .max_counter_points = 20, .quiet = true});
  r.add_input(run);
  const json doc = json::parse(r.document_json());
  const json* nodes = find_section(doc, "Nodes: two-hosts.ssrun");
  ASSERT_NE(nodes, nullptr) << doc["sections"].size() << " sections";
  EXPECT_NE((*nodes)["subtitle"].get<std::string>().find("2 hosts, 4 ranks"), std::string::npos);

  // Clocks: nodeb found 3 ms ahead, within 5 us, with its uncertainty.
  const json* clocks = find_table(*nodes, "Clocks per host");
  ASSERT_NE(clocks, nullptr);
  ASSERT_EQ((*clocks)["rows"].size(), 2u);
  const json& ref = (*clocks)["rows"][0];
  const json& other = (*clocks)["rows"][1];
  EXPECT_EQ(ref[column_of(*clocks, "host")], "nodea");
  EXPECT_EQ(ref[column_of(*clocks, "status")], "reference");
  EXPECT_EQ(other[column_of(*clocks, "host")], "nodeb");
  EXPECT_EQ(other[column_of(*clocks, "status")], "aligned");
  EXPECT_NEAR(other[column_of(*clocks, "offset_ns")].get<double>(), 3'000'000, 5'000);
  EXPECT_TRUE(other[column_of(*clocks, "uncertainty_ns")].is_number());
  EXPECT_LT(other[column_of(*clocks, "uncertainty_ns")].get<double>(), 5'000);
  EXPECT_GT(other[column_of(*clocks, "collectives")].get<int64_t>(), 10);

  // Nodes: their ranks, per-node step and idle figures, lateness; nodeb is the slowest.
  const json* table = find_table(*nodes, "Nodes (means");
  ASSERT_NE(table, nullptr);
  ASSERT_EQ((*table)["rows"].size(), 2u);
  EXPECT_EQ((*table)["rows"][0][column_of(*table, "host")], "nodea");
  EXPECT_EQ((*table)["rows"][0][column_of(*table, "ranks")], "0,1");
  EXPECT_EQ((*table)["rows"][1][column_of(*table, "ranks")], "2,3");
  for (const auto& row : (*table)["rows"]) {
    EXPECT_GT(row[column_of(*table, "steady_median_iteration_ns")].get<double>(), 0);
    EXPECT_GE(row[column_of(*table, "idle_ns")].get<double>(), 0);
  }
  const int64_t late_a = (*table)["rows"][0][column_of(*table, "late_ns")].get<int64_t>();
  const int64_t late_b = (*table)["rows"][1][column_of(*table, "late_ns")].get<int64_t>();
  EXPECT_GT(late_b, 10 * late_a + 1'000'000) << "rank 3 on nodeb is late at every collective";
  ASSERT_TRUE((*table).contains("notes"));
  EXPECT_EQ((*table)["notes"][0], "slowest node: nodeb (by lateness at collectives in steady iterations)");
  ASSERT_NE(find_table(*nodes, "Communicators"), nullptr);

  // The charts: a breakdown and the lateness per node.
  const json* bars = find_chart(doc, "bars", "Per-node breakdown");
  ASSERT_NE(bars, nullptr);
  EXPECT_EQ((*bars)["categories"], json({"nodea", "nodeb"}));
  EXPECT_EQ((*bars)["series"].size(), 4u);
  const json* late = find_chart(doc, "bars", "Lateness at collectives per node");
  ASSERT_NE(late, nullptr);
  EXPECT_NEAR((*late)["series"][0]["values"][1].get<double>(), static_cast<double>(late_b) / 1e6, 1e-6);

  // The same tables as `scalescope analyze` over the same run (one formatter):
  // equal nodes and communicators; clock estimates equal within 100 ns (the
  // report shows the one the loader applied, analyze its own from the ranks).
  const std::vector<Table> cli = node_tables(analyze::analyze_path(run, analyze::Options{}));
  ASSERT_EQ(cli.size(), 3u);
  for (const Table& t : cli) {
    const json* shown = find_table(*nodes, t.title());
    ASSERT_NE(shown, nullptr) << t.title();
    const json want = json::parse(t.to_json());
    ASSERT_EQ((*shown)["rows"].size(), t.rows().size()) << t.title();
    EXPECT_EQ((*shown)["columns"].size(), t.columns().size()) << t.title();
    const json& cols = want["columns"];
    for (size_t i = 0; i < t.rows().size(); ++i) {
      for (size_t c = 0; c < cols.size(); ++c) {
        const std::string name = cols[c];
        const json& a = (*shown)["rows"][i][c];
        const json& b = want["rows"][i][name];
        const bool estimate = t.title().starts_with("Clocks") &&
                              (name == "offset_ns" || name == "drift_ppm" || name == "uncertainty_ns" ||
                               name == "spread_ns" || name == "collectives");
        if (estimate && a.is_number() && b.is_number())
          EXPECT_NEAR(a.get<double>(), b.get<double>(), name == "collectives" ? 2 : 100) << t.title() << " " << name;
        else EXPECT_EQ(a, b) << t.title() << " row " << i << " " << name;
      }
    }
    EXPECT_EQ((*shown).value("notes", json()), want.value("notes", json())) << t.title();
  }

  // One host: no per-node section.
  HtmlReport one({.max_timeline_events = 200, .max_counter_points = 20, .quiet = true});
  one.add_run("one host", synthetic_run(2, 20'000));
  const json single = json::parse(one.document_json());
  for (const auto& s : single["sections"]) EXPECT_FALSE(s["title"].get<std::string>().starts_with("Nodes:"));
}


}  // namespace
}  // namespace scalescope::report
