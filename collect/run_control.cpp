#include "collect/run_control.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/json_fields.hpp"
#include "base/json_number.hpp"

namespace scalescope::collect {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxIterations = uint64_t{1} << 40;  // beyond any job: a typo, not a request
constexpr size_t kMaxText = 4096;                       // note and names
constexpr size_t kMaxFileBytes = 64 * 1024;

bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-';
  });
}

template <typename T>
constexpr bool kIsIntegerList = false;
template <std::integral I>
constexpr bool kIsIntegerList<std::vector<I>> = true;

template <typename T>
bool get(const nlohmann::json& j, const char* key, T* out, std::string* error, bool required = true) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required && error) *error = std::string("no \"") + key + "\"";
    return !required;
  }
  // An integer field takes an integer that fits it, never a wrapped or cast
  // one (a pid of 4e101).
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    const auto v = json_integer<T>(*it);
    if (!v) {
      if (error)
        *error = std::string("\"") + key + (it->is_number() ? "\" is not an integer in range" : "\" has the wrong type");
      return false;
    }
    *out = *v;
    return true;
  }
  if constexpr (kIsIntegerList<T>) {
    T list;
    for (size_t i = 0; it->is_array() && i < it->size(); ++i)
      if (const auto v = json_integer<typename T::value_type>((*it)[i])) list.push_back(*v);
    if (!it->is_array() || list.size() != it->size()) {
      if (error) *error = std::string("\"") + key + "\" is not a list of integers in range";
      return false;
    }
    *out = std::move(list);
    return true;
  }
  try {
    *out = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    if (error) *error = std::string("\"") + key + "\" has the wrong type";
    return false;
  }
  return true;
}

// `text` as a JSON object; nullopt with *error set when it is not one.
std::optional<nlohmann::json> parse_object(std::string_view text, std::string* error) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_discarded() && j.is_object()) return j;
  if (error) *error = "not a JSON object";
  return std::nullopt;
}

std::optional<std::string> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::string s(kMaxFileBytes + 1, '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<size_t>(in.gcount()));
  if (s.size() > kMaxFileBytes) return std::nullopt;
  return s;
}

// The text under a temporary name beside `final`, flushed to disk.
fs::path write_temp(const fs::path& final, const std::string& text) {
  fs::path tmp = final;
  tmp += ".tmp-" + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("{}: cannot write: {}", tmp.string(), std::strerror(errno));
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail("{}: cannot write: {}", tmp.string(), std::strerror(e));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  ::close(fd);
  return tmp;
}

// Writes `final` unless it exists (false then), creating its folder. link()
// fails if the name exists, on local and network filesystems alike: of two
// processes claiming one id, one wins.
bool create_new_file(const fs::path& final, const std::string& text) {
  std::error_code ec;
  fs::create_directories(final.parent_path(), ec);
  if (ec) fail("{}: cannot create: {}", final.parent_path().string(), ec.message());
  const fs::path tmp = write_temp(final, text);
  const int rc = ::link(tmp.c_str(), final.c_str());
  const int e = errno;
  ::unlink(tmp.c_str());
  if (rc == 0) return true;
  if (e == EEXIST) return false;
  fail("{}: cannot create: {}", final.string(), std::strerror(e));
}

