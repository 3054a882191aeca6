// `tessel-bench trace`, fairness over time: how far each queue's and cohort's GPUs stay from its
// entitlement (entitlement.h) while it has demand, from the samples of a run.
//
//   ShareStats s = ShareStatsOf(run, "team-a");
//   s.longest_off_s;   // the longest stretch more than 10 % away from its entitlement
//
// Every figure is read at the samples (evenly spaced: a sample stands for the time to the next),
// so times are accurate to the sampling step (ShareStats::step_s; --samples sets it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/trace/report.h"
#include "nlohmann/json.hpp"

namespace tessel::bench {

struct ShareStats {
  std::string name;
  bool queue = false;
  int32_t depth = 0;        // 0 for a root
  int64_t step_s = 0;       // the sampling step
  int64_t demand_s = 0;     // time with demand
  // Time-weighted over the time with demand: mean |usage - entitlement| (GPU milli) and the
  // same over the mean entitlement (per mille).
  int64_t mean_abs_dev_milli = 0;
  int64_t mean_abs_dev_per_mille = 0;
  int64_t mean_usage_milli = 0, mean_entitlement_milli = 0;
  // The longest stretch with demand in which usage is more than 10 % of the entitlement away
  // from it (either way), and in which it is more than 10 % below it (owed).
  int64_t longest_off_s = 0;
  int64_t longest_below_s = 0;
  // The longest stretch in which one of its waiting jobs would have run within its entitlement
  // (held + the smallest waiting request <= entitled): owed by the scheduler, where a stretch
  // below may only be the jobs' size against the entitlement (12 held of 13.4 entitled, with
  // jobs of 2 GPUs or more waiting).
  int64_t longest_owed_s = 0;
  // The longest stretch in which, besides, room for that job was owed to it (ShareSample::
  // room_owed: free GPUs and pods whose subtrees stay at or above their entitlement without
  // them): the scheduler's wait, with the other teams' jobs' sizes taken into account. 0 for a
  // cohort.
  int64_t longest_room_owed_s = 0;
  // The first arrival of one of its jobs (seconds from the run's first arrival), and how long it
  // took from there to the first sample at which it held at least 90 % of its entitlement (or,
  // to the sample's resolution, as soon as it arrived); -1: never.
  int64_t first_demand_s = -1;
  int64_t time_to_share_s = -1;
  int64_t evictions = 0;    // its pods evicted (a cohort: the queues' below it)
};

// Every queue and cohort of the run's quota tree, queues first, each group by name.
std::vector<ShareStats> ShareStatsOf(const TimelineResult& run);

// {"<name>": {"kind", "depth", "step_s", "mean_abs_dev_gpus", "mean_abs_dev_pct", "mean_gpus",
// "mean_entitled_gpus", "longest_off_10pct_s", "longest_below_10pct_s",
// "longest_waiting_job_fits_s", "longest_room_owed_s", "first_demand_s",
// "time_to_share_s", "evictions"}}: over the seeds, the means' mean, the longest stretches' and
// times' most (-1 if some seed never got there), the evictions' sum. Empty without a quota tree.
nlohmann::json SummarizeShares(const PolicyRuns& runs);

// shares.csv: policy, seed, at, name, kind, usage, demand, entitlement and the smallest waiting
// request (GPU milli), and room_owed (1 or 0), one row per queue or cohort and sample.
std::string SharesCsv(const std::vector<PolicyRuns>& all);

// Usage (solid) against entitlement (dashed, drawn while there is demand) over time, in GPUs: per
// policy (its first seed), one plot for the queues and one per depth of cohorts.
std::vector<TracePlot> SharePlots(const std::vector<PolicyRuns>& all);

}  // namespace tessel::bench
