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
#include "bench/inflate/aggregate.h"
#include "bench/inflate/run.h"
#include "bench/inflate/trace.h"

namespace tessel::bench {

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

int InflateMain(int argc, char** argv);

// The same with an offline reference: `bound` gives, for the nodes and the pods arrived at 100 %,
// an upper bound on the GPU milli any packing places (bound.h); the report prints the least
// unallocated % it allows beside the policies. tessel-bench passes the LP bound; null: none.
using PlacedBoundFn = absl::StatusOr<double> (*)(const std::vector<TraceNode>&, const std::vector<TracePod>&);
int InflateMainWithBound(int argc, char** argv, PlacedBoundFn bound);

// "42-51" or "1,5,9-10" (the bench's --seeds flag).
absl::StatusOr<std::vector<uint64_t>> ParseSeeds(std::string_view text);

}  // namespace tessel::bench
