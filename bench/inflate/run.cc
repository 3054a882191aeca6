// One inflation run (see run.h).
#include "bench/inflate/run.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <type_traits>

#include "bench/sim/sim_world.h"
#include "fmt/format.h"
#include "plugins/best_fit/best_fit.h"
#include "plugins/dot_prod/dot_prod.h"
#include "plugins/gpu_binpack/gpu_binpack.h"
#include "plugins/gpu_clustering/gpu_clustering.h"
#include "plugins/gpu_packing/gpu_packing.h"
#include "plugins/node_resources_fit/node_resources_fit.h"
#include "plugins/random/random.h"
#include "plugins/registry.h"
#include "plugins/tessel_gpu/tessel_gpu.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {

namespace {

// Replaces the factory of T in `registry` by one with args read from `yaml` (T's args in a
// configuration). FGD and Tessel get `typical` as their target workload unless `yaml` gives one.
template <typename T>
absl::Status ConfigurePolicy(Registry& registry, const YAML::Node& yaml,
                             const std::vector<gpu::TargetClass>& typical) {
  ASSIGN_OR_RETURN(ArgsOf<T> args, ParsePluginArgs<T>(yaml));
  if constexpr (std::is_base_of_v<fgd::FGDArgs, ArgsOf<T>>) {
    if (!(yaml.IsMap() && yaml["targetWorkload"])) args.workload.classes = typical;
  }
  return registry.Replace(T::kName, FactoryWith<T>(std::move(args)));
}

struct Policy {
  std::string_view plugin;
  absl::Status (*configure)(Registry&, const YAML::Node&, const std::vector<gpu::TargetClass>&);
};

const std::map<std::string, Policy, std::less<>>& Policies() {
  static const auto* policies = new std::map<std::string, Policy, std::less<>>{
      {"random", {random::Random::kName, &ConfigurePolicy<random::Random>}},
      {"dotprod", {dot_prod::DotProd::kName, &ConfigurePolicy<dot_prod::DotProd>}},
      {"gpuclustering", {gpu_clustering::GpuClustering::kName, &ConfigurePolicy<gpu_clustering::GpuClustering>}},
      {"gpupacking", {gpu_packing::GpuPacking::kName, &ConfigurePolicy<gpu_packing::GpuPacking>}},
      {"bestfit", {best_fit::BestFit::kName, &ConfigurePolicy<best_fit::BestFit>}},
      {"fgd", {fgd::FGD::kName, &ConfigurePolicy<fgd::FGD>}},
      {"tessel", {tessel_gpu::Tessel::kName, &ConfigurePolicy<tessel_gpu::Tessel>}},
      {"gpubinpack", {gpu_binpack::GpuBinPack::kName, &ConfigurePolicy<gpu_binpack::GpuBinPack>}}};
  return *policies;
}

}  // namespace

ProfileConfig InflateProfile(const std::string& plugin) {
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
  return profile;
}

absl::StatusOr<Registry> PolicyRegistry(const std::string& policy, const std::vector<gpu::TargetClass>& typical,
                                        const std::string& policy_args) {
  auto it = Policies().find(policy);
  if (it == Policies().end()) return absl::InvalidArgumentError(StrCat("unknown policy \"", policy, "\""));
  YAML::Node yaml;
  try {
    if (!policy_args.empty()) yaml = YAML::Load(policy_args);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(StrCat("--policy-args: ", e.what()));
  }
  Registry registry = InTreeRegistry();
  if (absl::Status st = it->second.configure(registry, yaml, typical); !st.ok()) {
    return absl::InvalidArgumentError(StrCat("--policy-args: ", st.message()));
  }
  return registry;
}

std::vector<std::string> KnownPolicies() {
  return {"random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd", "tessel", "gpubinpack"};
}

std::string PluginForPolicy(const std::string& policy) {
  auto it = Policies().find(policy);
  return it == Policies().end() ? "" : std::string(it->second.plugin);
}

