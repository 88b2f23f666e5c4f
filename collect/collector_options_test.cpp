#include "collect/collector_options.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"

namespace scalescope::collect {
namespace {

TEST(CollectOptions, RoundTrip) {
  CollectorOptions o;
  o.run_dir = "/tmp/x.ssrun";
  o.api = ApiMode::kAll;
  o.delay_s = 2.5;
  o.duration_s = 10;
  parse_capture_range("nvtx:train step", o);
  o.nvml_hz = 0;
  o.host_hz = 25;
  o.buffer_mb = 32;
  o.discard = true;
  o.activities = kActivityKernel | kActivitySync;
  o.detach = false;
  o.api_records = ApiRecords::kActivity;
  auto back = parse_collector_options(to_environment(o));
  EXPECT_EQ(back.run_dir, o.run_dir);
  EXPECT_EQ(back.api, ApiMode::kAll);
  EXPECT_DOUBLE_EQ(back.delay_s, 2.5);
  EXPECT_DOUBLE_EQ(back.duration_s, 10);
  EXPECT_EQ(back.capture, CaptureRange::kNvtx);
  EXPECT_EQ(back.capture_name, "train step");
  EXPECT_DOUBLE_EQ(back.nvml_hz, 0);
  EXPECT_DOUBLE_EQ(back.host_hz, 25);
  EXPECT_EQ(back.buffer_mb, 32u);
  EXPECT_TRUE(back.discard);
  EXPECT_EQ(back.activities, kActivityKernel | kActivitySync);
  EXPECT_EQ(to_environment(o).at("SCALESCOPE_ACTIVITIES"), "kernel,sync");
  EXPECT_FALSE(back.detach);
  EXPECT_EQ(back.api_records, ApiRecords::kActivity);
  EXPECT_TRUE(parse_collector_options(to_environment(CollectorOptions{})).detach);
  // The default travels too: a value exported for an earlier run cannot leak in.
  EXPECT_EQ(to_environment(CollectorOptions{}).at("SCALESCOPE_API_RECORDS"), "callbacks");
  EXPECT_EQ(parse_collector_options({}).api_records, ApiRecords::kCallbacks);
}

// `profile` lays its options over the user's environment: one exported for
// an earlier run must not outlive a run that leaves the option at its default.
TEST(CollectOptions, DefaultsOverrideVariablesTheUserExported) {
  Environment inherited = {
      {"SCALESCOPE_DELAY", "5"},   {"SCALESCOPE_DURATION", "3"}, {"SCALESCOPE_CAPTURE_RANGE", "nvtx:step"},
      {"SCALESCOPE_DISCARD", "1"}, {"SCALESCOPE_DETACH", "0"},   {"SCALESCOPE_FULL", "1"}};
  for (auto& [k, v] : to_environment(CollectorOptions{})) inherited[k] = v;
  const CollectorOptions back = parse_collector_options(inherited);
  const CollectorOptions defaults;
  EXPECT_DOUBLE_EQ(back.delay_s, defaults.delay_s);
  EXPECT_DOUBLE_EQ(back.duration_s, defaults.duration_s);
  EXPECT_EQ(back.capture, CaptureRange::kNone);
  EXPECT_EQ(back.discard, defaults.discard);
  EXPECT_EQ(back.detach, defaults.detach);
  EXPECT_EQ(back.full, defaults.full);
}

TEST(CollectOptions, DetachMustBeZeroOrOne) {
  EXPECT_TRUE(parse_collector_options({{"SCALESCOPE_DETACH", "1"}}).detach);
  EXPECT_FALSE(parse_collector_options({{"SCALESCOPE_DETACH", "0"}}).detach);
  try {
    parse_collector_options({{"SCALESCOPE_DETACH", "yes"}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SCALESCOPE_DETACH='yes' must be 0 or 1"), std::string::npos) << e.what();
  }
}

TEST(CollectOptions, Activities) {
  EXPECT_EQ(parse_activities("kernel"), kActivityKernel);
  EXPECT_EQ(parse_activities("nvtx,kernel,kernel"), kActivityKernel | kActivityNvtx);
  EXPECT_EQ(parse_activities("kernel,memcpy,memset,sync,nvtx"), kAllActivities);
  EXPECT_EQ(parse_activities("all"), kAllActivities);
  EXPECT_EQ(format_activities(kAllActivities), "kernel,memcpy,memset,sync,nvtx");
  EXPECT_EQ(format_activities(kActivityMemset | kActivityKernel), "kernel,memset");
  for (uint32_t bits = 1; bits <= kAllActivities; ++bits)
    EXPECT_EQ(parse_activities(format_activities(bits)), bits) << bits;
  // The default travels too, so that a value exported for an earlier run cannot leak into this one.
  EXPECT_EQ(to_environment(CollectorOptions{}).at("SCALESCOPE_ACTIVITIES"), "kernel,memcpy,memset,nvtx");
  auto message = [](std::string_view text) {
    try {
      parse_activities(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("kernel,memcopy").find("bad activity 'memcopy' in 'kernel,memcopy'"), std::string::npos)
      << message("kernel,memcopy");
  EXPECT_NE(message("").find("bad activity ''"), std::string::npos);
  EXPECT_NE(message("kernel,").find("bad activity ''"), std::string::npos);
  EXPECT_NE(message("Kernel").find("'Kernel'"), std::string::npos);
  EXPECT_NE(message("api").find("expected a comma-separated list of kernel, memcpy, memset, sync, nvtx"),
            std::string::npos);
}

TEST(CollectOptions, Defaults) {
  auto o = parse_collector_options({});
  EXPECT_EQ(o.api, ApiMode::kDefault);
  EXPECT_DOUBLE_EQ(o.nvml_hz, 10);
  EXPECT_DOUBLE_EQ(o.host_hz, 100);
  EXPECT_EQ(o.capture, CaptureRange::kNone);
  EXPECT_FALSE(o.discard);
  EXPECT_EQ(o.activities, kDefaultActivities);  // no SYNCHRONIZATION records: the API calls stand in
  EXPECT_EQ(format_activities(o.activities), "kernel,memcpy,memset,nvtx");
  EXPECT_TRUE(o.detach);
}

TEST(CollectOptions, BadValuesNameTheVariable) {
  auto message = [](const Environment& env) {
    try {
      parse_collector_options(env);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message({{"SCALESCOPE_DELAY", "-1"}}).find("SCALESCOPE_DELAY"), std::string::npos);
  EXPECT_NE(message({{"SCALESCOPE_DURATION", "5s"}}).find("SCALESCOPE_DURATION"), std::string::npos);
  EXPECT_NE(message({{"SCALESCOPE_BUFFER_MB", "1"}}).find("SCALESCOPE_BUFFER_MB"), std::string::npos);
  EXPECT_NE(message({{"SCALESCOPE_API", "some"}}).find("'some'"), std::string::npos);
  EXPECT_NE(message({{"SCALESCOPE_API_RECORDS", "trace"}}).find("SCALESCOPE_API_RECORDS: bad API record path 'trace'"),
            std::string::npos);
  EXPECT_NE(message({{"SCALESCOPE_CAPTURE_RANGE", "nvtx:"}}).find("capture range"), std::string::npos);
  EXPECT_NE(message({{"SCALESCOPE_NVML_HZ", "5000"}}).find("SCALESCOPE_NVML_HZ"), std::string::npos);
  EXPECT_NE(message({{"SCALESCOPE_HOST_HZ", "5000"}}).find("SCALESCOPE_HOST_HZ"), std::string::npos);
  EXPECT_NE(message({{"SCALESCOPE_HOST_HZ", "fast"}}).find("SCALESCOPE_HOST_HZ"), std::string::npos);
  EXPECT_NE(message({{"SCALESCOPE_ACTIVITIES", "kernel,api"}}).find("SCALESCOPE_ACTIVITIES: bad activity 'api'"),
            std::string::npos);
}

TEST(CollectOptions, DefaultApiSelection) {
  using trace::ApiDomain;
  for (const char* name :
       {"cudaLaunchKernel_v7000", "cudaLaunchKernelExC_v11060", "cudaLaunchCooperativeKernel_v9000",
        "cudaMemcpyAsync_v3020", "cudaMemsetAsync_v3020", "cudaStreamSynchronize_v3020", "cudaDeviceSynchronize_v3020",
        "cudaEventSynchronize_v3020", "cudaStreamWaitEvent_v3020", "cudaMalloc_v3020", "cudaFree_v3020",
        "cudaMallocHost_v3020", "cudaHostAlloc_v3020", "cudaGraphLaunch_v10000", "cudaProfilerStart_v4000"})
    EXPECT_TRUE(is_default_api(ApiDomain::kRuntime, name)) << name;
  for (const char* name : {"cuLaunchKernel", "cuLaunchKernelEx", "cuMemcpyHtoD_v2", "cuMemsetD8_v2", "cuCtxSynchronize",
                           "cuStreamSynchronize", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemHostAlloc", "cuGraphLaunch",
                           "cuStreamWaitEvent", "cuEventSynchronize"})
    EXPECT_TRUE(is_default_api(ApiDomain::kDriver, name)) << name;
  for (const char* name : {"cudaGetDevice_v3020", "cudaEventRecord_v3020", "cudaStreamQuery_v3020",
                           "cudaGetLastError_v3020", "cudaPeekAtLastError_v3020"})
    EXPECT_FALSE(is_default_api(ApiDomain::kRuntime, name)) << name;
  for (const char* name : {"cuCtxGetCurrent", "cuEventRecord", "cuStreamQuery", "cuPointerGetAttribute"})
    EXPECT_FALSE(is_default_api(ApiDomain::kDriver, name)) << name;
  EXPECT_FALSE(is_default_api(ApiDomain::kDriver, "cudaLaunchKernel_v7000"));
}

}  // namespace
}  // namespace scalescope::collect

namespace scalescope::collect {
namespace {

TEST(CollectOptionsSampling, SampledByDefaultAndNotWithTheUsersOwnWindows) {
  EXPECT_TRUE(parse_collector_options({}).sampled());
  EXPECT_FALSE(parse_collector_options({{"SCALESCOPE_FULL", "1"}}).sampled());
  EXPECT_FALSE(parse_collector_options({{"SCALESCOPE_DELAY", "2"}}).sampled());
  EXPECT_FALSE(parse_collector_options({{"SCALESCOPE_DURATION", "2"}}).sampled());
  EXPECT_FALSE(parse_collector_options({{"SCALESCOPE_CAPTURE_RANGE", "cudaProfilerApi"}}).sampled());
  auto o = parse_collector_options({});
  EXPECT_EQ(o.iteration_range, "ProfilerStep");
  EXPECT_EQ(o.skip_iterations, 10u);
  EXPECT_EQ(o.iterations, 20u);
  EXPECT_EQ(o.repeat_every, 0u);
}

TEST(CollectOptionsSampling, RoundTripsThroughTheEnvironment) {
  CollectorOptions o;
  o.run_dir = "/tmp/r";
  o.iteration_range = "train_step";
  o.skip_iterations = 3;
  o.iterations = 7;
  o.repeat_every = 50;
  auto back = parse_collector_options(to_environment(o));
  EXPECT_EQ(back.iteration_range, "train_step");
  EXPECT_EQ(back.skip_iterations, 3u);
  EXPECT_EQ(back.iterations, 7u);
  EXPECT_EQ(back.repeat_every, 50u);
  EXPECT_FALSE(back.full);
  o.full = true;
  EXPECT_TRUE(parse_collector_options(to_environment(o)).full);
}

TEST(CollectOptionsSampling, BadValuesAreOneLineErrors) {
  auto error_of = [](const Environment& env) {
    try {
      parse_collector_options(env);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of({{"SCALESCOPE_ITERATIONS", "0"}}).find("SCALESCOPE_ITERATIONS='0'"), std::string::npos);
  EXPECT_NE(error_of({{"SCALESCOPE_SKIP_ITERATIONS", "-1"}}).find("SCALESCOPE_SKIP_ITERATIONS"), std::string::npos);
  EXPECT_NE(error_of({{"SCALESCOPE_REPEAT_EVERY", "x"}}).find("SCALESCOPE_REPEAT_EVERY"), std::string::npos);
  EXPECT_NE(error_of({{"SCALESCOPE_FULL", "yes"}}).find("SCALESCOPE_FULL='yes' must be 0 or 1"), std::string::npos);
  // Every switch is 0 or 1: "off" must not mean on.
  EXPECT_NE(error_of({{"SCALESCOPE_DISCARD", "no"}}).find("SCALESCOPE_DISCARD='no' must be 0 or 1"), std::string::npos);
  EXPECT_NE(error_of({{"SCALESCOPE_HOST_STACKS", "off"}}).find("SCALESCOPE_HOST_STACKS='off' must be 0 or 1"),
            std::string::npos);
  // A repeat no longer than the window leaves nothing untraced.
  EXPECT_NE(error_of({{"SCALESCOPE_ITERATIONS", "20"}, {"SCALESCOPE_REPEAT_EVERY", "20"}}).find("leaves none untraced"),
            std::string::npos);
  EXPECT_EQ(error_of({{"SCALESCOPE_ITERATIONS", "20"}, {"SCALESCOPE_REPEAT_EVERY", "21"}}), "");
}

}  // namespace
}  // namespace scalescope::collect

namespace scalescope::collect {
namespace {
// Native stacks are on unless SCALESCOPE_HOST_STACKS=0.
TEST(CollectOptions, HostStacksOnUnlessZero) {
  EXPECT_TRUE(parse_collector_options({}).host_stacks);
  EXPECT_TRUE(parse_collector_options({{"SCALESCOPE_HOST_STACKS", "1"}}).host_stacks);
  EXPECT_FALSE(parse_collector_options({{"SCALESCOPE_HOST_STACKS", "0"}}).host_stacks);
}
}  // namespace
}  // namespace scalescope::collect
