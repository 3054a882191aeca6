// Micro-benchmarks of the scheduling core: quantity parsing, and whole scheduling cycles on a
// synthetic GPU cluster (Filter and Score over every node). Prints figures; asserts nothing.
#include <benchmark/benchmark.h>

#include "scheduler/util/strings.h"
#include "bench/sim/sim_world.h"
#include "plugins/registry.h"
#include "scheduler/api/quantity.h"
#include "scheduler/testing/builders.h"

namespace tessel::bench {
namespace {

void BM_ParseQuantity(benchmark::State& state) {
  const char* inputs[] = {"100m", "1.5Gi", "2e3", "64", "0.25", "512Mi"};
  for (auto _ : state) {
    for (const char* q : inputs) benchmark::DoNotOptimize(ParseMilli(q));
  }
  state.SetItemsProcessed(state.iterations() * 6);
}
BENCHMARK(BM_ParseQuantity);

Node GpuNode(int i) {
  return testing::NodeBuilder(StrCat("node-", i)).Cpu(96000).Memory(int64_t{384} << 30).MaxPods(110).Gpus(8).Build();
}

Pod GpuPod(int i, int gpus) {
  Pod p;
  p.meta.name = StrCat("pod-", i);
  p.meta.namespace_ = "bench";
  p.scheduler_name = "tessel";
  p.meta.creation_timestamp = absl::FromUnixSeconds(i);
  p.requests.milli_cpu = 4000;
  p.requests.memory = int64_t{16} << 30;
  p.requests.pods = 1;
  p.requests.Set(kNvidiaGpu, gpus * 1000);
  return p;
}

// Schedules `pods` pods (1, 2, 4 or 8 GPUs) onto `nodes` nodes of 8 GPUs each.
void BM_ScheduleCluster(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int pods = nodes * 2;
  SchedulerConfig config;
  for (auto _ : state) {
    state.PauseTiming();
    auto world = SimWorld::New({.config = &config, .gang_status = false});
    SimulatedCluster& sim = (*world)->sim;
    ObjectList objects;
    for (int i = 0; i < nodes; ++i) objects.nodes.push_back(GpuNode(i));
    const int sizes[] = {1, 2, 4, 8};
    for (int i = 0; i < pods; ++i) objects.pods.push_back(GpuPod(i, sizes[i % 4]));
    sim.Load(objects);
    state.ResumeTiming();
    sim.RunUntilIdle();
  }
  state.SetItemsProcessed(state.iterations() * pods);
  state.counters["nodes"] = nodes;
}
BENCHMARK(BM_ScheduleCluster)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessel::bench
