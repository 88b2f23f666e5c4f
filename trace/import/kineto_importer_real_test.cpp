// The real trace in ../shared imports completely. Slow under ASan (170 MB of
// JSON parsed twice), so it is its own executable labelled "slow".
#include <zlib.h>

#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <simdjson.h>

#include "trace/import/kineto_importer.hpp"

namespace scalescope::trace {
namespace {

namespace fs = std::filesystem;

// The real trace imports completely: every event of the JSON, counted per
// (cat, ph) by an independent parse (simdjson's DOM API), is accounted for.
TEST(KinetoImporter, RealTraceImportsCompletely) {
  fs::path path = fs::path(SCALESCOPE_SHARED_DIR) / "data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz";
  if (!fs::exists(path)) GTEST_SKIP() << "needs " << path;
  ImportReport rep;
  Trace t = import_kineto_file(path, &rep);

  // Independent count: gunzip with zlib's gz API and parse with the DOM API.
  std::string json;
  {
    gzFile f = gzopen(path.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) json.append(buf, static_cast<size_t>(n));
    gzclose(f);
  }
  ASSERT_EQ(rep.json_bytes, json.size());
  std::map<std::pair<std::string, std::string>, uint64_t> expected;
  uint64_t nccl = 0, sync = 0, total = 0;
  {
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(json);
    for (simdjson::dom::object ev : doc["traceEvents"].get_array()) {
      ++total;
      std::string_view cat, ph, name;
      if (ev["cat"].get(cat)) cat = "";
      if (ev["ph"].get(ph)) ph = "";
      if (ev["name"].get(name)) name = "";
      ++expected[{std::string(cat), std::string(ph)}];
      if (cat == "kernel" && name.substr(0, 4) == "nccl") ++nccl;
      if ((cat == "cuda_runtime" || cat == "cuda_driver") &&
          (name == "cudaStreamSynchronize" || name == "cudaDeviceSynchronize" || name == "cudaEventSynchronize" ||
           name == "cudaStreamWaitEvent"))
        ++sync;
    }
  }
  EXPECT_EQ(total, 711921u);
  EXPECT_EQ(rep.events, total);
  EXPECT_EQ(rep.categories.size(), expected.size());
  for (const auto& [key, n] : expected)
    EXPECT_EQ(rep.count(key.first, key.second), n) << key.first << "/" << key.second;
  auto c = [&](const char* cat, const char* ph = "X") { return expected[{cat, ph}]; };
  EXPECT_EQ(rep.malformed, 0u);
  EXPECT_EQ(rep.unknown, 0u);
  EXPECT_EQ(t.kernels.size(), c("kernel"));
  EXPECT_EQ(t.nccl.size(), nccl);
  EXPECT_EQ(t.memcpys.size(), c("gpu_memcpy"));
  EXPECT_EQ(t.memsets.size(), c("gpu_memset"));
  EXPECT_EQ(t.api.size(), c("cuda_runtime") + c("cuda_driver"));
  EXPECT_EQ(t.syncs.size(), sync);
  EXPECT_EQ(t.nvtx.size(), c("cpu_op") + c("user_annotation") + c("gpu_user_annotation"));
  EXPECT_EQ(rep.flows, c("ac2g", "s") + c("ac2g", "f") + c("fwdbwd", "s") + c("fwdbwd", "f"));
  EXPECT_EQ(rep.metadata_kept + rep.metadata_dropped, c("", "M"));
  EXPECT_EQ(rep.ignored, c("overhead") + c("Trace") + c("", "i"));
  EXPECT_EQ(t.meta.rank, 0);
  EXPECT_EQ(t.meta.world_size, 2);
  EXPECT_EQ(t.meta.devices.size(), 2u);
  for (size_t i = 0; i < t.nccl.size(); ++i) {
    EXPECT_NE(t.nccl.op[i], NcclOp::kUnknown);
    EXPECT_GT(t.nccl.bytes[i], 0u);
  }
}

}  // namespace
}  // namespace scalescope::trace
