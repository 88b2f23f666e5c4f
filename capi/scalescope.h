/* libscalescope: a C ABI over the run pipeline (load, analyze, advise, diff,
 * sweep/scaling, mlperf, report), for the Python package (python/scalescope,
 * ctypes) and any other language with a C FFI. docs/python.md documents it.
 *
 *   ss_run* run = ss_open("run.ssrun");             // NULL: ss_last_error()
 *   ss_column cols[32];
 *   int n = ss_rank_table(run, 0, "kernels", cols, 32);
 *   char* json = ss_analyze_json(run, NULL, NULL, NULL, NULL);   // = analyze --json
 *   ss_free(json);
 *   ss_close(run);
 *
 * Rules: no function throws or aborts on bad input. A failing call returns
 * NULL or -1 and leaves a one-line message (the CLI's, without
 * "scalescope: error: ") for ss_last_error() on the calling thread. Strings
 * returned as char* are UTF-8 JSON or text owned by the caller: free them with
 * ss_free(). Every JSON object returned is in the CLI's envelope:
 * {"schema_version", "command", ...the keys named below}. Column memory belongs to the run: valid until ss_close().
 * Calls on one run from several threads are safe (its traces are read-only
 * after ss_open; the analysis it keeps is swapped under a lock); ss_close
 * must come after all of them. */
#ifndef SCALESCOPE_CAPI_H
#define SCALESCOPE_CAPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SS_API __attribute__((visibility("default")))

/* Bumped when a signature or a struct below changes (the Python package checks it). */
#define SS_ABI_VERSION 1

typedef struct ss_run ss_run;

/* Element types of a column. */
enum ss_dtype { SS_I64 = 1, SS_I32 = 2, SS_U32 = 3, SS_U64 = 4, SS_U8 = 5, SS_F64 = 6 };
/* What a column's integers mean. */
enum ss_column_kind {
  SS_PLAIN = 0,  /* numbers (ns for times and durations, bytes for sizes) */
  SS_STRING = 1, /* ids into the rank's string table (ss_rank_strings) */
  SS_ENUM = 2,   /* enum values; `categories` names them, '\n'-separated, value = position */
  SS_BOOL = 3    /* 0 or 1 */
};

typedef struct ss_column {
  const char* name;       /* static storage */
  const void* data;       /* the trace's own column memory; NULL when length is 0 */
  int64_t length;         /* elements */
  int32_t dtype;          /* enum ss_dtype */
  int32_t kind;           /* enum ss_column_kind */
  const char* categories; /* SS_ENUM only, static storage; NULL otherwise */
} ss_column;

SS_API int ss_abi_version(void);
/* "0.1.0 (git describe)", static storage. */
SS_API const char* ss_version(void);
/* The last error of this thread ("" when none); valid until the next call on it. */
SS_API const char* ss_last_error(void);
SS_API void ss_free(char* text);

/* Opens what `scalescope analyze` accepts: a .sstrace file, a .ssrun run
 * directory, a Kineto .json/.json.gz or a folder of them. Ranks are in the
 * order analyze reads them (file order). NULL on error. */
SS_API ss_run* ss_open(const char* path);
SS_API void ss_close(ss_run* run);
SS_API int ss_rank_count(const ss_run* run);
/* Command "run info": {"input", "files":[...], "import_reports":[...], "ranks":[{"file", "metadata",
 * "problems":{name: count}, "event_counts":{table: rows}}]}. NULL on error. */
SS_API char* ss_run_info_json(ss_run* run);
/* Names of the tables ss_rank_table serves, '\n'-separated, static storage. */
SS_API const char* ss_table_names(void);
/* Fills up to `capacity` column descriptions of one table of one rank and
 * returns how many the table has (call again with more room when larger), or
 * -1 on error (unknown table, rank out of range). */
SS_API int ss_rank_table(ss_run* run, int rank, const char* table, ss_column* out, int capacity);
/* The rank's string table as one buffer, then the kernels' short names (the
 * ids of the kernels table's short_name column): string i is blob[offsets[i], offsets[i+1]).
 * *count strings, offsets has *count + 1 entries; both owned by the run. */
SS_API int ss_rank_strings(ss_run* run, int rank, const char** blob, const int64_t** offsets, int64_t* count);

/* The analysis and findings as `scalescope analyze --json` prints them
 * ({"input", "analysis", "findings"}), from the same code. Any argument but
 * run may be NULL: window ("10%:90%", "it5:it50", "2000000:9000000"),
 * iteration_range (an NVTX range name), classes_path (a rules file),
 * classes_text (the same rules as text; not with classes_path).
 * The run keeps the analysis of the last request: ss_analyze_json,
 * ss_analyze_tables_json and ss_diff_json asked for the same window,
 * iteration range and rules (a file's content) take it instead of analysing
 * the traces again, unless a file the analysis reads beside the traces (in
 * a run directory: Python stacks and records, hang and flight-recorder
 * dumps) was added or changed since. It holds that analysis until the next
 * request or ss_close. */
