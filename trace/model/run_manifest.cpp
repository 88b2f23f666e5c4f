// Run directory manifests: written last by each writer of a run directory
// (import, profile), read by load_run to tell a complete directory from one
// whose writer was killed, ran out of disk, or mixed in another run's files.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/json_number.hpp"
#include <xxhash.h>

#include "base/error.hpp"
#include "base/safe_output.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::trace {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxManifestBytes = uint64_t{16} << 20;

uint64_t hash_file(const fs::path& p, uint64_t* bytes) {
  std::FILE* f = std::fopen(p.c_str(), "rb");
  if (!f) fail("{}: cannot read for the run manifest", p.string());
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  std::vector<char> buf(size_t{1} << 20);
  *bytes = 0;
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), f)) > 0;) {
    XXH64_update(st, buf.data(), n);
    *bytes += n;
  }
  const bool err = std::ferror(f);
  std::fclose(f);
  const uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  if (err) fail("{}: read failed while writing the run manifest", p.string());
  return h;
}

bool is_manifest_name(const std::string& n) {
  return n.starts_with(kManifestPrefix) && n.size() > 5 && n.ends_with(".json");
}

}  // namespace

std::vector<std::filesystem::path> list_run_files(const std::filesystem::path& run_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(run_dir, ec)) fail("{}: not a run directory", run_dir.string());
  std::vector<std::filesystem::path> files;
  std::filesystem::directory_iterator it(run_dir, ec);
  if (ec) fail("{}: cannot list run directory: {}", run_dir.string(), ec.message());
  for (const auto& entry : it) {
    if (entry.path().extension() == kTraceFileExtension && entry.is_regular_file(ec)) files.push_back(entry.path());
  }
  if (files.empty()) fail("{}: run directory holds no {} files", run_dir.string(), kTraceFileExtension);
  std::sort(files.begin(), files.end());
  return files;
}

void write_run_manifest(const fs::path& run_dir, const std::vector<std::string>& files, std::string_view writer) {
  nlohmann::json j;
  j["scalescope_manifest"] = 1;
  j["writer"] = std::string(writer);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  j["host"] = std::string(host);
  j["pid"] = ::getpid();
  auto list = nlohmann::json::array();
  for (const std::string& name : files) {
    uint64_t bytes = 0;
    const uint64_t h = hash_file(run_dir / name, &bytes);
    list.push_back({{"name", name}, {"bytes", bytes}, {"xxh64", fmt::format("{:016x}", h)}});
  }
  j["files"] = list;
  const fs::path out = run_dir / (writer.empty() ? std::string(kManifestPrefix) + ".json"
                                                 : fmt::format("{}-{}.json", kManifestPrefix, writer));
  TempPath tmp(temp_path_for(out));
  {
    std::ofstream f(tmp.path(), std::ios::binary | std::ios::trunc);
    f << j.dump(1) << "\n";
    f.flush();
    if (!f) fail("{}: cannot write the run manifest (disk full?)", out.string());
  }
  tmp.commit_to(out);
}

RunCheck check_run_manifest(const fs::path& run_dir) {
  RunCheck check;
  std::error_code ec;
  std::set<std::string> present;
  std::map<std::string, ManifestEntry> listed;
  for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->path().extension() == kTraceFileExtension) present.insert(name);
    if (!is_manifest_name(name)) continue;
    check.has_manifest = true;
    try {
      const auto size = fs::file_size(it->path());
      if (size > kMaxManifestBytes) fail("too large");
      std::ifstream in(it->path(), std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      const auto j = nlohmann::json::parse(text.str());
      for (const auto& f : j.at("files")) {
        ManifestEntry e;
        e.name = f.at("name").get<std::string>();
        e.bytes = json_integer_field<uint64_t>(f, "bytes", "");
        e.xxh64 = std::stoull(f.at("xxh64").get<std::string>(), nullptr, 16);
        if (e.name.find('/') != std::string::npos || e.name.empty() || e.name[0] == '.') fail("bad name");
        listed[e.name] = e;
      }
    } catch (const std::exception&) {
      check.bad_manifests.push_back(name);
    }
  }
  for (const auto& [name, e] : listed) {
    check.listed.push_back(e);
    if (!present.count(name)) check.missing.push_back(name);
  }
  if (check.has_manifest)
    for (const std::string& name : present)
      if (!listed.count(name)) check.unlisted.push_back(name);
  return check;
}

std::string RunCheck::message(const fs::path& run_dir) const {
  if (!has_manifest)
    return fmt::format(
        "{}: no manifest (written by an older build, or its writer died before finishing): "
        "the ranks cannot be checked for completeness",
        run_dir.string());
  std::vector<std::string> parts;
  auto names = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < 5; ++i) s += (i ? ", " : "") + v[i];
    if (v.size() > 5) s += fmt::format(" and {} more", v.size() - 5);
    return s;
  };
  if (!missing.empty()) parts.push_back(fmt::format("{} listed file(s) missing ({})", missing.size(), names(missing)));
  if (!changed.empty())
    parts.push_back(fmt::format("{} file(s) differ from their manifest entry ({}; cut short or replaced)",
                                changed.size(), names(changed)));
  if (!unlisted.empty())
    parts.push_back(
        fmt::format("{} file(s) no manifest lists ({}; their writer did not finish, or they belong to "
                    "another run)",
                    unlisted.size(), names(unlisted)));
  if (!bad_manifests.empty()) parts.push_back(fmt::format("unreadable manifest(s) {}", names(bad_manifests)));
  if (parts.empty()) return {};
  std::string s = fmt::format("{}: incomplete run directory: ", run_dir.string());
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? "; " : "") + parts[i];
  return s;
}

}  // namespace scalescope::trace
