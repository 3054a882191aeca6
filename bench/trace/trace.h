// `tessel-bench trace`: a cluster's jobs replayed over time through Tessel's scheduling core,
// for several policies and seeds, reporting what users wait for (docs/bench.md).
//
//   tessel-bench trace --nodes NODES.csv --pods PODS.csv --load 0.9 --policy bestfit,fgd,tessel
//       --seeds 1-10 [--on-evict restart|resume] [--movable all|none|CLASSES] --out DIR
//   tessel-bench trace --nodes NODES.csv --pods PODS.csv --steady --load 0.9 --horizon 10800
//       --warmup 3600 --duration-cap 3600 --out DIR      (Poisson arrivals from the trace's mix)
//   tessel-bench trace --events SCENARIO.json --policy tessel --out DIR
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
absl::StatusOr<ProfileConfig> TraceProfile(const std::string& policy);

// The size classes (SizeClassOf) --movable names: "all" (every class but gangs), "none", or a
// comma-separated list; "gang" and unknown classes are refused.
absl::StatusOr<std::vector<std::string>> ParseMovable(const std::string& flag);

int TraceMain(int argc, char** argv);

}  // namespace tessel::bench
