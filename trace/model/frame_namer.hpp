#pragma once
// Names the native frames of collector traces offline, on the analysing
// machine, as perf and Nsight Systems do: the collector writes each frame as
// (module path, file offset) and, per process, the module's build-id and
// mapping (format 1.4, trace.host_modules); this reads each module's ELF by
// path (under FrameNamerOptions::symfs first, like perf --symfs), checks its
// build-id against the recorded one, and names frames from its symbol table
// and separate debug files through libdw (elfutils, loaded with dlopen so
// that scalescope runs where it is missing). Each file is loaded once per
// FrameNamer, whatever number of traces it names (a run's ranks share
// libtorch).
//
//   FrameNamer namer;
//   for (Trace& t : ranks) namer.name(t);  // t.host_callsites.function/status filled
//
// A frame that stays unnamed says why in its status (trace::FrameStatus):
// module missing, build-id differs, no symbol, libdw missing. A summary
// line goes to meta.extra["host_stack_naming"].

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::trace {

struct FrameNamerOptions {
  // Looked in first: <symfs>/<module path>; then the path itself. Empty: the path only.
  std::filesystem::path symfs;
  // Test hook: behave as if libdw.so.1 were missing.
  bool without_libdw = false;
};

// FrameNamerOptions with symfs from the environment (SCALESCOPE_SYMFS).
FrameNamerOptions frame_namer_options_from_env();

class FrameNamer {
 public:
  explicit FrameNamer(FrameNamerOptions options = {});
  ~FrameNamer();
  FrameNamer(const FrameNamer&) = delete;
  FrameNamer& operator=(const FrameNamer&) = delete;

  // Names every callsite of `t` still kUnnamed whose module has a
  // host_modules row; sets the status of every callsite; adds the summary.
  void name(Trace& t);
  // Distinct files whose symbols were loaded so far (each at most once).
  size_t files_loaded() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A frame (row of t.host_callsites) for people: its function, else
// "module+0xoffset" (the module's file name) followed by why it has no name
// ("[module missing]") where offline naming found out, else the raw address.
std::string frame_label(const Trace& t, size_t row);

// One FrameNamer over all traces; does nothing (no dlopen) for traces without callsites.
void name_frames(std::vector<Trace>& traces, const FrameNamerOptions& options = frame_namer_options_from_env());

}  // namespace scalescope::trace
