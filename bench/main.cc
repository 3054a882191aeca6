// tessel-bench: replays snapshots and traces through Tessel's scheduling core.
//   tessel-bench replay --snapshot FILE [--config FILE] [--out FILE] [--table]
//   tessel-bench gang [--gangs 20] [--members 500] [--nodes 5000]
//   tessel-bench inflate --nodes NODES.csv --pods PODS.csv --policy NAME[,NAME...] --seeds 42-51 --tune 1.3 --out DIR
//   tessel-bench trace --nodes NODES.csv --pods PODS.csv --load 0.9 --policy bestfit,fgd,tessel --seeds 1-10 --out DIR
//   tessel-bench throughput --nodes N --pods M [--gpus-per-node 8] [--mix 1,1,2,4,8] [--threads T] [--json]
//   tessel-bench e2e --nodes N --pods M [--qps Q] [--compare kube-scheduler|ceiling] [--json]
//   tessel-bench backlog --nodes N --pending P [--churn R] [--seconds S] [--json]
#include "absl/synchronization/mutex.h"

#include "bench/e2e/backlog.h"
#include "bench/e2e/e2e.h"
#include "bench/gang/gang_bench.h"
#include "bench/inflate/bound.h"
#include "bench/inflate/inflate.h"
#include "bench/replay/replay.h"
#include "bench/throughput/throughput.h"
#include "bench/trace/trace.h"
#include "scheduler/cmd/flags.h"

int main(int argc, char** argv) {
  // Debian's Abseil checks every mutex acquisition for lock-order cycles unless told not to;
  // the scheduling core takes mutexes on every decision (docs/bench.md measures the cost).
  // `throughput --mutex-deadlock-detection` turns it back on for that comparison.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  using namespace tessel::bench;
  const std::vector<tessel::cmd::Command> commands = {
      {"replay", "schedule the pending pods of a cluster snapshot (kubectl get -o json)", ReplayMain},
      {"inflate", "the FGD paper's workload-inflation experiment on a GPU trace (docs/gpu.md)", [](int argc, char** argv) { return InflateMainWithBound(argc, argv, LpMostPlacedGpuMilli); }},
      {"trace", "a cluster's jobs over time: queueing delays, allocation, evictions per policy (docs/bench.md)",
       TraceMain},
      {"throughput", "decisions/s, p50/p99 decision latency and peak RSS on a synthetic GPU cluster (docs/bench.md)",
       ThroughputMain},
      {"e2e", "the live scheduler on a real apiserver, beside kube-scheduler (docs/bench.md)", E2eMain},
      {"backlog", "the live scheduler's retries and CPU while a backlog fits nowhere (docs/bench.md)", BacklogMain},
      {"gang", "time per gang decision: 20 gangs x 500 pods on 5,000 nodes (docs/gang.md)", GangBenchMain},
  };
  return tessel::cmd::RunCommand("tessel-bench", "usage: tessel-bench <command> [flags]\n", commands, argc - 1,
                                 argv + 1);
}