absl::StatusOr<RunResult> RunOne(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                                 const std::string& policy, uint64_t seed, int64_t tune_milli,
                                 std::atomic<int64_t>* progress, const std::string& policy_args) {
  const auto start = std::chrono::steady_clock::now();
  const std::string plugin = PluginForPolicy(policy);
  if (plugin.empty()) return absl::InvalidArgumentError(StrCat("unknown policy \"", policy, "\""));
  const int64_t capacity = CapacityMilli(nodes);
  const std::vector<gpu::TargetClass> typical = TypicalPods(pods);
  const gpu::FragModel frag(typical);

  SchedulerConfig config;
  config.parallelism = 1;  // runs go in parallel instead
  const ProfileConfig profile = InflateProfile(plugin);
  ASSIGN_OR_RETURN(Registry registry, PolicyRegistry(policy, typical, policy_args));
  // GPUs are fitted per device by GpuShare (a fraction requests nvidia.com/gpu: 1 but holds less).
  RETURN_IF_ERROR(registry.Replace(node_resources_fit::NodeResourcesFit::kName,
                                   FactoryWith<node_resources_fit::NodeResourcesFit>(
                                       {.ignored = {std::string(kNvidiaGpu)}})));
  auto world = SimWorld::New(
      {.config = &config, .registry = &registry, .defaults = &profile, .seed = seed, .gang_status = false});
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
    node_frag[i] = frag.NodeFrag(gpu::NodeShape::Of(info->gpus(), info->FreeMilliCpu(),
                                                    frag.ModelId(info->gpus().inventory().product)));
    frag_total += node_frag[i];
  }

  RunResult result{.policy = policy, .seed = seed, .pods = 0, .placed = 0, .seconds = 0, .events = {}};
  const std::vector<TracePod> sequence = InflatePods(pods, capacity, tune_milli, seed);
  result.events.reserve(sequence.size());
  int64_t arrived = 0, allocated = 0;
  const int64_t least_gpu_pod_cpu = LeastGpuPodCpuMilli(typical);
  bool past_capacity = false;
  int64_t allocated_at_capacity = 0;
  // At the 100 % point: the free GPU of every node, by why no pod uses it.
  auto count_leftover = [&] {
    past_capacity = true;
    allocated_at_capacity = allocated;
    std::vector<int64_t> free;
    for (const auto& [name, i] : node_index) {
      auto info = cache.GetNodeInfo(name);
      free.clear();
      for (int32_t d = 0; d < info->gpus().count(); ++d) free.push_back(info->gpus().FreeMilli(d));
      result.leftover.CountNode(info->FreeMilliCpu(), free, least_gpu_pod_cpu);
    }
  };
  const std::atomic<bool> never{false};
  for (const TracePod& t : sequence) {
    if (!past_capacity && arrived + t.total_gpu_milli() > capacity) count_leftover();
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
      node_frag[i] = frag.NodeFrag(gpu::NodeShape::Of(info->gpus(), info->FreeMilliCpu(),
                                                      frag.ModelId(info->gpus().inventory().product)));
      frag_total += node_frag[i];
      allocated += t.total_gpu_milli();
    } else {
      s.OnPodDelete(key);  // no retries: a pod that fails is dropped
      if (!past_capacity) result.leftover.CountFailed(t);
    }
    result.events.push_back({arrived, allocated, frag_total});
    ++result.pods;
    if (progress != nullptr) progress->fetch_add(1, std::memory_order_relaxed);
  }
  if (!past_capacity) count_leftover();  // the whole order fits the capacity (tune below 1)
  // Cross-check the running total against the cache's per-device accounting.
  int64_t accounted = 0;
  for (const auto& [name, i] : node_index) accounted += cache.GetNodeInfo(name)->gpus().total_allocated_milli();
  if (accounted != allocated) {
    return absl::InternalError(StrCat("GPU accounting drifted: devices hold ", accounted, " milli, pods ", allocated));
  }
  if (result.leftover.free_milli() != capacity - allocated_at_capacity) {
    return absl::InternalError(StrCat("the leftover at 100 % counts ", result.leftover.free_milli(),
                                      " milli free, the capacity less the allocated is ", capacity - allocated_at_capacity));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tessel::bench