SS_API char* ss_analyze_json(ss_run* run, const char* window, const char* iteration_range, const char* classes_path,
                             const char* classes_text);
/* `scalescope analyze --format json` of an open run (command "analyze"):
 * {"tables": [{"id", "title", "columns", "rows", "notes"}]}, every table
 * `analyze` prints with all its rows. options_json: {"window",
 * "iteration_range", "classes_path", "classes_text", "top" (kernels in the
 * top-kernel tables, 1..1000, default 10)}; any may be missing. */
SS_API char* ss_analyze_tables_json(ss_run* run, const char* options_json);
/* `scalescope stats --format json` of an open run (command "stats"):
 * {"input", "scopes": [{"label", "rank", "stats": {"api", "kernels",
 * "memory_time", "memory_size", "nvtx", "nccl", "problems"}}], "left_out"},
 * one scope per rank, then "all ranks". options_json: {"rank": N (only that
 * rank), "reports": ["kernels", ...] (stats' --report names)}; either may be missing. */
SS_API char* ss_stats_json(ss_run* run, const char* options_json);
/* `scalescope diff a b --json` of two open runs; options_json: {"window",
 * "iteration_range", "classes_path", "top"} (any may be missing). */
SS_API char* ss_diff_json(ss_run* a, ss_run* b, const char* options_json);
/* A sweep database, as `scalescope scaling --format json` (command
 * "scaling"): {"sweep": {path, id, created, spec, metric, higher_is_better,
 * planned_runs, runs:[...]}, "scaling": the typed study}. options_json: {"metric", "higher_is_better", "ref",
 * "threshold", "price_per_gpu_hour", "predict":[N...], "compare":"KEY=A,B",
 * "weak", "samples_per_gpu_step"}; "scaling" is null with "scaling_error"
 * when the sweep has no measured metric. */
SS_API char* ss_sweep_json(const char* db, const char* options_json);
/* MLPerf: command "ingest" (args {"dirs":[...], "threads", "output"}; output,
 * the runs CSV, is replaced when it exists but never an input tree or a file
 * inside one, as `mlperf ingest -o`),
 * "scores" or "analyze" (args {"runs_csv" (missing: the embedded v4.1 table),
 * "benchmark", "accelerator", "ref", "threshold"}). Command "mlperf ingest":
 * {"runs": [one object per run, keyed as the runs CSV's columns], "scores",
 * "logs", "bytes", "folders", "mllog_lines", "malformed_lines",
 * "overlong_lines", "ignored_files", "notes"}; "mlperf scores": {"scores":
 * [{submitter, system, benchmark, folder, division, accelerator,
 * accelerators, runs, converged, required, scaling_factor, minutes,
 * unscaled_minutes, reason}]}; "mlperf analyze": {"scaling": {"groups": [{benchmark, division, title,
 * accelerator, systems: [...], reference, ref_chosen, curve, curve_systems}],
 * "left_out"}}, the typed result. "predict" (args as "analyze" without ref
 * and threshold, and "predict": [N...], "fit_up_to", "planned_batch":
 * "N:B,...", "level"), command "mlperf analyze": {"predictions": [{curve:
 * {name, benchmark, accelerator, division, sizes}, fitted, fit: {model, ok,
 * ..., predictions: [{gpus, time (minutes), low, high, ...}]}, measured: [the
 * curve's size at each prediction or null]}]}. "validate" (args "runs_csv",
 * "benchmark", "accelerator", "level"; the embedded calibration), command
 * "mlperf validate": {"validation": {level, curves, buckets, per_curve,
 * per_group, tau_estimates, cases}, "calibration", "fit_rounds",
 * "test_rounds"}. Each as the CLI's --format json. */
SS_API char* ss_mlperf_json(const char* command, const char* args_json);
/* `scalescope report INPUT... -o output`: inputs_json is a JSON array of
 * paths; options_json {"title", "threshold", "iteration_range"}. Returns
 * {"highlights": [lines]} (command "report"), NULL on error. As the CLI, an older page is
 * replaced but an input never is: NULL, before anything is read, when output
 * is an input (through links too) or lies inside an input folder. Paths in
 * JSON arguments holding a NUL ("\u0000") are refused everywhere. */
SS_API char* ss_report(const char* inputs_json, const char* output, const char* options_json);

#ifdef __cplusplus
}
#endif

#endif /* SCALESCOPE_CAPI_H */
