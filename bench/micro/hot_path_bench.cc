// Micro-benchmarks of the scheduling core's hot paths, one plugin or step at a time: every Filter
// of the default profile, every GPU policy's Score, the snapshot refresh after one change, and
// the decision cache against a full evaluation. Prints figures; asserts nothing.
#include <benchmark/benchmark.h>

#include <random>

#include "plugins/registry.h"
#include "scheduler/framework/framework.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/state/cache.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

// A Handle over one snapshot, for plugins built outside a Scheduler.
class BenchHandle final : public Handle {
 public:
  const Snapshot& snapshot() const override { return snapshot_; }
  const Clock& clock() const override { return clock_; }
  ClusterApi* api() const override { return nullptr; }
  uint64_t seed() const override { return 42; }
  std::optional<int32_t> PriorityClassValue(std::string_view) const override { return std::nullopt; }

  ManualClock clock_;
  Snapshot snapshot_;
};

Node BenchNode(int i) {
  const std::string name = fmt::format("node-{:05d}", i);
  testing::NodeBuilder n(name);
  n.Label("kubernetes.io/hostname", name).GpuCount(8).GpuProduct("A100").Cpu(96000).Memory(int64_t{384} << 30).MaxPods(110).Gpus(8);
  if (i % 10 == 0) n.Taint("dedicated", "infer");
  return n.Build();
}

Pod BenchPod(int i, int gpus, const std::string& node = "") {
  Pod p;
  p.meta.name = StrCat("pod-", i);
  p.meta.namespace_ = "bench";
  p.meta.uid = StrCat("uid-", i);
  p.scheduler_name = "tessel";
  p.node_name = node;
  p.requests.milli_cpu = 4000 * gpus;
  p.requests.memory = (int64_t{16} << 30) * gpus;
  p.requests.pods = 1;
  p.requests.Set(kNvidiaGpu, gpus * 1000);
  return p;
}

// A cache of `nodes` nodes, each holding a few pods of 1 to 4 GPUs (seeded), so nodes differ.
void FillCache(Cache& cache, int nodes) {
  std::mt19937_64 rng(7);
  int pod = 0;
  for (int i = 0; i < nodes; ++i) {
    cache.AddOrUpdateNode(BenchNode(i));
    int free = 8;
    for (int k = static_cast<int>(rng() % 4); k > 0; --k) {
      const int g = 1 << (rng() % 3);
      if (g > free) break;
      free -= g;
      cache.AddOrUpdatePod(BenchPod(pod++, g, fmt::format("node-{:05d}", i)));
    }
  }
}

// The default profile, or the default profile with `policy` as its GPU policy.
ProfileConfig ProfileWith(const std::string& policy) {
  ProfileConfig profile = ResolveProfile(DefaultProfile(), DefaultProfile());
  if (policy == "Tessel") return profile;
  for (const char* point : {"preFilter", "preScore", "score"}) {
    auto& enabled = profile.plugins[point].enabled;
    for (auto it = enabled.begin(); it != enabled.end(); ++it) {
      if (it->name != "Tessel") continue;
      if (std::string_view(point) == "preFilter" && policy != "FGD") {
        enabled.erase(it);
      } else {
        it->name = policy;
      }
      break;
    }
  }
  return profile;
}

// One framework over a snapshot of `nodes` nodes, with a pod of `gpus` GPUs past PreFilter.
struct Fixture {
  Fixture(int nodes, const std::string& policy, bool reference = false) : cache(&handle.clock_) {
    FillCache(cache, nodes);
    cache.UpdateSnapshot(handle.snapshot_);
    auto made = Framework::New(registry, ProfileWith(policy), handle,
                               {.parallelism = 1, .reference = reference});
    if (!made.ok()) std::abort();
    fw = *std::move(made);
  }
  void Start(const Pod& p) {
    state = CycleState();
    (void)fw->RunPreFilter(state, p);
  }
  Registry registry = InTreeRegistry();
  BenchHandle handle;
  Cache cache;
  std::unique_ptr<Framework> fw;
  CycleState state;
};

const std::vector<std::string> kFilters = {"NodeUnschedulable", "NodeName",         "TaintToleration",
                                           "NodeAffinity",      "NodeResourcesFit", "GpuShare"};
