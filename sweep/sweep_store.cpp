#include "sweep/sweep_store.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>

#include "sweep/utc_time.hpp"
#include "base/error.hpp"
#include "base/json_fields.hpp"
#include "base/safe_output.hpp"
#include <fmt/format.h>

namespace scalescope::sweep {
namespace {

using trace::SqliteDatabase;
using trace::SqliteStatement;

constexpr const char* kSchema = R"sql(
CREATE TABLE sweeps (
  id INTEGER PRIMARY KEY,
  created TEXT NOT NULL,
  scalescope_version TEXT NOT NULL,
  spec_json TEXT NOT NULL,
  metric TEXT NOT NULL,
  higher_is_better INTEGER NOT NULL,
  planned_runs INTEGER NOT NULL
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  sweep_id INTEGER NOT NULL REFERENCES sweeps(id),
  plan_index INTEGER NOT NULL,
  config_json TEXT NOT NULL,
  gpus INTEGER NOT NULL,
  nodes INTEGER NOT NULL,
  rep INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running','ok','failed','timeout','crashed','error')),
  exit_code INTEGER,
  signal INTEGER,
  start_unix REAL NOT NULL,
  end_unix REAL,
  wall_s REAL,
  metric REAL,
  metrics_json TEXT NOT NULL DEFAULT '{}',
  command_json TEXT NOT NULL,
  run_dir TEXT NOT NULL,
  log_path TEXT NOT NULL,
  trace_path TEXT,
  note TEXT,
  UNIQUE (sweep_id, plan_index)
);
CREATE INDEX runs_by_config ON runs (sweep_id, config_json, gpus);
)sql";

// --scheduler slurm: the job of each run. Files of older versions lack it; it
// is added when one is resumed, and readers treat it as optional.
constexpr const char* kSlurmJobsSchema = R"sql(
CREATE TABLE IF NOT EXISTS slurm_jobs (
  sweep_id INTEGER NOT NULL REFERENCES sweeps(id),
  plan_index INTEGER NOT NULL,
  job_id TEXT NOT NULL,
  state TEXT NOT NULL,
  exit_code INTEGER,
  nodelist TEXT,
  gpus INTEGER,
  submit_unix REAL,
  queued_s REAL,
  PRIMARY KEY (sweep_id, plan_index)
);
)sql";

// The sweep database's errors: a file that is not one says so.
std::string word_sweep_error(const trace::SqliteFailure& f) {
  if (f.action == trace::SqliteAction::kOpen)
    return fmt::format("{}: cannot open sweep database ({})", f.file, f.message());
  if (f.rc == SQLITE_NOTADB && f.action != trace::SqliteAction::kExec)
    return fmt::format("{}: not a scalescope sweep database ({})", f.file, f.message());
  return fmt::format("{}: sweep database error ({})", f.file, f.message());
}

// Text that is empty as nothing (NULL).
std::optional<std::string> unless_empty(const std::string& text) {
  return text.empty() ? std::nullopt : std::optional(text);
}

bool has_table(SqliteDatabase& db, const std::string& name) {
  SqliteStatement s = db.prepare("SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?");
  s.bind(1, name);
  return s.step() && s.i64(0) == 1;
}

SqliteDatabase open_db(const std::filesystem::path& path, int flags) {
  SqliteDatabase db(path, flags, path.string(), &word_sweep_error);
  sqlite3_busy_timeout(db.handle(), 5000);
  return db;
}

}  // namespace

SweepStore::SweepStore(SweepStore&& other) noexcept = default;

SweepStore::~SweepStore() = default;

void SweepStore::check_identity() {
  int64_t app = 0, version = 0;
  {
    SqliteStatement s = db_.prepare("PRAGMA application_id");
    if (s.step()) app = s.i64(0);
  }
  if (app != kApplicationId)
    fail("{}: not a scalescope sweep database (SQLite application_id is {:#x}, expected {:#x})", db_.file(), app,
         kApplicationId);
  {
    SqliteStatement s = db_.prepare("PRAGMA user_version");
    if (s.step()) version = s.i64(0);
  }
  if (version > kSchemaVersion)
    fail("{}: sweep database schema {} is newer than this scalescope reads ({})", db_.file(), version, kSchemaVersion);
  for (const char* table : {"sweeps", "runs"})
    if (!has_table(db_, table))
      fail("{}: damaged scalescope sweep database (table '{}' is missing)", db_.file(), table);
  SqliteStatement s = db_.prepare("SELECT id FROM sweeps ORDER BY id LIMIT 1");
  if (!s.step()) fail("{}: scalescope sweep database without a sweep", db_.file());
  sweep_id_ = s.i64(0);
}

