// `tessel-bench trace`, inputs: the openb CSV files with their times, or a JSON event list, made
// into the simulator's nodes, jobs and cluster changes (timeline.h).
//
// The JSON event list (every time in seconds; objects are Kubernetes objects as kubectl prints
// them):
//   {"nodes": [Node...], "priorityClasses": [PriorityClass...], "queues": [Queue...],
//    "cohorts": [Cohort...],
//    "events": [
//      {"at": 0,   "pod": {Pod}, "duration": 600},
//      {"at": 60,  "podGroup": {PodGroup}, "pods": [{Pod}...], "duration": 3600},
//      {"at": 120, "nodeAdd": {Node}},  {"at": 900, "nodeRemove": "gpu-3"},
//      {"at": 300, "queue": {Queue}},   {"at": 300, "cohort": {Cohort}}]}
// Queues and Cohorts (tessel.io/v1alpha1, docs/quota.md) are decoded when the list is read, and a
// bad one is refused naming it and the field. A job charges the Queue its tessel.io/queue label
// names, else the one that lists its namespace (the first in the list), as TraceJob::queue.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/inflate/trace.h"
#include "bench/trace/timeline.h"

namespace tessel::bench {

struct OpenbOptions {
  // Inter-arrival times are divided by this (1: as recorded).
  double time_scale = 1;
  // If > 0, time_scale is chosen so that the GPU work offered is this fraction of the cluster's
  // capacity over the arrival window: the work that would fall within the window if every pod
  // ran from its arrival (1.0: exactly full on average; work past the window is not counted).
  // Compressing the arrivals cannot offer more than the pods' requests fill, so a load beyond
  // what `repeat` passes reach is refused, naming the most they offer.
  double load = 0;
  // The pod list arrives this many times, one pass after another (copies named "-c<k>").
  int32_t repeat = 1;
  uint64_t seed = 42;  // node name prefixes: ties fall to a seeded node order, as in inflate
};

struct OpenbTrace {
  TimelineInput input;
  double time_scale = 1;
  double offered_load = 0;  // what the chosen scale gives
  int64_t skipped = 0;  // pods that never ran in the trace (no scheduled_time)
};

// Each pod arrives at creation_time (relative to the first) and runs for deletion_time -
// scheduled_time (to the trace's last time if it never ended) once bound.
absl::StatusOr<OpenbTrace> OpenbTimeline(const std::vector<TraceNode>& nodes,
                                         const std::vector<TracePod>& pods, const OpenbOptions& options);

// A steady state drawn from a trace's mix (docs/bench.md, "A steady state"): jobs arrive as a
// Poisson process of rate lambda over [0, horizon), each a uniform draw (with replacement) from
// the pods that ran in the trace, keeping its size, GPU model, CPU and memory, and its duration
// capped at duration_cap. Offered load rho = lambda * E[gpu_milli * duration] / capacity_milli:
// the mean fraction of the cluster's GPUs that jobs would hold if every job started on arrival.
// The report's window is [warmup, horizon): the start-up transient is left out.
struct SteadyOptions {
  double load = 0.9;
  int64_t horizon = 6 * 3600;     // seconds of arrivals
  int64_t warmup = 2 * 3600;      // seconds excluded from the window
  int64_t duration_cap = 3600;    // seconds; longer trace durations are cut to this
  uint64_t seed = 42;             // node order (as OpenbOptions) and the arrival stream
};

struct SteadyTrace {
  TimelineInput input;
  double rate_per_s = 0;          // lambda
  double mean_duration_s = 0;     // over the mix, capped
  int64_t capped = 0;             // trace pods whose duration was capped
};

absl::StatusOr<SteadyTrace> SteadyTimeline(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                                           const SteadyOptions& options);

// The JSON event list above; errors name the event and the field.
absl::StatusOr<TimelineInput> ParseEventList(const nlohmann::json& doc);

}  // namespace tessel::bench
