// `tessel-bench throughput`: how many scheduling decisions per second the core makes on a
// synthetic GPU cluster, through the very Scheduler and Framework that replay, inflate and the
// live binary run (a SimulatedCluster binds at once; the clock is virtual).
//
//   tessel-bench throughput --nodes 5000 --pods 10000 [--bound 0] [--gpus-per-node 8]
//       [--mix 1,1,1,1,2,2,4,8] [--priorities] [--waves W] [--config FILE] [--threads T]
//       [--seed S] [--reference] [--json]
//
// The cluster: N nodes of G GPUs, 96 CPUs, 384 GiB, 110 pods. Every 10th node carries a
// NoSchedule taint (tessel.io/dedicated=infer) and every 5th node the label
// tessel.io/pool=train; a tenth of the pods tolerate the taint and another tenth select the
// pool, so Filter rejects some nodes for most pods. Pods ask the GPU counts of --mix, drawn from
// --seed, with 4 CPUs and 16 GiB per GPU.
//
// With --priorities every pod names one of four PriorityClasses (bench-p1000 .. bench-p4000,
// drawn from --seed apart from the GPU counts, so the mix stays the same), and the pods arrive in
// --waves W groups (default 4 with --priorities, else 1): each wave is fed once the previous
// one is decided, so later waves find running pods of lower priority and some of them preempt.
// When the pods ask more than the cluster holds, most decisions are for pods that fit nowhere
// (the backlog); the output says how many were placed.
//
// A decision is one scheduling cycle (pop, snapshot, Filter, Score, assume, the in-memory bind),
// timed on the wall clock. Reported: decisions/s (pods decided / total cycle time), p50 and p99
// of the cycle times, peak RSS (VmHWM), the pods evicted, and a digest of the outcome (every
// pod's node or none, and the evictions in order) that --reference runs must reproduce.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/framework/decision_cache.h"
#include "scheduler/preemption/candidate_memo.h"

namespace tessel::bench {

struct ThroughputOptions {
  int nodes = 5000;
  int pods = 10000;
  // Pods already running when the bench starts (100m CPU, 256 MiB each, spread over the nodes),
  // as in a snapshot of a busy cluster; they count in the load time.
  int bound = 0;
  int gpus_per_node = 8;
  std::vector<int> mix = {1, 1, 1, 1, 2, 2, 4, 8};
  std::string config_path;  // empty: the default profile
  int threads = 1;          // Filter/Score workers (the profile's parallelism)
  uint64_t seed = 42;
  // Evaluate every node in every cycle, without the decision caches (see framework.h).
  bool reference = false;
  // Pods name PriorityClasses of four values; they arrive in `waves` groups (0: 4 with
  // priorities, else 1).
  bool priorities = false;
  int waves = 0;
  // Pending pods are spread over this many namespaces (teams), round robin; with `queues`, each
  // namespace has a Queue, all in one cohort, with an even share of the GPUs as nominal quota.
  int namespaces = 1;
  bool queues = false;
  // With `queues`: half the nodes are flavor "reserved", half "on-demand" (tessel.io/flavor), and
  // each Queue's GPUs are split between the two, reserved first.
  bool flavors = false;
};

struct ThroughputResult {
  int64_t decisions = 0;
  int64_t scheduled = 0;
  double seconds = 0;          // sum of the cycle times
  double load_seconds = 0;     // from the start of the load to the end of the first decision
  double first_decision_us = 0;
  double decisions_per_s = 0;
  double p50_us = 0;
  double p99_us = 0;
  double peak_rss_mib = 0;
  int64_t evicted = 0;
  uint64_t digest = 0;  // of the placements and evictions: equal runs decided alike
  DecisionCache::Stats cache;  // how the cycles were decided (all zero in reference mode)
  preemption::CandidateMemo::Stats dry_runs;  // preemption's dry runs: kept, made (likewise)
};

absl::StatusOr<ThroughputResult> RunThroughput(const ThroughputOptions& options);
// Peak resident set size of this process (VmHWM), in MiB; 0 when /proc is not readable.
double PeakRssMib();

int ThroughputMain(int argc, char** argv);

}  // namespace tessel::bench