SweepStore SweepStore::create(const std::filesystem::path& path, const std::string& spec_json,
                              const std::string& metric, bool higher_is_better, int planned_runs,
                              const std::string& version) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    // 0 bytes: a creation killed before its first write (older builds made the
    // file in place); nothing to lose, so it is replaced. The caller holds the
    // sweep lock, so no other sweep is creating it right now.
    if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) == 0 && !ec)
      std::filesystem::remove(path, ec);
    else fail("{}: already exists; pass --resume to continue that sweep or choose another -o file", path.string());
  }
  // Made complete under a temporary name, then linked into place: a kill at
  // any moment leaves either no database or a whole one.
  trace::TempPath tmp(trace::temp_path_for(path));
  std::filesystem::remove(tmp.path(), ec);
  {
    SweepStore store(open_db(tmp.path(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    store.init(spec_json, metric, higher_is_better, planned_runs, version);
  }
  if (::link(tmp.path().c_str(), path.c_str()) != 0) {
    if (errno == EEXIST)
      fail("{}: already exists; pass --resume to continue that sweep or choose another -o file", path.string());
    fail("{}: cannot create the sweep database ({})", path.string(), std::strerror(errno));
  }
  SweepStore store(open_db(path, SQLITE_OPEN_READWRITE));
  store.db_.exec("PRAGMA synchronous = FULL");
  store.check_identity();
  return store;
}

void SweepStore::init(const std::string& spec_json, const std::string& metric, bool higher_is_better, int planned_runs,
                      const std::string& version) {
  db_.exec("PRAGMA synchronous = FULL");
  db_.exec("BEGIN IMMEDIATE");
  db_.exec(fmt::format("PRAGMA application_id = {}", kApplicationId).c_str());
  db_.exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion).c_str());
  db_.exec(kSchema);
  db_.exec(kSlurmJobsSchema);
  {
    SqliteStatement s = db_.prepare(
        "INSERT INTO sweeps (created, scalescope_version, spec_json, metric, higher_is_better, planned_runs) "
        "VALUES (?,?,?,?,?,?)");
    s.bind_all(utc_now_iso(), version, spec_json, metric, higher_is_better, planned_runs);
    s.step();
  }
  sweep_id_ = sqlite3_last_insert_rowid(db_.handle());
  db_.exec("COMMIT");
}

SweepStore SweepStore::open_for_resume(const std::filesystem::path& path, const std::string& spec_json) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail("{}: no such sweep database to resume", path.string());
  SweepStore store(open_db(path, SQLITE_OPEN_READWRITE));
  store.db_.exec("PRAGMA synchronous = FULL");
  store.check_identity();
  store.db_.exec(kSlurmJobsSchema);
  SqliteStatement s = store.db_.prepare("SELECT spec_json FROM sweeps WHERE id = ?");
  s.bind(1, store.sweep_id_);
  s.step();
  if (nlohmann::json::parse(s.text(0), nullptr, false) != nlohmann::json::parse(spec_json, nullptr, false))
    fail(
        "{}: cannot resume: the sweep there was planned with different options (GPU counts, --vary, --repeat, "
        "launcher, metric, seed or command); run with the same options or write a new file",
        path.string());
  return store;
}

SweepStore SweepStore::open_read_only(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail("{}: no such sweep database", path.string());
  SweepStore store(open_db(path, SQLITE_OPEN_READONLY));
  store.check_identity();
  return store;
}

void SweepStore::set_running_note(const PlannedRun& run, const std::string& note) {
  SqliteStatement s = db_.prepare("UPDATE runs SET note=? WHERE sweep_id=? AND plan_index=? AND status='running'");
  s.bind_all(note, sweep_id_, run.index);
  s.step();
}

std::map<int, std::string> SweepStore::running_rows() {
  std::map<int, std::string> out;
  SqliteStatement s =
      db_.prepare("SELECT plan_index, coalesce(note, '') FROM runs WHERE sweep_id = ? AND status = 'running'");
  s.bind(1, sweep_id_);
  while (s.step()) out[static_cast<int>(s.i64(0))] = s.text(1);
  return out;
}