int64_t mtime_ns(const fs::path& p) {
  struct stat st{};
  if (::stat(p.c_str(), &st) != 0) return -1;
  return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

std::optional<WindowRequest> parse_window_request(std::string_view text, std::string* error) {
  const auto object = parse_object(text, error);
  if (!object) return std::nullopt;
  const nlohmann::json& j = *object;
  WindowRequest r;
  if (!get(j, "id", &r.id, error) || !get(j, "start_iteration", &r.start_iteration, error) ||
      !get(j, "iterations", &r.iterations, error) || !get(j, "reason", &r.reason, error) ||
      !get(j, "ranks", &r.ranks, error, false) || !get(j, "note", &r.note, error, false) ||
      !get(j, "requested_by", &r.requested_by, error, false) ||
      !get(j, "requested_unix_ns", &r.requested_unix_ns, error, false))
    return std::nullopt;
  if (!valid_id(r.id)) {
    if (error) *error = "\"id\" must be 1 to 64 characters of a-z, 0-9 and -";
    return std::nullopt;
  }
  if (r.iterations == 0 || r.iterations > kMaxIterations || r.start_iteration > kMaxIterations) {
    if (error) *error = "\"iterations\" must be 1 or more, and both counts below 2^40";
    return std::nullopt;
  }
  if (r.reason != "trigger" && r.reason != "time") {
    if (error) *error = "\"reason\" must be trigger or time";
    return std::nullopt;
  }
  if (r.note.size() > kMaxText || r.requested_by.size() > kMaxText || r.ranks.size() > 1'000'000) {
    if (error) *error = "a field is too long";
    return std::nullopt;
  }
  return r;
}

std::string window_request_json(const WindowRequest& r) {
  const nlohmann::json j =
      SCALESCOPE_JSON_FIELDS(r, id, start_iteration, iterations, ranks, reason, note, requested_by, requested_unix_ns);
  return j.dump() + "\n";
}

std::optional<Progress> parse_progress(std::string_view text, std::string* error) {
  const auto object = parse_object(text, error);
  if (!object) return std::nullopt;
  const nlohmann::json& j = *object;
  Progress p;
  if (!get(j, "host", &p.host, error) || !get(j, "pid", &p.pid, error) || !get(j, "rank", &p.rank, error) ||
      !get(j, "iteration", &p.iteration, error) || !get(j, "step_ns", &p.step_ns, error) ||
      !get(j, "unix_ns", &p.unix_ns, error) || !get(j, "iteration_unix_ns", &p.iteration_unix_ns, error, false))
    return std::nullopt;
  if (!std::isfinite(p.step_ns) || p.step_ns < 0 || p.iteration > kMaxIterations) {
    if (error) *error = "\"step_ns\" or \"iteration\" out of range";
    return std::nullopt;
  }
  return p;
}

std::string progress_json(const Progress& p) {
  return SCALESCOPE_JSON_FIELDS(p, host, pid, rank, iteration, step_ns, unix_ns, iteration_unix_ns).dump() + "\n";
}

fs::path control_dir(const fs::path& run_dir) { return run_dir / "control"; }

void write_file_whole(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) fail("{}: cannot create: {}", path.parent_path().string(), ec.message());
  const fs::path tmp = write_temp(path, text);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail("{}: cannot write: {}", path.string(), std::strerror(e));
  }
}

bool create_dump_request(const fs::path& run_dir, const std::string& id, const std::string& requested_by) {
  if (!valid_id(id)) fail("dump request id '{}' is not a-z, 0-9 and -", id);
  nlohmann::json j;
  j["id"] = id;
  j["requested_by"] = requested_by;
  return create_new_file(control_dir(run_dir) / ("dump-" + id + ".json"), j.dump() + "\n");
}

void write_hang_dump(const fs::path& run_dir, const trace::HangDump& dump) {
  write_file_whole(trace::hang_dump_dir(run_dir) / trace::hang_dump_name(dump.host, dump.pid),
                   trace::hang_dump_json(dump));
}

bool job_stalled(const std::vector<Progress>& progress, double after_s, int64_t now_unix_ns) {
  if (after_s <= 0) return false;
  int64_t latest = 0;
  for (const auto& p : progress) latest = std::max(latest, p.iteration_unix_ns);
  return latest > 0 && static_cast<double>(now_unix_ns - latest) >= after_s * 1e9;
}

bool create_window_request(const fs::path& run_dir, const WindowRequest& r) {
  if (!valid_id(r.id)) fail("window request id '{}' is not a-z, 0-9 and -", r.id);
  return create_new_file(control_dir(run_dir) / ("window-" + r.id + ".json"), window_request_json(r));
}

