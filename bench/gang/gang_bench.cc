// The gang benchmark (see gang_bench.h).
#include "bench/gang/gang_bench.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "bench/sim/sim_world.h"
#include "nlohmann/json.hpp"
#include "plugins/registry.h"
#include "scheduler/cmd/flags.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

using nlohmann::json;

// Holds binding tasks until the timer has stopped.
class DeferredExecutor final : public BindExecutor {
 public:
  void Submit(std::function<void()> task) override { tasks_.push_back(std::move(task)); }
  void RunAll() {
    std::vector<std::function<void()>> tasks;
    tasks.swap(tasks_);
    for (auto& t : tasks) t();
  }

 private:
  std::vector<std::function<void()>> tasks_;
};

struct Options {
  int gangs = 20;
  int members = 500;
  int nodes = 5000;
  int gpus_per_node = 8;
  bool json = false;
};

}  // namespace

int GangBenchMain(int argc, char** argv) {
  Options o;
  cmd::FlagSet flags("tessel-bench gang",
                     "usage: tessel-bench gang [--gangs N] [--members N] [--nodes N] [--gpus-per-node N] [--json]");
  flags.Int("--gangs", "N", &o.gangs, {.min = 1}, "gangs to place, one after another (default 20)")
      .Int("--members", "N", &o.members, {.min = 1}, "pods of each gang (default 500)")
      .Int("--nodes", "N", &o.nodes, {.min = 1}, "nodes of the cluster (default 5000)")
      .Int("--gpus-per-node", "N", &o.gpus_per_node, {.min = 1}, "GPUs of each node (default 8)")
      .Bool("--json", &o.json, "print JSON");
  cmd::ParseOrExit(flags, argc, argv);

  DeferredExecutor binder;
  SchedulerConfig config;
  auto world = SimWorld::New({.config = &config, .bind_executor = &binder});
  if (!world.ok()) {
    std::cerr << "tessel-bench gang: " << world.status().message() << "\n";
    return 1;
  }
  Scheduler& s = *(*world)->scheduler;
  SimulatedCluster& sim = (*world)->sim;

  ObjectList objects;
  for (int i = 0; i < o.nodes; ++i) {
    objects.nodes.push_back(testing::NodeBuilder(fmt::format("node-{:05d}", i))
                                .Cpu(128000)
                                .Memory(int64_t{1024} << 30)
                                .MaxPods(110)
                                .Gpus(o.gpus_per_node)
                                .CapacityIsAllocatable()
                                .Build());
  }
  const int shapes[] = {1, 2, 4};
  for (int g = 0; g < o.gangs; ++g) {
    const std::string name = fmt::format("gang-{:02d}", g);
    objects.others.push_back(json{{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                                  {"kind", "PodGroup"},
                                  {"metadata", {{"name", name}, {"namespace", "bench"}}},
                                  {"spec", {{"minMember", o.members}}}});
    const int gpus = shapes[g % 3];
    for (int m = 0; m < o.members; ++m) {
      Pod p;
      p.meta.name = fmt::format("{}-{:04d}", name, m);
      p.meta.namespace_ = "bench";
      p.meta.labels["scheduling.x-k8s.io/pod-group"] = name;
      p.meta.creation_timestamp = absl::FromUnixSeconds(1'600'000'000 + g * 10'000 + m);
      p.scheduler_name = "tessel";
      Container c;
      c.name = "worker";
      c.requests.milli_cpu = 4000;
      c.requests.memory = int64_t{16} << 30;
      c.requests.Set(kNvidiaGpu, int64_t{gpus} * 1000);
      p.containers.push_back(std::move(c));
      p.requests = *ComputePodRequests(p);
      objects.pods.push_back(std::move(p));
    }
  }
  sim.Load(objects);

  std::vector<double> ms;
  json per_gang = json::array();
  for (int g = 0; g < o.gangs; ++g) {
    const absl::Time start = absl::Now();
    if (!s.ScheduleOne()) break;
    const double took = absl::ToDoubleMilliseconds(absl::Now() - start);
    binder.RunAll();
    ms.push_back(took);
  }
  int64_t placed = 0;
  for (const auto& [key, node] : sim.placements()) placed += !node.empty();
  for (const auto& [name, status] : sim.gangs()) {
    const size_t i = per_gang.size();
    per_gang.push_back(json{{"gang", name},
                            {"phase", gang::PhaseName(status.phase)},
                            {"scheduled", status.scheduled},
                            {"message", status.message},
                            {"decision_ms", i < ms.size() ? ms[i] : 0.0}});
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double p50 = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  const double max = sorted.empty() ? 0 : sorted.back();
  double total = 0;
  for (double v : ms) total += v;
  const double mean = ms.empty() ? 0 : total / static_cast<double>(ms.size());
  if (o.json) {
    std::cout << json{{"gangs", per_gang},
                      {"nodes", o.nodes},
                      {"members_per_gang", o.members},
                      {"pods_placed", placed},
                      {"decision_ms_mean", mean},
                      {"decision_ms_p50", p50},
                      {"decision_ms_max", max}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << fmt::format("{} gangs x {} members on {} nodes ({} GPUs each); member GPUs cycle 1, 2, 4\n",
                           o.gangs, o.members, o.nodes, o.gpus_per_node);
  for (const json& g : per_gang) {
    std::cout << fmt::format("  {:<20} {:<10} {:>8.1f} ms  {}\n", g["gang"].get<std::string>(),
                             g["phase"].get<std::string>(), g["decision_ms"].get<double>(),
                             g["message"].get<std::string>());
  }
  std::cout << fmt::format("pods placed {}; time per gang decision: mean {:.1f} ms, p50 {:.1f} ms, max {:.1f} ms\n",
                           placed, mean, p50, max);
  return 0;
}

}  // namespace tessel::bench