std::set<int> SweepStore::finished_indices() {
  std::set<int> out;
  SqliteStatement s = db_.prepare("SELECT plan_index FROM runs WHERE sweep_id = ? AND status != 'running'");
  s.bind(1, sweep_id_);
  while (s.step()) out.insert(static_cast<int>(s.i64(0)));
  return out;
}

void SweepStore::begin_run(const PlannedRun& run, const std::string& command_json, const std::string& run_dir,
                           const std::string& log_path, double start_unix, const std::string& runner_text) {
  SqliteStatement s = db_.prepare(
      "INSERT OR REPLACE INTO runs (sweep_id, plan_index, config_json, gpus, nodes, rep, status, start_unix, "
      "command_json, run_dir, log_path, note) VALUES (?,?,?,?,?,?,'running',?,?,?,?,?)");
  s.bind_all(sweep_id_, run.index, run.config_json(), run.gpus, run.nodes, run.rep, start_unix, command_json, run_dir,
             log_path, runner_text);
  s.step();  // autocommit: one transaction
}

void SweepStore::finish_run(const PlannedRun& run, const ProcessResult& result, const RunMetrics& metrics,
                            const std::string& metric_name, const std::string& trace_path) {
  SqliteStatement s = db_.prepare(
      "UPDATE runs SET status=?, exit_code=?, signal=?, start_unix=?, end_unix=?, wall_s=?, metric=?, "
      "metrics_json=?, trace_path=?, note=? WHERE sweep_id=? AND plan_index=?");
  s.bind(1, std::string(status_name(result.status)));
  s.bind(2, result.signal == 0 && result.exit_code >= 0 ? std::optional(result.exit_code) : std::nullopt);
  s.bind(3, result.signal != 0 ? std::optional(result.signal) : std::nullopt);
  s.bind(4, result.start_unix).bind(5, result.end_unix).bind(6, result.wall_s);
  auto it = metrics.values.find(metric_name);
  s.bind(7, result.status == RunStatus::kOk && it != metrics.values.end() ? std::optional(it->second) : std::nullopt);
  nlohmann::json mj = nlohmann::json::object();
  for (const auto& [k, v] : metrics.values) mj[k] = v;
  s.bind(8, mj.dump()).bind(9, unless_empty(trace_path));
  std::string note = result.note;
  for (const auto& n : metrics.notes) note += (note.empty() ? "" : "; ") + n;
  s.bind(10, unless_empty(note)).bind(11, sweep_id_).bind(12, int64_t{run.index});
  s.step();
}

void SweepStore::set_slurm_job(int plan_index, const StoredRun::SlurmJob& job, double submit_unix) {
  SqliteStatement s = db_.prepare(
      "INSERT INTO slurm_jobs (sweep_id, plan_index, job_id, state, exit_code, nodelist, gpus, submit_unix, "
      "queued_s) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT (sweep_id, plan_index) DO UPDATE SET job_id=excluded.job_id, "
      "state=excluded.state, exit_code=excluded.exit_code, nodelist=excluded.nodelist, gpus=excluded.gpus, "
      "submit_unix=coalesce(excluded.submit_unix, submit_unix), queued_s=excluded.queued_s");
  s.bind_all(sweep_id_, plan_index, job.job_id, job.state, job.exit_code, unless_empty(job.nodelist), job.gpus,
             submit_unix > 0 ? std::optional(submit_unix) : std::nullopt, job.queued_s);
  s.step();
}

void SweepStore::forget_slurm_job(int plan_index) {
  SqliteStatement s = db_.prepare("DELETE FROM slurm_jobs WHERE sweep_id=? AND plan_index=?");
  s.bind_all(sweep_id_, plan_index);
  s.step();
}

std::map<int, std::string> SweepStore::submitted_jobs() {
  std::map<int, std::string> out;
  SqliteStatement s = db_.prepare(
      "SELECT j.plan_index, j.job_id FROM slurm_jobs j JOIN runs r ON r.sweep_id = j.sweep_id AND r.plan_index = "
      "j.plan_index WHERE j.sweep_id = ? AND r.status = 'running'");
  s.bind(1, sweep_id_);
  while (s.step()) out[static_cast<int>(s.i64(0))] = s.text(1);
  return out;
}

