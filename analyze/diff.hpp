#pragma once
// The difference of two runs (diff.cpp).

#include <string>
#include <vector>

namespace scalescope::analyze {

struct RunAnalysis;  // run_analysis.hpp

struct Delta {
  std::string what;     // "compute", "kernel class: communication", kernel name, "copies HtoD pageable->device"
  double a = 0, b = 0;  // per-rank mean, ns (or bytes for *_bytes rows)
  double delta = 0;     // b - a
  double ratio = 0;     // b / a (0 when a == 0)
};

// Figures are per steady iteration when both runs have iterations (each
// rank's steady analysis, else its window, divided by its iteration count;
// then the mean over ranks), so runs of different lengths compare step for
// step; else per rank over the whole window (`basis` says which).
struct RunDiff {
  std::string basis;               // "per steady iteration" or "per rank, whole window"
  std::vector<Delta> breakdown;    // compute, exposed communication, copies, idle, overlap, wall
  std::vector<Delta> classes;      // kernel time by class and by precision
  std::vector<Delta> top_kernels;  // largest absolute deltas
  std::vector<Delta> copies;       // time and bytes by kind and memory kinds
  std::vector<Delta> changes;      // the named changes the verdict picks from, largest first
  std::vector<std::string> added_kernels;    // in B's kernel list, not in A's (by time in B, at most `top`)
  std::vector<std::string> removed_kernels;  // in A's, not in B's
  Delta iteration;                 // steady median iteration time
  std::string verdict;             // "B is 19.6 % faster per step (88.0 ms -> 70.7 ms): ..."
  std::string note;                // e.g. which side lacks iterations
};

RunDiff diff(const RunAnalysis& a, const RunAnalysis& b, int top = 15);

}  // namespace scalescope::analyze
