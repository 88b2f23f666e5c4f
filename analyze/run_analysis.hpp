#pragma once
// Every rank of a run, combined: stragglers, clocks, nodes, NCCL collectives, hangs.

#include <string>
#include <vector>

#include "analyze/hang_report.hpp"
#include "analyze/nccl_ops.hpp"
#include "analyze/nodes.hpp"
#include "analyze/rank_analysis.hpp"
#include "analyze/stragglers.hpp"
#include "trace/import/clock_alignment.hpp"

namespace scalescope::analyze {

struct RunAnalysis {
  std::vector<RankAnalysis> ranks;
  StragglerStats stragglers;
  trace::ClockAlignment clocks;  // per host: offset, drift and uncertainty against the reference host
  NodeStats nodes;
  NcclOpStats nccl_ops;  // every rank's NCCL collectives by operation and message size
  // Labels of processes left out of `ranks`: no rank and no GPU activity
  // while other processes have some (a launcher that loaded CUDA, such as the
  // torchrun agent). Counted as a rank they would skew "N of M ranks".
  std::vector<std::string> left_out;
  HangReport hang;  // from a run directory's hang dumps (control/hang/); hang.dumps == 0 when none
};

}  // namespace scalescope::analyze