StoredSweep SweepStore::read() {
  StoredSweep out;
  {
    SqliteStatement s =
        db_.prepare("SELECT id, created, spec_json, metric, higher_is_better, planned_runs FROM sweeps WHERE id = ?");
    s.bind(1, sweep_id_);
    s.step();
    out.id = s.i64(0);
    out.created = s.text(1);
    out.spec_json = s.text(2);
    out.metric = s.text(3);
    out.higher_is_better = s.i64(4) != 0;
    out.planned_runs = static_cast<int>(s.i64(5));
  }
  SqliteStatement s = db_.prepare(
      "SELECT id, plan_index, config_json, gpus, nodes, rep, status, exit_code, signal, start_unix, end_unix, "
      "wall_s, metrics_json, log_path, trace_path, run_dir, note FROM runs WHERE sweep_id = ? ORDER BY plan_index");
  s.bind(1, sweep_id_);
  while (s.step()) {
    StoredRun r;
    r.id = s.i64(0);
    r.plan_index = static_cast<int>(s.i64(1));
    r.config_json = s.text(2);
    auto cj = nlohmann::ordered_json::parse(r.config_json, nullptr, false);
    if (!cj.is_object()) fail("{}: run {} has a damaged configuration", db_.file(), r.plan_index);
    for (const auto& [k, v] : cj.items()) r.config.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    r.gpus = static_cast<int>(s.i64(3));
    r.nodes = static_cast<int>(s.i64(4));
    r.rep = static_cast<int>(s.i64(5));
    auto st = parse_status(s.text(6));
    if (!st) fail("{}: run {} has an unknown status '{}'", db_.file(), r.plan_index, s.text(6));
    r.status = *st;
    if (!s.is_null(7)) r.exit_code = static_cast<int>(s.i64(7));
    if (!s.is_null(8)) r.signal = static_cast<int>(s.i64(8));
    r.start_unix = s.f64(9);
    r.end_unix = s.f64(10);
    r.wall_s = s.f64(11);
    auto mj = nlohmann::json::parse(s.text(12), nullptr, false);
    if (mj.is_object())
      for (const auto& [k, v] : mj.items())
        if (v.is_number()) r.metrics[k] = v.get<double>();
    r.log_path = s.text(13);
    r.trace_path = s.text(14);
    r.run_dir = s.text(15);
    r.note = s.text(16);
    out.runs.push_back(std::move(r));
  }
  if (!has_table(db_, "slurm_jobs")) return out;
  std::map<int, StoredRun*> by_index;
  for (auto& r : out.runs) by_index[r.plan_index] = &r;
  SqliteStatement j = db_.prepare(
      "SELECT plan_index, job_id, state, exit_code, nodelist, gpus, queued_s FROM slurm_jobs WHERE sweep_id = ?");
  j.bind(1, sweep_id_);
  while (j.step()) {
    auto it = by_index.find(static_cast<int>(j.i64(0)));
    if (it == by_index.end()) continue;
    StoredRun::SlurmJob job;
    job.job_id = j.text(1);
    job.state = j.text(2);
    if (!j.is_null(3)) job.exit_code = static_cast<int>(j.i64(3));
    job.nodelist = j.text(4);
    if (!j.is_null(5)) job.gpus = static_cast<int>(j.i64(5));
    if (!j.is_null(6)) job.queued_s = j.f64(6);
    it->second->slurm = std::move(job);
  }
  return out;
}

StoredSweep read_sweep(const std::filesystem::path& db) { return SweepStore::open_read_only(db).read(); }

void to_json(nlohmann::json& j, const StoredRun& r) {
  nlohmann::json config = nlohmann::json::object();
  for (const auto& [k, v] : r.config) config[k] = v;
  nlohmann::json slurm = nullptr;
  if (r.slurm)
    slurm = {
        {"job_id", r.slurm->job_id},     {"state", r.slurm->state},        {"exit_code", or_null(r.slurm->exit_code)},
        {"nodelist", r.slurm->nodelist}, {"gpus", or_null(r.slurm->gpus)}, {"queued_s", or_null(r.slurm->queued_s)}};
  j = json_with(SCALESCOPE_JSON_FIELDS(r, id, plan_index, gpus, nodes, rep, start_unix, end_unix, wall_s, metrics,
                                       log_path, trace_path, run_dir, note),
                {{"config", config},
                 {"status", status_name(r.status)},
                 {"exit_code", or_null(r.exit_code)},
                 {"signal", or_null(r.signal)},
                 {"slurm", slurm}});
}

void to_json(nlohmann::json& j, const StoredSweep& s) {
  j = json_with(SCALESCOPE_JSON_FIELDS(s, id, created, metric, higher_is_better, planned_runs, runs),
                {{"spec", nlohmann::json::parse(s.spec_json, nullptr, false)}});
}

}  // namespace scalescope::sweep
