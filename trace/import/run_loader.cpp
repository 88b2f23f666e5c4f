// load_run: one trace file, or every *.sstrace of a run directory read in
// parallel by a small pool of threads (each file is independent), then
// ordered by rank and pid so that index i is a stable rank order.

#include <algorithm>
#include <mutex>
#include <system_error>

#include <map>

#include <xxhash.h>

#include "trace/import/clock_alignment.hpp"
#include "base/error.hpp"
#include "base/file_bytes.hpp"
#include "base/parallel_for.hpp"
#include "trace/model/python_record.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/import/run_loader.hpp"
#include "trace/import/trace_source.hpp"

namespace scalescope::trace {

std::vector<Trace> load_run(const std::filesystem::path& path_or_file, const LoadOptions& options) {
  std::error_code ec;
  if (!std::filesystem::exists(path_or_file, ec)) fail("{}: no such file or directory", path_or_file.string());
  if (!std::filesystem::is_directory(path_or_file, ec)) {
    std::vector<Trace> one;
    one.push_back(read_trace(path_or_file, options.read));
    return one;
  }
  const std::vector<std::filesystem::path> files = list_run_files(path_or_file);
  RunCheck check = check_run_manifest(path_or_file);
  std::map<std::string, const ManifestEntry*> listed;
  for (const auto& e : check.listed) listed[e.name] = &e;
  std::vector<Trace> traces(files.size());
  std::mutex mutex;  // guards check.changed
  // The one pool (base/parallel_for.hpp): the error of the first file in
  // name order wins, whatever thread saw it first.
  parallel_for(
      files.size(), worker_count(options.threads, files.size()),
      [&](size_t i, unsigned) {
        const detail::FileBytes bytes = detail::read_trace_bytes(files[i]);
        traces[i] = read_trace_from_memory(bytes.span(), files[i].string(), options.read);
        const auto it = listed.find(files[i].filename().string());
        if (it != listed.end() &&
            (it->second->bytes != bytes.size || it->second->xxh64 != XXH64(bytes.data.get(), bytes.size, 0))) {
          std::lock_guard lock(mutex);
          check.changed.push_back(it->first);
        }
      },
      options.on_file_loaded);
  std::sort(check.changed.begin(), check.changed.end());
  // Rank and process groups from torch.distributed, where the job's Python
  // bootstrap wrote them beside the traces.
  attach_python_records(read_python_records(path_or_file), traces);
  // Sorted through an index so that errors can still name each trace's file.
  std::vector<size_t> order(traces.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const Metadata& a = traces[x].meta;
    const Metadata& b = traces[y].meta;
    // Unknown rank (-1) sorts last.
    const auto ra = static_cast<uint32_t>(a.rank), rb = static_cast<uint32_t>(b.rank);
    if (ra != rb) return ra < rb;
    return a.pid < b.pid;
  });
  // One trace per rank: a second one means two runs mixed in one directory,
  // or a copy (even of the same process) counted twice.
  std::vector<RankOfFile> ranks;
  for (size_t i : order) ranks.push_back({traces[i].meta.rank, files[i].filename().string()});
  check_one_trace_per_rank(path_or_file, ranks);
  std::vector<Trace> sorted;
  sorted.reserve(traces.size());
  for (size_t i : order) sorted.push_back(std::move(traces[i]));
  traces = std::move(sorted);
  const size_t lost = check.missing.size() + check.unlisted.size() + check.changed.size() + check.bad_manifests.size();
  if (!traces.empty()) {
    if (!check.has_manifest) traces.front().problems.add(Problem::kRunNoManifest);
    if (lost > 0) traces.front().problems.add(Problem::kRunIncomplete, lost);
  }
  if (options.on_warning && lost > 0) options.on_warning(check.message(path_or_file));
  AlignOptions align;
  align.apply = options.align_clocks;
  ClockAlignment clocks = align_clocks(traces, align);
  if (options.clocks) *options.clocks = std::move(clocks);
  return traces;
}

}  // namespace scalescope::trace
