// `tessel-bench trace`, the simulator: a cluster's jobs over virtual time through Tessel's
// scheduling core. An event queue of arrivals, completions and cluster changes drives one
// Scheduler on a SimulatedCluster; a job runs for its duration once all its pods are bound, and
// a job whose pod is evicted goes back to the queue (restarted, or resumed with its progress).
//
//   TimelineInput in = ...;                       // nodes, jobs, cluster events
//   ASSIGN_OR_RETURN(TimelineResult r, SimulateTimeline(in, {.profile = p, .seed = 7}));
//   r.jobs[i].start, r.jobs[i].end;                // -1 while queued / running at the end
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/trace/entitlement.h"
#include "nlohmann/json.hpp"
#include "scheduler/api/objects.h"
#include "scheduler/framework/config.h"
#include "scheduler/framework/registry.h"
#include "scheduler/gpu/fragmentation.h"

namespace tessel::bench {

// One job: a pod, or the members of a gang, arriving together and running together.
struct TraceJob {
  std::string id;
  int64_t arrive = 0;    // virtual seconds
  int64_t duration = 1;  // run time once every pod is bound
  std::vector<Pod> pods;
  std::optional<nlohmann::json> gang_object;  // the PodGroup, applied when the job arrives
  std::string queue;  // the Queue it charges (its tessel.io/queue label, else its namespace's); "" when none
  std::string size_class;                     // see SizeClassOf
};

// A change of the cluster at a time: a node added or removed, a Queue or a Cohort applied, a
// PriorityClass.
struct ClusterChange {
  enum class Kind { kNodeAdd, kNodeRemove, kQuotaObject, kPriorityClass };
  int64_t at = 0;
  Kind kind = Kind::kNodeAdd;
  Node node;               // kNodeAdd
  std::string name;        // kNodeRemove
  nlohmann::json object;   // kQuotaObject: a Queue or a Cohort (decoded before the run)
  PriorityClass priority;  // kPriorityClass
};

struct TimelineInput {
  std::vector<Node> nodes;  // there from the start
  std::vector<ClusterChange> changes;
  std::vector<TraceJob> jobs;
  // A steady state's window (SteadyTimeline): when window_to > window_from, the window integrals
  // and the report's waits cover [window_from, window_to) and the jobs arriving in it, instead of
  // the arrival window.
  int64_t window_from = 0, window_to = 0;
};

enum class OnEvict { kRestart, kResume };

// The reason a victim of a move carries (PostFilterResult victims of the Consolidation plugin):
// the simulator counts such evictions as moves, any other as a preemption.
inline constexpr std::string_view kMoveReason = "Consolidation";
// The pod annotation that makes a running pod movable (docs/defrag.md).
inline constexpr std::string_view kMovableAnnotation = "tessel.io/movable";

struct TimelineOptions {
  const ProfileConfig* profile = nullptr;  // required
  const Registry* registry = nullptr;      // null: the in-tree plugins
  uint64_t seed = 42;
  OnEvict on_evict = OnEvict::kRestart;
  int32_t samples = 200;                  // points of the allocation and fragmentation curves, over the
                                          // run or, when it is longer, twice the arrival window
  const gpu::FragModel* frag = nullptr;   // null: no fragmentation curve
  std::atomic<int64_t>* progress = nullptr;  // incremented per event handled
};

struct JobOutcome {
  std::string id;
  std::string size_class;
  std::string queue;
  int32_t priority = 0;
  int64_t gpu_milli = 0;   // physical GPU milli the job holds while it runs
  int64_t arrive = 0;
  int64_t duration = 0;
  int64_t start = -1;      // first time all its pods were bound; -1 if never
  int64_t end = -1;        // completion; -1 if it did not complete
  int32_t evictions = 0;   // times it was interrupted
  // Its pods evicted, whether it ran or not (a pod bound and evicted within one instant, before
  // the job started, counts here only): the run's `evictions`, by job.
  int32_t pods_evicted = 0;
  int32_t moves = 0;       // of those, by a move (a victim of reason kMoveReason)
  int64_t lost_gpu_milli_seconds = 0;  // work thrown away by restarts
  int64_t lost_to_moves_gpu_milli_seconds = 0;  // of that, by moves
};

// Where a queue or cohort stands at a sample, in GPU milli: what its running jobs hold, what its
// jobs hold or wait for (demand), and its entitlement (entitlement.h).
struct ShareSample {
  int64_t usage_milli = 0;
  int64_t demand_milli = 0;
  int64_t entitlement_milli = 0;
  int64_t smallest_waiting_milli = 0;  // the smallest request of its waiting jobs (0: none waits)
  // A queue's smallest waiting job fits within its entitlement and in room the others owe it
  // (owed_room.h): a wait that is the scheduler's, not the jobs' size against the yardstick.
  bool room_owed = false;
};

// A point of the curves, taken as virtual time reaches `at`, before the events at `at`.
struct Sample {
  int64_t at = 0;
  int64_t allocated_milli = 0;  // GPU milli the cache holds (independent of the job bookkeeping)
  int64_t frag_milli = 0;       // FGD's fragmentation measure, milli-GPU
  int64_t evictions = 0;        // so far
  // Every queue and cohort applied so far, by name (empty when the input has no Queues).
  std::map<std::string, ShareSample> shares;
};

struct TimelineResult {
  std::vector<JobOutcome> jobs;
  std::vector<Sample> samples;
  int64_t capacity_milli = 0;
  int64_t first_arrival = 0;
  int64_t last_arrival = 0;
  int64_t ended_at = 0;                      // when the last event was handled
  int64_t makespan = 0;                      // last completion - first arrival
  int64_t allocated_milli_seconds = 0;       // integral of the allocation, job bookkeeping
  // The same integral over the arrival window [first_arrival, last_arrival], while load is
  // offered: the figure to compare policies by when a few long jobs outlast the arrivals.
  int64_t window_allocated_milli_seconds = 0;
  // The window those integrals cover: [first_arrival, last_arrival], or the input's steady window.
  int64_t window_from = 0, window_to = 0;
  bool steady = false;  // the input set a steady window
  int64_t peak_allocated_milli = 0;
  int64_t evictions = 0;  // pods evicted: preemptions, moves and gang rollbacks
  int64_t moves = 0;      // of those, moves
  // The same by the reason the preemption gave ("reclaim", "fair-share", "priority", "Consolidation";
  // "other": a gang rolled back).
  std::map<std::string, int64_t> evictions_by_reason;
  int64_t lost_gpu_milli_seconds = 0;
  int64_t lost_to_moves_gpu_milli_seconds = 0;
  int64_t events = 0;
  double wall_seconds = 0;
  // The quota tree at the end (the Queues and Cohorts applied), for the share report.
  std::vector<QuotaTreeNode> quota_tree;
};

absl::StatusOr<TimelineResult> SimulateTimeline(const TimelineInput& input, const TimelineOptions& options);

// "cpu", "fractional", "1", "2-4", "whole-node" (a pod asking as many GPUs as the largest node
// has), "gang" (several pods).
std::string SizeClassOf(const TraceJob& job, int64_t largest_node_gpus);

// Annotates the pods of the jobs whose size class is in `classes` kMovableAnnotation: "true"
// (gangs never: a move would restart the whole gang). Returns how many jobs it marked.
int64_t MarkMovable(TimelineInput& input, const std::vector<std::string>& classes);

}  // namespace tessel::bench
