// `tessel-bench inflate`, one run: one (policy, seed) through Tessel's scheduling core on a
// simulated cluster, recording after each pod the arrived and allocated GPU milli and the
// fragmentation under the trace's typical pods.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/inflate/leftover.h"
#include "bench/inflate/trace.h"
#include "plugins/fgd/fgd.h"
#include "scheduler/framework/config.h"
#include "scheduler/framework/registry.h"

namespace tessel::bench {

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
  Leftover leftover;  // at the 100 % point (leftover.h)
};

// Runs one (policy, seed). `progress` (may be null) is incremented once per pod.
absl::StatusOr<RunResult> RunOne(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                                 const std::string& policy, uint64_t seed, int64_t tune_milli,
                                 std::atomic<int64_t>* progress = nullptr,
                                 const std::string& policy_args = "");

// The profile of a run: the paper's filters and `plugin` as the only score plugin. It names no
// args: RunOne's registry makes the plugins with theirs.
ProfileConfig InflateProfile(const std::string& plugin);

// The in-tree plugins with the policy's plugin made from typed args: those `policy_args` gives
// (a YAML map, read as that plugin's args in a configuration), with `typical` as FGD's and
// Tessel's target workload unless `policy_args` gives one. A profile run with it must give the
// policy's plugin no args.
absl::StatusOr<Registry> PolicyRegistry(const std::string& policy, const std::vector<gpu::TargetClass>& typical,
                                        const std::string& policy_args = "");

}  // namespace tessel::bench
