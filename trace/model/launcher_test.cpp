#include "trace/model/launcher.hpp"

#include <gtest/gtest.h>

namespace scalescope::trace {
namespace {

TEST(LauncherRank, Torchrun) {
  auto r = rank_from_environment({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}, {"SLURM_PROCID", "0"}});
  EXPECT_EQ(r.launcher, "torchrun");
  EXPECT_EQ(r.rank_variable, "RANK");
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.world_size, 8);
}

TEST(LauncherRank, Slurm) {
  auto r = rank_from_environment({{"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "1"}, {"SLURM_NTASKS", "16"}});
  EXPECT_EQ(r.launcher, "slurm");
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.world_size, 16);
}

TEST(LauncherRank, OpenMpiWinsOverSlurm) {
  auto r = rank_from_environment({{"OMPI_COMM_WORLD_RANK", "2"},
                        {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                        {"OMPI_COMM_WORLD_SIZE", "4"},
                        {"SLURM_PROCID", "0"}});
  EXPECT_EQ(r.launcher, "mpi");
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.local_rank, 0);
  EXPECT_EQ(r.world_size, 4);
}

TEST(LauncherRank, Pmi) {
  auto r = rank_from_environment({{"PMI_RANK", "7"}, {"PMI_SIZE", "8"}, {"MPI_LOCALRANKID", "3"}});
  EXPECT_EQ(r.launcher, "pmi");
  EXPECT_EQ(r.rank, 7);
  EXPECT_EQ(r.local_rank, 3);
  EXPECT_EQ(r.world_size, 8);
  // Intel MPI and MPICH's hydra name the local rank PALS_LOCAL_RANKID.
  EXPECT_EQ(rank_from_environment({{"PMI_RANK", "7"}, {"PALS_LOCAL_RANKID", "1"}}).local_rank, 1);
}

TEST(LauncherRank, NoneAndGarbage) {
  auto r = rank_from_environment({{"PATH", "/usr/bin"}});
  EXPECT_EQ(r.launcher, "");
  EXPECT_EQ(r.rank_variable, "");
  EXPECT_EQ(r.rank, -1);
  EXPECT_EQ(r.local_rank, -1);
  // A non-number is not a rank; the next launcher is tried.
  r = rank_from_environment({{"RANK", "x1"}, {"SLURM_PROCID", "4"}});
  EXPECT_EQ(r.launcher, "slurm");
  EXPECT_EQ(r.rank, 4);
  EXPECT_EQ(r.world_size, -1);
  EXPECT_EQ(rank_from_environment({{"RANK", "-1"}}).rank, -1);
  EXPECT_EQ(rank_from_environment({{"RANK", "99999999999"}}).rank, -1);
  r = rank_from_environment({{"LOCAL_RANK", "2"}});
  EXPECT_EQ(r.rank, -1);
  EXPECT_EQ(r.local_rank, 2);
}


Trace process(int32_t rank, bool kernel, uint32_t pid) {
  Trace t;
  t.meta.rank = rank;
  t.meta.pid = pid;
  t.meta.hostname = "node1";
  if (kernel) {
    KernelRecord k;
    k.start = 10, k.end = 20;
    k.name = t.strings.intern("gemm");
    t.kernels.push(k);
  }
  ApiRecord a;
  a.start = 1, a.end = 2;
  a.name = t.strings.intern("cudaGetDeviceCount");
  t.api.push(a);
  return t;
}

TEST(Launcher, TheTorchrunAgentIsLeftOutOfARun) {
  std::vector<Trace> run;
  run.push_back(process(-1, false, 811));  // the agent: loaded CUDA, no rank, no GPU work
  run.push_back(process(0, true, 812));
  const auto left_out = drop_launchers(run);
  ASSERT_EQ(run.size(), 1u);
  EXPECT_EQ(run[0].meta.rank, 0);
  ASSERT_EQ(left_out.size(), 1u);
  EXPECT_EQ(left_out[0], "no rank (node1 pid 811)");
}

TEST(Launcher, ProcessesWithGpuWorkOrARankStay) {
  std::vector<Trace> run;
  run.push_back(process(-1, true, 1));  // a rank-less process that did GPU work: a rank of unknown number
  run.push_back(process(1, false, 2));  // a rank that did no GPU work in the window
  run.push_back(process(0, true, 3));
  EXPECT_TRUE(drop_launchers(run).empty());
  EXPECT_EQ(run.size(), 3u);
}

TEST(Launcher, NothingIsLeftOutWhenNoProcessHasGpuWork) {
  std::vector<Trace> run;
  run.push_back(process(-1, false, 1));
  run.push_back(process(-1, false, 2));
  EXPECT_TRUE(drop_launchers(run).empty());
  EXPECT_EQ(run.size(), 2u);
  EXPECT_FALSE(is_launcher(-1, false, false));
  EXPECT_TRUE(is_launcher(-1, false, true));
}

}  // namespace
}  // namespace scalescope::trace
