// `tessel-bench backlog`: a backlog that fits nowhere, on a real kube-apiserver (docs/bench.md).
//
//   tessel-bench backlog --nodes 5000 --pending 50000 [--churn 10] [--seconds 60] [--json]
//
// It registers N simulated nodes of 8 GPUs, fills each with eight running 1-GPU pods, creates P
// pending 2-GPU pods (none fits: a departure frees one GPU), starts tessel-scheduler (the binary
// next to tessel-bench) and reads its /metrics and /proc accounting in three windows: the first
// pass over the backlog (until every pending pod is parked as unschedulable), a quiet window,
// and a window where running pods end and are replaced on their node at --churn per second. A
// scheduler whose retries follow what changed makes (close to) no attempts in the last two.
#pragma once

namespace tessel::bench {

int BacklogMain(int argc, char** argv);

}  // namespace tessel::bench