const std::vector<std::string> kPolicies = {"Tessel",     "FGD",           "BestFit",    "DotProd",
                                            "GpuBinPack", "GpuClustering", "GpuPacking", "Random"};

// One Filter plugin over 1,000 nodes (items: node evaluations).
void BM_Filter(benchmark::State& state) {
  const std::string& name = kFilters[state.range(0)];
  Fixture f(1000, "Tessel");
  const Pod pod = BenchPod(1'000'000, 2);
  f.Start(pod);
  const auto* plugin = dynamic_cast<const FilterPlugin*>(f.fw->FindPlugin(name));
  const auto& nodes = f.handle.snapshot_.nodes();
  for (auto _ : state) {
    for (const NodeInfo* n : nodes) benchmark::DoNotOptimize(plugin->Filter(f.state, pod, *n));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(nodes.size()));
  state.SetLabel(name);
}
BENCHMARK(BM_Filter)->DenseRange(0, 5);

// One GPU policy's Score over 1,000 nodes (items: node evaluations).
void BM_Score(benchmark::State& state) {
  const std::string& name = kPolicies[state.range(0)];
  Fixture f(1000, name);
  const Pod pod = BenchPod(1'000'000, 2);
  f.Start(pod);
  const auto& nodes = f.handle.snapshot_.nodes();
  std::vector<const NodeInfo*> feasible(nodes.begin(), nodes.end());
  auto* pre = dynamic_cast<PreScorePlugin*>(f.fw->FindPlugin(name));
  (void)pre->PreScore(f.state, pod, feasible);
  const auto* plugin = dynamic_cast<const ScorePlugin*>(f.fw->FindPlugin(name));
  for (auto _ : state) {
    for (const NodeInfo* n : nodes) benchmark::DoNotOptimize(plugin->Score(f.state, pod, *n));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(nodes.size()));
  state.SetLabel(name);
}
BENCHMARK(BM_Score)->DenseRange(0, 7);

// Cache::UpdateSnapshot after one pod was assumed and forgotten (one node changed), for
// 1,000 to 10,000 nodes: the cost follows the changed nodes, not the cluster.
void BM_SnapshotUpdate(benchmark::State& state) {
  ManualClock clock;
  Cache cache(&clock);
  FillCache(cache, static_cast<int>(state.range(0)));
  Snapshot snapshot;
  cache.UpdateSnapshot(snapshot);
  int i = 0;
  for (auto _ : state) {
    Pod p = BenchPod(2'000'000 + i, 1, fmt::format("node-{:05d}", i % state.range(0)));
    const std::string key = p.Key();
    (void)cache.AssumePod(std::move(p));
    cache.UpdateSnapshot(snapshot);
    (void)cache.ForgetPod(key);
    cache.UpdateSnapshot(snapshot);
    ++i;
  }
  state.SetItemsProcessed(state.iterations() * 2);
}
BENCHMARK(BM_SnapshotUpdate)->Arg(1000)->Arg(5000)->Arg(10000);

// The choice of a node for one pod after one node changed, from the decision cache (arg 0) or
// by a full evaluation of every node (arg 1), at 5,000 nodes with the default profile.
void BM_ChooseNode(benchmark::State& state) {
  const bool reference = state.range(0) == 1;
  Fixture f(5000, "Tessel", reference);
  const Pod pod = BenchPod(1'000'000, 2);
  int i = 0;
  for (auto _ : state) {
    // One node changes between decisions, as after a bind.
    Pod p = BenchPod(3'000'000 + i, 1, fmt::format("node-{:05d}", (i * 7) % 5000));
    const std::string key = p.Key();
    (void)f.cache.AssumePod(std::move(p));
    f.cache.UpdateSnapshot(f.handle.snapshot_);
    f.Start(pod);
    if (reference) {
      FilterOutcome out = f.fw->FindFeasibleNodes(f.state, pod, f.handle.snapshot_.nodes());
      (void)f.fw->RunPreScore(f.state, pod, out.feasible);
      benchmark::DoNotOptimize(f.fw->RunScore(f.state, pod, out.feasible));
    } else {
      benchmark::DoNotOptimize(f.fw->ChooseCached(f.state, pod, f.handle.snapshot_));
    }
    (void)f.cache.ForgetPod(key);
    ++i;
  }
  state.SetLabel(reference ? "full evaluation" : "decision cache");
}
BENCHMARK(BM_ChooseNode)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessel::bench
