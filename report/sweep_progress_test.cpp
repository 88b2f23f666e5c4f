#include "report/sweep_progress.hpp"

#include <cstdio>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace scalescope::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Kind = sweep::SweepEvent::Kind;

std::string drawn(bool bar, const std::vector<sweep::SweepEvent>& events) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = ::open_memstream(&buffer, &size);
  const auto print = sweep_progress_printer(out, bar);
  for (const auto& e : events) print(e);
  std::fclose(out);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

sweep::SweepEvent event(Kind kind, int done, std::string label) {
  sweep::SweepEvent e;
  e.kind = kind;
  e.done = done;
  e.planned = 4;
  e.gpus = 2;
  e.rep = 1;
  e.config_label = std::move(label);
  e.sweep_elapsed_s = 75;
  e.eta_s = 3725;
  e.metric_name = "wall_s";
  return e;
}

TEST(SweepProgress, OneLinePerRunInLogs) {
  auto finished = event(Kind::kRunFinished, 3, "pin=1");
  finished.wall_s = 12.5;
  finished.metric = 12.5;
  finished.note = "exit 0";
  const std::string text = drawn(false, {event(Kind::kRunStarted, 2, "pin=1"), event(Kind::kRunning, 2, "pin=1"),
                                         finished, event(Kind::kSweepEnded, 3, "")});
  EXPECT_EQ(text,
            "run 3/4 gpus=2 pin=1 rep=1: running (elapsed 1m15s)\n"
            "run 3/4 gpus=2 pin=1 rep=1: ok in 12.50 s, wall_s=12.5; exit 0 (elapsed 1m15s, ETA 1h02m)\n");
}

TEST(SweepProgress, BarRedrawsOneLineAndEndsIt) {
  const std::string text =
      drawn(true, {event(Kind::kRunStarted, 0, ""), event(Kind::kRunFinished, 1, ""), event(Kind::kSweepEnded, 1, "")});
  EXPECT_THAT(text, HasSubstr("\r\033[K[#######.......................] 1/4 runs"));
  EXPECT_EQ(text.back(), '\n');
}

// A config value from the command line cannot move the cursor or set colours.
TEST(SweepProgress, ConfigValuesAreEscaped) {
  const std::string text = drawn(false, {event(Kind::kRunStarted, 0, "name=\033[2Jx")});
  EXPECT_THAT(text, Not(HasSubstr("\033[2J")));
  EXPECT_THAT(text, HasSubstr("name="));
}

// --scheduler slurm: a line per submission (by plan index) and per queue change.
TEST(SweepProgress, SchedulerSubmissionsAndQueueCounts) {
  auto submitted = event(Kind::kRunStarted, 0, "pin=1");
  submitted.run_index = 5;
  submitted.note = "submitted as Slurm job 77";
  auto queue = event(Kind::kQueue, 1, "");
  queue.queue = {{"pin=1", 2, 1, 0, 1}, {"pin=\033[2J", 4, 0, 1, 0}};
  EXPECT_EQ(drawn(false, {submitted, queue}),
            "run #5 gpus=2 pin=1 rep=1: submitted as Slurm job 77 (elapsed 1m15s)\n"
            "queue: g2 pin=1 1 queued 0 running 1 done | g4 pin=\\x1b[2J 0 queued 1 running 0 done\n");
}

TEST(SweepProgress, EtaFormat) {
  EXPECT_EQ(format_eta(42), "42s");
  EXPECT_EQ(format_eta(185), "3m05s");
  EXPECT_EQ(format_eta(3725), "1h02m");
  EXPECT_EQ(format_eta(NAN), "?");
  EXPECT_EQ(format_eta(-1), "?");
}

}  // namespace
}  // namespace scalescope::report