std::vector<WindowRequest> read_window_requests(const fs::path& run_dir, std::vector<std::string>* skipped) {
  std::vector<std::pair<std::string, WindowRequest>> found;
  std::error_code ec;
  for (fs::directory_iterator it(control_dir(run_dir), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("window-", 0) != 0 || it->path().extension() != ".json") continue;
    std::string error;
    auto text = slurp(it->path());
    auto r = text ? parse_window_request(*text, &error) : std::nullopt;
    if (!text) error = "unreadable or over 64 KiB";
    if (r && "window-" + r->id + ".json" != name) r.reset(), error = "its id does not match its name";
    if (r) found.emplace_back(name, std::move(*r));
    else if (skipped) skipped->push_back(it->path().string() + ": " + error);
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<WindowRequest> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

void write_progress(const fs::path& run_dir, const Progress& p) {
  const fs::path dir = control_dir(run_dir) / "progress";
  write_file_whole(dir / (p.host + "-" + std::to_string(p.pid) + ".json"), progress_json(p));
}

std::vector<Progress> read_progress(const fs::path& run_dir, std::vector<std::string>* skipped) {
  std::vector<Progress> out;
  std::error_code ec;
  for (fs::directory_iterator it(control_dir(run_dir) / "progress", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".json") continue;
    std::string error;
    auto text = slurp(it->path());
    auto p = text ? parse_progress(*text, &error) : std::nullopt;
    if (p) out.push_back(std::move(*p));
    else if (skipped) skipped->push_back(it->path().string() + ": " + (text ? error : "unreadable or over 64 KiB"));
  }
  std::sort(out.begin(), out.end(), [](const Progress& a, const Progress& b) {
    return std::tie(a.rank, a.host, a.pid) < std::tie(b.rank, b.host, b.pid);
  });
  return out;
}

uint64_t aligned_start(const std::vector<Progress>& progress, double lead_s, int64_t now_unix_ns) {
  uint64_t furthest = 0;
  double step_ns = 0;
  for (const auto& p : progress) {
    uint64_t now_at = p.iteration;
    if (p.step_ns > 0 && now_unix_ns > p.unix_ns)
      now_at += static_cast<uint64_t>(std::min(1e6, static_cast<double>(now_unix_ns - p.unix_ns) / p.step_ns));
    furthest = std::max(furthest, now_at);
    if (p.step_ns > 0) step_ns = step_ns > 0 ? std::min(step_ns, p.step_ns) : p.step_ns;
  }
  uint64_t lead = 2;
  if (step_ns > 0) lead = std::max<uint64_t>(2, static_cast<uint64_t>(std::ceil(lead_s * 1e9 / step_ns)));
  return furthest + std::min<uint64_t>(lead, 1'000'000);
}

ControlWatcher::ControlWatcher(fs::path run_dir, std::chrono::milliseconds period)
    : run_dir_(std::move(run_dir)), period_(period) {}

std::vector<WindowRequest> ControlWatcher::poll(std::chrono::steady_clock::time_point now) {
  if (now < next_) return {};
  next_ = now + period_;
  ++checks_;
  const int64_t m = mtime_ns(control_dir(run_dir_));
  if (m < 0 || m == seen_mtime_ns_) return {};
  // A file added within the clock tick of this look would leave the folder's
  // time unchanged: a recent time is looked at again next time.
  const int64_t wall = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
  seen_mtime_ns_ = wall - m > 1'000'000'000 ? m : -1;
  ++scans_;
  std::vector<std::string> skipped;
  std::vector<WindowRequest> fresh;
  for (auto& r : read_window_requests(run_dir_, &skipped)) {
    if (std::find(seen_ids_.begin(), seen_ids_.end(), r.id) != seen_ids_.end()) continue;
    seen_ids_.push_back(r.id);
    fresh.push_back(std::move(r));
  }
  for (auto& s : skipped)
    if (std::find(skipped_.begin(), skipped_.end(), s) == skipped_.end()) skipped_.push_back(std::move(s));
  // Dump requests: their names are enough (what the file says is for the reader).
  std::error_code ec;
  for (fs::directory_iterator it(control_dir(run_dir_), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("dump-", 0) != 0 || it->path().extension() != ".json") continue;
    if (std::find(seen_dumps_.begin(), seen_dumps_.end(), name) != seen_dumps_.end()) continue;
    seen_dumps_.push_back(name);
    dump_requests_.push_back(name.substr(5, name.size() - 10));
  }
  return fresh;
}

}  // namespace scalescope::collect
