// `tessel-bench trace`: a cluster's jobs replayed over time through Tessel's scheduling core,
// for several policies and seeds, reporting what users wait for (docs/bench.md).
//
//   tessel-bench trace --nodes NODES.csv --pods PODS.csv --load 0.9 --policy bestfit,fgd,tessel
//       --seeds 1-10 [--on-evict restart|resume] [--movable all|none|CLASSES] --out DIR
//   tessel-bench trace --nodes NODES.csv --pods PODS.csv --steady --load 0.9 --horizon 10800
//       --warmup 3600 --duration-cap 3600 --out DIR      (Poisson arrivals from the trace's mix)
//   tessel-bench trace --events SCENARIO.json --policy tessel --out DIR
//   tessel-bench trace --events ORG.json --policy tessel --usage-half-life 0,3600 --out DIR
//       (each policy with shares on the instant and with usage decayed over an hour)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bench/trace/timeline.h"
#include "scheduler/framework/config.h"

namespace tessel::bench {

// A policy named P-defrag is P with consolidation and reservation (docs/defrag.md): the plugins
// kDefragPlugins, Consolidation after DefaultPreemption; P-moves only consolidation, P-reserve
// only reservation. Without a suffix, a policy runs without them even if the default profile
// enables them.
struct DefragVariant {
  std::string_view suffix;
  bool consolidation = false;
  bool reservation = false;
};
inline constexpr DefragVariant kDefragVariants[] = {
    {.suffix = "-defrag", .consolidation = true, .reservation = true},
    {.suffix = "-moves", .consolidation = true},
    {.suffix = "-reserve", .reservation = true}};
inline constexpr std::string_view kDefragPlugins[] = {"Consolidation", "Reservation"};

// The policy of bench/inflate/run.h that `policy` runs ("tessel" for "tessel-defrag").
std::string BasePolicy(const std::string& policy);

// The profile a policy runs: Tessel's default profile (filters, quota, gangs, preemption) with
// the policy's plugin in place of the Tessel score plugin; with kDefragPlugins for P-defrag,
// without them otherwise. Its plugins come from PolicyRegistry (bench/inflate/run.h), where FGD
// and Tessel learn the trace's typical pods.
// `usage_half_life_seconds` > 0 sets QueueQuota's usageHalfLifeSeconds (docs/quota.md,
// "Fairness over time").
absl::StatusOr<ProfileConfig> TraceProfile(const std::string& policy, int64_t usage_half_life_seconds = 0);

// --usage-half-life: comma-separated whole seconds, each in 0..QueueQuota's largest (a year).
absl::StatusOr<std::vector<int64_t>> ParseHalfLives(const std::vector<std::string>& flag);

// The name a run of `policy` with a half-life is reported by: the policy alone when every run
// has shares on the instant, else "tessel/instant" or "tessel/hl=3600s".
std::string RunLabel(const std::string& policy, int64_t half_life_seconds, bool decay_compared);

// The size classes (SizeClassOf) --movable names: "all" (every class but gangs), "none", or a
// comma-separated list; "gang" and unknown classes are refused.
absl::StatusOr<std::vector<std::string>> ParseMovable(const std::string& flag);

int TraceMain(int argc, char** argv);

}  // namespace tessel::bench
