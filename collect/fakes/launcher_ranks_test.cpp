// `scalescope profile -- mpirun -np 2 ...` and `profile -- srun -n 2 ...`
// with the real launchers (Open MPI; the two-node Slurm cluster of
// scripts/slurm-test-cluster.sh, started by ctest as a fixture), each rank a
// fake CUDA process over the fake CUPTI: run.json must hold two processes
// whose ranks the collector took from the launcher's own environment (no
// RANK variable is set).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool on_path(const char* tool) { return std::system(fmt::format("command -v {} >/dev/null 2>&1", tool).c_str()) == 0; }

class LauncherRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    // The test cluster's, never a real cluster a developer may have configured.
    ::setenv("SLURM_CONF", SCALESCOPE_SLURM_CONF, 1);
    dir_ = fs::temp_directory_path() / fmt::format("scalescope-launcher-ranks-{}", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Profiles `launcher...` starting two fake ranks; returns run.json.
  nlohmann::json profile(const std::string& name, const std::string& launcher) {
    const std::string env = fmt::format(
        "env -u RANK -u WORLD_SIZE -u LOCAL_RANK LD_LIBRARY_PATH={} SCALESCOPE_COLLECTOR={} "
        // Open MPI refuses root without these; CI runs as root.
        "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
        SCALESCOPE_FAKE_CUPTI_DIR, SCALESCOPE_COLLECTOR_PATH);
    const std::string line = fmt::format("{} {} profile -o {} -- {} {} {} 20 0 >{} 2>&1", env, SCALESCOPE_BIN,
                                         (dir_ / name).string(), launcher, SCALESCOPE_FAKE_RANK,
                                         (dir_ / (name + "-rendezvous")).string(), (dir_ / (name + ".log")).string());
    const int status = std::system(line.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << line << "\n" << read_file(dir_ / (name + ".log"));
    return nlohmann::json::parse(read_file(dir_ / (name + ".ssrun") / "run.json"), nullptr, false);
  }

  // Ranks 0 and 1 with these local ranks (each rank's index on its node).
  static void expect_ranks_0_and_1(const nlohmann::json& run, const std::set<int>& want_local_ranks = {0, 1}) {
    ASSERT_TRUE(run.is_object());
    ASSERT_EQ(run["processes"].size(), 2u) << run.dump();
    std::set<int> ranks, local_ranks;
    for (const auto& p : run["processes"]) {
      ranks.insert(p["rank"].get<int>());
      local_ranks.insert(p["local_rank"].get<int>());
      EXPECT_EQ(p.value("rank_source", ""), "environment") << p.dump();
    }
    EXPECT_EQ(ranks, (std::set<int>{0, 1})) << run.dump();
    EXPECT_EQ(local_ranks, want_local_ranks) << run.dump();
  }

  fs::path dir_;
};

TEST_F(LauncherRanks, MpirunStartsRanksZeroAndOne) {
  if (!on_path("mpirun"))
    GTEST_SKIP() << "mpirun (Open MPI) is not installed: scripts/slurm-test-cluster.sh start installs it as root";
  expect_ranks_0_and_1(profile("mpi", "mpirun --oversubscribe -np 2"));
}

bool slurm_answers() {
  return fs::exists(SCALESCOPE_SLURM_CONF) && on_path("srun") && std::system("sinfo -h >/dev/null 2>&1") == 0;
}

#define SKIP_WITHOUT_SLURM()                                                        \
  if (!slurm_answers())                                                             \
  GTEST_SKIP() << "no Slurm cluster answers here (SLURM_CONF="                      \
               << (std::getenv("SLURM_CONF") ? std::getenv("SLURM_CONF") : "unset") \
               << "): scripts/slurm-test-cluster.sh start runs one as root"

TEST_F(LauncherRanks, SrunStartsRanksZeroAndOne) {
  SKIP_WITHOUT_SLURM();
  expect_ranks_0_and_1(profile("srun", "srun -n 2"));
}

// One task on each of the test cluster's two nodes: ranks 0 and 1 (SLURM_PROCID),
// each the first on its node (SLURM_LOCALID 0).
TEST_F(LauncherRanks, SrunOverTwoNodesStartsOneRankOnEach) {
  SKIP_WITHOUT_SLURM();
  expect_ranks_0_and_1(profile("srun2", "srun --nodes=2 --ntasks-per-node=1"), {0});
}

}  // namespace
