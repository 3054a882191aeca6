// `tessel-bench inflate`: the FGD paper's workload-inflation experiment (Weng et al., USENIX
// ATC'23), run through Tessel's own scheduling core (Scheduler, Cache, Framework and the GPU
// plugins; the policy is the profile's only score plugin).
//
//   tessel-bench inflate --nodes NODES.csv --pods PODS.csv --policy fgd,tessel
//       --seeds 42-51 --tune 1.3 --out DIR
//
// Per (policy, seed): shuffle the pods with the seed, append clones sampled with replacement
// until the GPU request would pass tune x capacity, name nodes "%04d-<sn>" with a seeded random
// prefix (ties go to the lowest name, as in the paper's simulator), schedule every pod once with
// no departures, and record after each pod the allocated and arrived GPU milli and the
// fragmentation under the trace's typical pods. Results (DIR/summary.json, DIR/curves.csv,
// DIR/report.html) average the seeds at each arrived % (0..130); docs/gpu.md has the method.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "plugins/fgd/fragmentation.h"

namespace tessel::bench {

struct TraceNode {
  std::string sn;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpus = 0;
  std::string model;
};

struct TracePod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t num_gpu = 0;
  int64_t gpu_milli = 0;  // per GPU
  std::vector<std::string> gpu_spec;  // allowed models; empty = any
  int64_t total_gpu_milli() const { return num_gpu * gpu_milli; }
};

absl::StatusOr<std::vector<TraceNode>> LoadTraceNodes(const std::string& path);
absl::StatusOr<std::vector<TracePod>> LoadTracePods(const std::string& path);
// Same, from CSV text (tests).
absl::StatusOr<std::vector<TraceNode>> ParseTraceNodes(std::string_view csv);
absl::StatusOr<std::vector<TracePod>> ParseTracePods(std::string_view csv);

// The pod order of one run: sorted by name, shuffled with `seed`, then clones appended until
// the next clone's per-GPU milli would pass tune_milli/1000 x capacity (the paper's stop rule;
// clones add their full num_gpu x gpu_milli to the running total).
std::vector<TracePod> InflatePods(const std::vector<TracePod>& pods, int64_t capacity_milli,
                                  int64_t tune_milli, uint64_t seed);

// The trace's pod classes covering 95% of pods (FGD's "typical pods").
std::vector<fgd::TargetClass> TypicalPods(const std::vector<TracePod>& pods);

// Policy names of the bench (lower case) and the plugin each one runs.
std::vector<std::string> KnownPolicies();
std::string PluginForPolicy(const std::string& policy);

// One event per pod.
struct Event {
  int64_t arrived_milli;
  int64_t allocated_milli;
  int64_t frag_scaled;  // sum of F_n x W (see fragmentation.h)
};

struct RunResult {
  std::string policy;
  uint64_t seed = 0;
  int64_t pods = 0;
  int64_t placed = 0;
  double seconds = 0;
  std::vector<Event> events;
};

struct InflateOptions {
  std::string nodes_path;
  std::string pods_path;
  std::vector<std::string> policies;
  std::vector<uint64_t> seeds;
  int64_t tune_milli = 1300;
  std::string out_dir;
  std::string reference_path;  // optional published results (summary_by_policy.csv)
  int threads = 2;
  bool progress = true;
  std::string policy_args;  // YAML map merged into the policy plugin's args
};

// Runs one (policy, seed). `progress` (may be null) is incremented once per pod.
absl::StatusOr<RunResult> RunOne(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                                 const std::string& policy, uint64_t seed, int64_t tune_milli,
                                 std::atomic<int64_t>* progress = nullptr,
                                 const std::string& policy_args = "");

// Per-policy curves at arrived = 0..130 %, averaged over runs (see docs/gpu.md).
struct Curve {
  std::vector<double> alloc_pct;        // index = arrived %, NaN where no run has data
  std::vector<double> alloc_pct_sd;
  std::vector<double> frag_amount_pct;  // of capacity
  std::vector<double> frag_rate_pct;    // of idle GPU
  int runs = 0;
};
Curve Aggregate(const std::vector<const RunResult*>& runs, int64_t capacity_milli,
                int64_t total_weight);

int InflateMain(int argc, char** argv);

}  // namespace tessel::bench
