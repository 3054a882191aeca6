// `tessel-bench trace`: a cluster's jobs replayed over time through Tessel's scheduling core,
// for several policies and seeds, reporting what users wait for (docs/bench.md).
//
//   tessel-bench trace --nodes NODES.csv --pods PODS.csv --load 0.9 --policy bestfit,fgd,tessel
//       --seeds 1-10 [--on-evict restart|resume] --out DIR
//   tessel-bench trace --events SCENARIO.json --policy tessel --out DIR
#pragma once

#include <string>

#include "bench/trace/timeline.h"
#include "scheduler/framework/config.h"

namespace tessel::bench {

// The profile a policy runs: Tessel's default profile (filters, quota, gangs, preemption) with
// the policy's plugin in place of the Tessel score plugin. Its plugins come from
// PolicyRegistry (bench/inflate/run.h), where FGD and Tessel learn the trace's typical pods.
absl::StatusOr<ProfileConfig> TraceProfile(const std::string& policy);

int TraceMain(int argc, char** argv);

}  // namespace tessel::bench
