#pragma once
// The one rule for every command that writes what the user named (-o):
//   1. never write over an input (same path, or the same file through a link:
//      compared by device and inode, not by the text of the path), nor
//      anywhere inside an input folder, at any depth (the output's existing
//      ancestors, symlinks resolved, compared by device and inode);
//   2. replace an existing output only where the command documents it, or
//      with --force;
//   3. write a temporary file beside the output and rename it into place; a
//      SIGINT, SIGTERM or SIGHUP removes the registered temporary files.
//
//   trace::check_output(out, {input}, /*replace_existing=*/opts.force);
//   trace::TempPath tmp(trace::temp_path_for(out));   // registered for signals
//   write(tmp.path()); tmp.commit_to(out);             // rename, unregister

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace scalescope::trace {

// Throws Error when `out` is (or, for a directory output, holds) one of
// `inputs`, lies inside an input that is a folder, or exists and
// `replace_existing` is false. Every command and the C ABI call it with all
// their inputs, files and folders alike:
//   "x.sstrace: the output is the input x.sstrace; choose another -o"
//   "run.ssrun/r.html: is inside the input folder run.ssrun; choose an -o outside it"
//   "out.csv: already exists; pass --force to replace it"
void check_output(const std::filesystem::path& out, const std::vector<std::filesystem::path>& inputs,
                  bool replace_existing);

// Is `a` the same file or directory as `b` (device and inode)? False when either is missing.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

// A path beside `out` to write to first: "<dir>/.<name>.tmp-<pid>" (hidden,
// so a run directory listing never picks it up as data).
std::filesystem::path temp_path_for(const std::filesystem::path& out);

// Registers a temporary path to remove (file, or directory tree) when the
// process is ended by SIGINT/SIGTERM/SIGHUP; the handler is installed at each
// registration for those of the signals that still have their default action.
// The handler unlinks (files) or leaves empty directories behind (it cannot
// walk trees safely); the disposition is then reset and the signal re-raised.
void register_temp(const std::filesystem::path& p);
void unregister_temp(const std::filesystem::path& p);

// A registered temporary path, removed on destruction unless committed.
class TempPath {
 public:
  explicit TempPath(std::filesystem::path p);
  ~TempPath();
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // Renames the temporary onto `out` (replacing a file), or removes it and
  // throws an Error naming `out`.
  void commit_to(const std::filesystem::path& out);

 private:
  std::filesystem::path path_;
  bool done_ = false;
};

}  // namespace scalescope::trace
