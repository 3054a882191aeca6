// `tessel-bench trace`, what users wait for: per policy (over its seeds), queueing delay and job
// completion time percentiles overall and by size class, queue and priority, slowdown, GPU
// allocation and fragmentation over time, evictions and the GPU-hours they threw away,
// makespan; as JSON, CSV and a self-contained HTML report with SVG plots.
#pragma once

#include <string>
#include <vector>

#include "bench/trace/timeline.h"
#include "nlohmann/json.hpp"

namespace tessel::bench {

struct PolicyRuns {
  std::string policy;
  std::vector<uint64_t> seeds;
  std::vector<TimelineResult> runs;  // one per seed
};

// Nearest-rank percentile (p in 0..100) of whole numbers; -1 when empty.
int64_t Percentile(std::vector<int64_t> values, int p);

// The summary of one policy: {"policy", "jobs", "started", "queued_at_end", "delay_s": {p50, p95,
// p99}, "delay_by_class": {...}, "delay_by_queue", "delay_by_priority", "jct_s", "slowdown_milli",
// "alloc_pct" and "frag_pct" (time-weighted means over the arrival window, when load is offered,
// or over a steady state's window, whose jobs alone are then counted; over the run when every job
// arrives at once), "alloc_pct_by_seed" and "frag_pct_by_seed" (each run's own, in seed order),
// "alloc_pct_run" (over the run), "evictions" (pods), "evictions_by_reason" (TimelineResult's),
// "interruptions" (running jobs stopped by an eviction; the other evicted pods were bound and
// evicted before their job started),
// "lost_gpu_hours", "makespan_s", "wall_s"}; with Queues in the input also "shares" (each queue's
// and cohort's GPUs against its entitlement: shares.h). With `with_moves` (a run that can move pods:
// --movable or a P-defrag policy) also the evictions split into moves and preemptions (every
// other eviction, gang rollbacks included): "moves", "preemptions", "moves_per_100_jobs",
// "preemptions_per_100_jobs", "lost_gpu_hours_moves", "lost_gpu_hours_preemptions".
nlohmann::json Summarize(const PolicyRuns& runs, bool with_moves = false);

// jobs.csv (one row per job and seed; with `with_moves` also the job's moves and the work they
// threw away) and curves.csv (one row per sample).
std::string JobsCsv(const std::vector<PolicyRuns>& all, bool with_moves = false);
std::string CurvesCsv(const std::vector<PolicyRuns>& all);

// The report's plots: allocation, fragmentation and evictions over time (each policy's first
// seed), then one delay CDF per size class (all seeds), then the shares against entitlements
// (shares.h) when the input has Queues. `file` is a name without extension
// ("allocation", "delay-cdf-whole-node"); tessel-bench trace also writes each as FILE.svg.
struct TracePlot {
  std::string file;
  std::string heading;
  std::string svg;
};
std::vector<TracePlot> TracePlots(const std::vector<PolicyRuns>& all, const nlohmann::json& summaries);

// The self-contained page: the summary and per-class delay tables (and the moves and
// preemptions when the summaries have them), then every plot inline.
std::string RenderTraceReport(const std::string& title, const std::string& note,
                              const std::vector<PolicyRuns>& all, const nlohmann::json& summaries);

}  // namespace tessel::bench
