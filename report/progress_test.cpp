#include "report/progress.hpp"

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace scalescope::report {
namespace {

using namespace std::chrono_literals;

// Captures what the progress bar writes, with a clock the test moves.
struct Capture {
  std::FILE* file = std::tmpfile();
  Progress::Clock::time_point t{};
  ~Capture() { std::fclose(file); }
  Progress::Options options(Progress::Mode mode) {
    Progress::Options o;
    o.mode = mode;
    o.out = file;
    o.width = 80;
    o.now = [this] { return t; };
    return o;
  }
  std::string text() {
    std::fflush(file);
    std::rewind(file);
    std::string s;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, file)) > 0) s.append(buf, n);
    return s;
  }
};

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(ReportProgress, BarShowsPercentCountsAndEta) {
  Capture c;
  Progress p("sweep", 10, c.options(Progress::Mode::kBar));
  c.t += 2s;
  p.advance(5);
  const std::string line = p.line();
  EXPECT_NE(line.find(" 50%"), std::string::npos) << line;
  EXPECT_NE(line.find("5/10"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 2.0s"), std::string::npos) << line;  // 5 done in 2 s: 5 more take 2 s
  EXPECT_NE(line.find("[####"), std::string::npos) << line;
  EXPECT_LE(line.size(), 80u);
}

TEST(ReportProgress, RedrawsAreRateLimited) {
  Capture c;
  {
    Progress p("load", 1000, c.options(Progress::Mode::kBar));
    for (int i = 0; i < 1000; ++i) {
      c.t += 1ms;  // 1 s in all: about 10 redraws at 100 ms
      p.advance();
    }
  }
  const std::string out = c.text();
  const size_t redraws = count(out, "\r");
  EXPECT_GE(redraws, 9u);
  EXPECT_LE(redraws, 13u);
  EXPECT_NE(out.find("1000/1000  done in 1.0s"), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n');
}

TEST(ReportProgress, PlainModeWritesFewWholeLines) {
  Capture c;
  {
    Progress p("ingest", 100, c.options(Progress::Mode::kPlain));
    for (int i = 0; i < 100; ++i) {
      c.t += 1s;  // 100 s: a line every 10 s
      p.advance();
    }
  }
  const std::string out = c.text();
  EXPECT_EQ(out.find('\r'), std::string::npos);
  EXPECT_EQ(out.find('\033'), std::string::npos);
  EXPECT_NE(out.find("ingest: started (100 to do)\n"), std::string::npos);
  const size_t lines = count(out, "\n");
  EXPECT_GE(lines, 10u);
  EXPECT_LE(lines, 13u);
  EXPECT_NE(out.find("ingest: 100/100  done in 1m40s\n"), std::string::npos) << out;
}

// Off a terminal (a file here, a pipe or CI log elsewhere) no progress line
// comes before a command's result or its one-line error; notes still do.
TEST(ReportProgress, AutoOffATerminalWritesNoProgress) {
  Capture c;
  {
    Progress p("report", 3, c.options(Progress::Mode::kAuto));
    c.t += 20s;
    p.advance(2);
    p.note("a note");
    p.finish();
  }
  EXPECT_EQ(c.text(), "a note\n");
}

TEST(ReportProgress, QuietWritesNothing) {
  Capture c;
  {
    Progress p("x", 3, c.options(Progress::Mode::kQuiet));
    p.advance(3);
    p.note("hello");
  }
  EXPECT_TRUE(c.text().empty());
}

TEST(ReportProgress, UnknownTotalShowsCountAndRate) {
  Capture c;
  Progress p("events", 0, c.options(Progress::Mode::kBar));
  c.t += 2s;
  p.advance(400);
  EXPECT_EQ(p.line(), "events: 400  200.0/s");
}

TEST(ReportProgress, NoteClearsTheBarAndDetailIsShown) {
  Capture c;
  Progress p("sweep", 4, c.options(Progress::Mode::kBar));
  p.set_detail("N=8 repeat 2");
  p.note("run 1 failed: exit 3");
  p.finish();
  p.advance();  // after finish: ignored, no crash
  const std::string out = c.text();
  EXPECT_NE(out.find("\r\033[Krun 1 failed: exit 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("N=8 repeat 2"), std::string::npos);
}

TEST(ReportProgress, FormatsEta) {
  EXPECT_EQ(Progress::format_eta(12.34), "12.3s");
  EXPECT_EQ(Progress::format_eta(65), "1m05s");
  EXPECT_EQ(Progress::format_eta(7380), "2h03m");
  EXPECT_EQ(Progress::format_eta(-1), "?");
}

}  // namespace
}  // namespace scalescope::report
