// One inflation run (see run.h).
#include "bench/inflate/run.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <random>

#include "bench/sim/sim_world.h"
#include "fmt/format.h"
#include "plugins/fgd/target_workload.h"
#include "plugins/registry.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {

ProfileConfig InflateProfile(const std::string& plugin, const std::vector<fgd::TargetClass>& typical,
                             const std::string& policy_args) {
  ProfileConfig profile;
  profile.scheduler_name = "tessel";
  auto set = [&](const std::string& point, std::vector<std::string> names) {
    PluginSet s;
    for (auto& n : names) s.enabled.push_back(PluginRef{.name = n, .weight = 1});
    profile.plugins[point] = std::move(s);
  };
  const bool learns = plugin == "FGD" || plugin == "Tessel";
  set("queueSort", {"PrioritySort"});
  set("preFilter", learns ? std::vector<std::string>{"GpuShare", plugin} : std::vector<std::string>{"GpuShare"});
  // The paper's filters: CPU, memory, pod count, and the GPU filter (model, device fit).
  // (GPU first: most rejections late in a run are GPU ones, and GpuShare's are the cheapest.)
  set("filter", {"NodeAffinity", "GpuShare", "NodeResourcesFit"});
  set("preScore", {plugin});
  set("score", {plugin});
  set("preBind", {"GpuShare"});
  set("bind", {"DefaultBinder"});
  YAML::Node fit;
  fit["ignoredResources"].push_back(std::string(kNvidiaGpu));
  profile.plugin_args["NodeResourcesFit"] = fit;
  YAML::Node args(YAML::NodeType::Map);
  if (learns) args["targetWorkload"] = fgd::TargetWorkloadYaml(typical);
  if (!policy_args.empty()) {
    for (const auto& kv : YAML::Load(policy_args)) args[kv.first.as<std::string>()] = kv.second;
  }
  if (args.size() > 0) profile.plugin_args[plugin] = args;
  return profile;
}

std::vector<std::string> KnownPolicies() {
  return {"random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd", "tessel", "gpubinpack"};
}

std::string PluginForPolicy(const std::string& policy) {
  static const std::map<std::string, std::string> kPlugins = {
      {"random", "Random"},         {"dotprod", "DotProd"},       {"gpuclustering", "GpuClustering"},
      {"gpupacking", "GpuPacking"}, {"bestfit", "BestFit"},       {"fgd", "FGD"},
      {"tessel", "Tessel"},         {"gpubinpack", "GpuBinPack"}};
  auto it = kPlugins.find(policy);
  return it == kPlugins.end() ? "" : it->second;
}

absl::StatusOr<RunResult> RunOne(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                                 const std::string& policy, uint64_t seed, int64_t tune_milli,
                                 std::atomic<int64_t>* progress, const std::string& policy_args) {
  const auto start = std::chrono::steady_clock::now();
  const std::string plugin = PluginForPolicy(policy);
  if (plugin.empty()) return absl::InvalidArgumentError(StrCat("unknown policy \"", policy, "\""));
  const int64_t capacity = CapacityMilli(nodes);
  const std::vector<fgd::TargetClass> typical = TypicalPods(pods);
  const fgd::FragModel frag(typical);

  SchedulerConfig config;
  config.parallelism = 1;  // runs go in parallel instead
  ProfileConfig profile;
  try {
    profile = InflateProfile(plugin, typical, policy_args);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(StrCat("--policy-args: ", e.what()));
  }
  auto world = SimWorld::New({.config = &config, .defaults = &profile, .seed = seed, .gang_status = false});
  if (!world.ok()) return world.status();
  Scheduler& s = *(*world)->scheduler;
  Cache& cache = (*world)->cache;

  // Node names carry a seeded random "%04d-" prefix: ties fall to a random node order per seed.
  std::vector<size_t> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 name_rng(seed * 0x9E3779B97F4A7C15ull + 1);
  std::shuffle(order.begin(), order.end(), name_rng);
  std::map<std::string, size_t> node_index;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string name = fmt::format("{:04d}-{}", order[i], nodes[i].sn);
    node_index[name] = i;
    s.OnNodeAdd(MakeNode(nodes[i], name));
  }
  // Per-node fragmentation, kept up to date as pods land.
  std::vector<int64_t> node_frag(nodes.size());
  int64_t frag_total = 0;
  for (const auto& [name, i] : node_index) {
    auto info = cache.GetNodeInfo(name);
    node_frag[i] = frag.NodeFrag(fgd::NodeShape::Of(info->gpus(), info->FreeMilliCpu(),
                                                    frag.ModelId(info->gpus().inventory().product)));
    frag_total += node_frag[i];
  }

  RunResult result{.policy = policy, .seed = seed, .pods = 0, .placed = 0, .seconds = 0, .events = {}};
  const std::vector<TracePod> sequence = InflatePods(pods, capacity, tune_milli, seed);
  result.events.reserve(sequence.size());
  int64_t arrived = 0, allocated = 0;
  const std::atomic<bool> never{false};
  for (const TracePod& t : sequence) {
    Pod pod = MakePod(t, t.name);
    const std::string key = pod.Key();
    s.OnPodAdd(std::move(pod));
    s.Run(never, {.max_cycles = 1});
    arrived += t.total_gpu_milli();
    if (std::optional<std::string> node = cache.NodeOf(key)) {
      ++result.placed;
      auto info = cache.GetNodeInfo(*node);
      const size_t i = node_index.at(*node);
      frag_total -= node_frag[i];
      node_frag[i] = frag.NodeFrag(fgd::NodeShape::Of(info->gpus(), info->FreeMilliCpu(),
                                                      frag.ModelId(info->gpus().inventory().product)));
      frag_total += node_frag[i];
      allocated += t.total_gpu_milli();
    } else {
      s.OnPodDelete(key);  // no retries: a pod that fails is dropped
    }
    result.events.push_back({arrived, allocated, frag_total});
    ++result.pods;
    if (progress != nullptr) progress->fetch_add(1, std::memory_order_relaxed);
  }
  // Cross-check the running total against the cache's per-device accounting.
  int64_t accounted = 0;
  for (const auto& [name, i] : node_index) accounted += cache.GetNodeInfo(name)->gpus().total_allocated_milli();
  if (accounted != allocated) {
    return absl::InternalError(StrCat("GPU accounting drifted: devices hold ", accounted, " milli, pods ", allocated));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tessel::bench
