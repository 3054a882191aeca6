// tessel-bench gang: how long one gang decision takes at scale. Builds an in-memory cluster of
// GPU nodes, submits gangs of identical members (PodGroups with minMember = size), and times
// each gang's scheduling cycle (plan, assume and reserve of every member; the binds run after
// the timer stops, as the live binder pool would run them off the scheduling thread).
//
//   tessel-bench gang [--gangs 20] [--members 500] [--nodes 5000] [--gpus-per-node 8] [--json]
#pragma once

namespace tessel::bench {

int GangBenchMain(int argc, char** argv);

}  // namespace tessel::bench
