// The differential test of the decision cache (scheduler/framework/decision_cache.h): random
// clusters and pod streams, seeded, scheduled twice by the same core, once with the cache and
// once in reference mode (every Filter and Score on every node in every cycle), for the default
// profile and every GPU policy. Every decision must be the same: the same pods scheduled, in the
// same order, to the same nodes (ties included), and the same reasons for the pods left pending.
//
// Between rounds of pods, both clusters see the same informer changes: bound pods deleted, node
// labels and taints changed, nodes cordoned, added and removed, so cached results must follow
// changes the scheduler did not make itself. Pods carry what makes plugins read beyond one node
// (pod affinity and anti-affinity, spread constraints, controllers with default spreading,
// host ports, PersistentVolumeClaims: WaitForFirstConsumer claims provisioned in some zones and
// claims bound to zonal PVs), so the fall-back to the full evaluation is exercised too.
#include <catch2/catch.hpp>

#include <random>

#include "bench/sim/sim_world.h"
#include "nlohmann/json.hpp"
#include "plugins/default_preemption/default_preemption.h"
#include "plugins/registry.h"
#include "scheduler/api/decode.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace decision_cache_test {

using nlohmann::json;

// Records every outcome in order, and hands it on to the simulated cluster (set once it exists).
class Recorder final : public SchedulingObserver {
 public:
  void PodScheduled(const Pod& pod, const std::string& node) override {
    log.push_back(StrCat(pod.Key(), " -> ", node));
    sim_->PodScheduled(pod, node);
  }
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override {
    log.push_back(StrCat(pod.Key(), " x ", message));
    ++unschedulable;
    sim_->PodUnschedulable(pod, kind, message);
  }
  void PodsPreempted(const Pod& preemptor, const std::string& node,
                     const std::vector<PreemptionVictim>& victims) override {
    std::string line = StrCat(preemptor.Key(), " preempts on ", node, ":");
    for (const PreemptionVictim& v : victims) StrAppend(&line, " ", v.pod->Key(), " (", v.reason, ")");
    log.push_back(std::move(line));
    ++preemptions;
    sim_->PodsPreempted(preemptor, node, victims);
  }
  void NominationCleared(const Pod& pod) override {
    log.push_back(StrCat(pod.Key(), " loses its nomination"));
    sim_->NominationCleared(pod);
  }
  int64_t preemptions = 0;
  int64_t unschedulable = 0;
  std::vector<std::string> log;
  SimulatedCluster* sim_ = nullptr;
};

// One scheduler on its own simulated cluster.
struct World {
  World(const SchedulerConfig& config, bool reference) {
    auto made = SimWorld::New(
        {.config = &config, .seed = 7, .reference_evaluation = reference, .observer = &recorder, .gang_status = false});
    REQUIRE(made.ok());
    world = *std::move(made);
    recorder.sim_ = &world->sim;
  }
  Recorder recorder;
  std::unique_ptr<SimWorld> world;
  SimulatedCluster& sim() { return world->sim; }
};

class Generator {
 public:
  // `plain`: pods without host ports, pod affinity or spread constraints (every cycle is the
  // cache's to answer).
  explicit Generator(uint64_t seed, bool plain = false) : rng_(seed), plain_(plain) {}

  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(int percent) { return Int(0, 99) < percent; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) { return v[Int(0, static_cast<int>(v.size()) - 1)]; }

  json NodeJson(const std::string& name) {
    const int gpus = Pick(std::vector<int>{0, 1, 2, 4, 8, 8, 8});
    json labels{{"kubernetes.io/hostname", name},
                {"topology.kubernetes.io/zone", StrCat("z", Int(0, 2))},
                {"pool", Pick(std::vector<std::string>{"a", "b", "c"})}};
    json alloc{{"cpu", StrCat(Pick(std::vector<int>{8, 16, 32, 64}))},
               {"memory", StrCat(Pick(std::vector<int>{32, 64, 256}), "Gi")},
               {"pods", StrCat(Pick(std::vector<int>{4, 16, 110}))}};
    if (gpus > 0) {
      labels["nvidia.com/gpu.count"] = StrCat(gpus);
      labels["nvidia.com/gpu.product"] = Pick(std::vector<std::string>{"A100", "V100"});
      labels["nvidia.com/gpu.memory"] = "40960";
      int advertised = gpus;
      if (Chance(20)) {
        labels["nvidia.com/gpu.replicas"] = "4";
        labels["nvidia.com/gpu.sharing-strategy"] = "time-slicing";
        advertised = gpus * 4;
      }
      alloc["nvidia.com/gpu"] = StrCat(advertised);
    }
    json spec = json::object();
    if (Chance(10)) spec["unschedulable"] = true;
    json taints = json::array();
    if (Chance(15)) taints.push_back({{"key", "dedicated"}, {"value", "x"}, {"effect", "NoSchedule"}});
    if (Chance(20)) taints.push_back({{"key", "spot"}, {"value", "y"}, {"effect", "PreferNoSchedule"}});
    if (!taints.empty()) spec["taints"] = taints;
    return json{{"apiVersion", "v1"},
                {"kind", "Node"},
                {"metadata", {{"name", name}, {"labels", labels}}},
                {"spec", spec},
                {"status",
                 {{"allocatable", alloc},
                  {"capacity", alloc},
                  {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  }

  // A pod's node-level needs (requests, GPU annotations, tolerations, node selection). Most pods
  // repeat one of a few shapes, as workloads do, so cached shapes are reused across cycles.
  json Shape() {
    if (shapes_.empty()) {
      for (int i = 0; i < 5; ++i) shapes_.push_back(RandomShape());
    }
    return Chance(80) ? Pick(shapes_) : RandomShape();
  }

  // Forgets the recurring shapes: the mix of the pods that follow shifts.
  void ShiftMix() { shapes_.clear(); }

  json RandomShape() {
    json requests{{"cpu", StrCat(Pick(std::vector<int>{100, 500, 1000, 2000, 4000}), "m")},
                  {"memory", StrCat(Pick(std::vector<int>{128, 1024, 8192}), "Mi")}};
    json annotations = json::object();
    const int gpu = Int(0, 9);
    if (gpu <= 4) {
      requests["nvidia.com/gpu"] = StrCat(Pick(std::vector<int>{1, 1, 1, 2, 4, 8}));
    } else if (gpu <= 6) {
      requests["nvidia.com/gpu"] = "1";
      annotations["tessel.io/gpu-milli"] = StrCat(Pick(std::vector<int>{250, 300, 500, 750}));
    }
    if (Chance(25)) annotations["tessel.io/gpu-sharing"] = "allowed";
    json container{{"name", "c"}, {"resources", {{"requests", requests}}}};
    if (!plain_ && Chance(3)) container["ports"] = json::array({{{"containerPort", 80}, {"hostPort", 8080}}});
    json spec{{"schedulerName", "tessel"}, {"containers", json::array({container})}};
    if (Chance(20)) {
      spec["tolerations"] = json::array({{{"key", "dedicated"}, {"operator", "Equal"}, {"value", "x"},
                                          {"effect", "NoSchedule"}}});
    }
    if (Chance(15)) spec["nodeSelector"] = {{"pool", Pick(std::vector<std::string>{"a", "b"})}};
    json affinity = json::object();
    if (Chance(15)) {
      affinity["nodeAffinity"] = {
          {"preferredDuringSchedulingIgnoredDuringExecution",
           json::array({{{"weight", Int(1, 100)},
                         {"preference",
                          {{"matchExpressions",
                            json::array({{{"key", "topology.kubernetes.io/zone"},
                                          {"operator", "In"},
                                          {"values", json::array({StrCat("z", Int(0, 2))})}}})}}}}})}};
    }
    if (Chance(8)) {
      affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
          {"nodeSelectorTerms",
           json::array({{{"matchExpressions",
                          json::array({{{"key", "pool"}, {"operator", "NotIn"}, {"values", json::array({"c"})}}})}}})}};
    }
    return json{{"spec", spec}, {"affinity", affinity}, {"annotations", annotations}};
  }

  json PodJson(int i, const std::string& node) {
    const std::string name = StrCat("p", i);
    const std::string app = Pick(std::vector<std::string>{"a", "b", "c", "d"});
    json shape = Shape();
    json spec = shape["spec"];
    json affinity = shape["affinity"];
    json annotations = shape["annotations"];
    if (!node.empty()) spec["nodeName"] = node;
    const json term{{"labelSelector", {{"matchLabels", {{"app", app}}}}},
                    {"topologyKey", Pick(std::vector<std::string>{"kubernetes.io/hostname",
                                                                 "topology.kubernetes.io/zone"})}};
    if (!plain_ && Chance(6)) affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json::array({term});
    if (!plain_ && Chance(6)) affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json::array({term});
    if (!plain_ && Chance(6)) {
      affinity["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
          json::array({{{"weight", Int(1, 100)}, {"podAffinityTerm", term}}});
    }
    if (!affinity.empty()) spec["affinity"] = affinity;
    if (!plain_ && Chance(6)) {
      spec["topologySpreadConstraints"] = json::array(
          {{{"maxSkew", Int(1, 2)},
            {"topologyKey", "topology.kubernetes.io/zone"},
            {"whenUnsatisfiable", Chance(50) ? "DoNotSchedule" : "ScheduleAnyway"},
            {"labelSelector", {{"matchLabels", {{"app", app}}}}}}});
    }
    json meta{{"name", name},
              {"namespace", "default"},
              {"uid", StrCat("uid-", name)},
              {"creationTimestamp", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ",
                                                     absl::FromUnixSeconds(1'600'000'000 + i),
                                                     absl::UTCTimeZone())},
              {"labels", {{"app", app}}},
              {"annotations", annotations}};
    if (Chance(10)) {
      meta["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"},
                                              {"name", StrCat("rs-", app)}, {"uid", StrCat("rs-uid-", app)},
                                              {"controller", true}}});
    }
    return json{{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", meta},
                {"spec", spec},
                {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  }

 private:
  std::mt19937_64 rng_;
  bool plain_;
  std::vector<json> shapes_;
};

// Volume scheduling: two classes (WaitForFirstConsumer in zones z0 and z1; Immediate), pushed once.
void AddStorageClasses(json& items) {
  items.push_back({{"apiVersion", "storage.k8s.io/v1"}, {"kind", "StorageClass"}, {"metadata", {{"name", "zonal"}}},
                   {"provisioner", "csi.example.com"}, {"volumeBindingMode", "WaitForFirstConsumer"},
                   {"allowedTopologies", json::array({{{"matchLabelExpressions", json::array({
                       {{"key", "topology.kubernetes.io/zone"}, {"values", json::array({"z0", "z1"})}}})}}})}});
  items.push_back({{"apiVersion", "storage.k8s.io/v1"}, {"kind", "StorageClass"}, {"metadata", {{"name", "standard"}}},
                   {"provisioner", "csi.example.com"}, {"volumeBindingMode", "Immediate"}});
}

// Gives the pod a claim of its own: unbound WaitForFirstConsumer, or bound to a PV in one zone.
void AddClaim(Generator& gen, json& pod, json& items) {
  const std::string name = StrCat("c-", pod["metadata"]["name"].get<std::string>());
  pod["spec"]["volumes"] = json::array({{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", name}}}}});
  json claim{{"apiVersion", "v1"}, {"kind", "PersistentVolumeClaim"},
             {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", StrCat("uid-", name)}}},
             {"spec", {{"accessModes", json::array({"ReadWriteOnce"})}, {"storageClassName", "zonal"},
                       {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
  if (gen.Chance(50)) {
    const std::string zone = StrCat("z", gen.Int(0, 2));
    claim["spec"]["storageClassName"] = "standard";
    claim["spec"]["volumeName"] = StrCat("pv-", name);
    claim["status"] = {{"phase", "Bound"}};
    items.push_back({{"apiVersion", "v1"}, {"kind", "PersistentVolume"},
                     {"metadata", {{"name", StrCat("pv-", name)}, {"labels", {{"topology.kubernetes.io/zone", zone}}}}},
                     {"spec", {{"capacity", {{"storage", "1Gi"}}}, {"accessModes", json::array({"ReadWriteOnce"})},
                               {"storageClassName", "standard"},
                               {"claimRef", {{"namespace", "default"}, {"name", name}}},
                               {"nodeAffinity", {{"required", {{"nodeSelectorTerms", json::array({{{"matchExpressions",
                                   json::array({{{"key", "topology.kubernetes.io/zone"}, {"operator", "In"},
                                                 {"values", json::array({zone})}}})}}})}}}}}}},
                     {"status", {{"phase", "Bound"}}}});
  }
  items.push_back(std::move(claim));
}

ObjectList Decode(const json& items) {
  absl::StatusOr<ObjectList> list = DecodeList(json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}.dump());
  REQUIRE(list.ok());
  REQUIRE(list->warnings.empty());
  return *std::move(list);
}

SchedulerConfig ConfigFor(const std::string& policy) {
  if (policy == "Tessel") return SchedulerConfig{};  // the default profile
  if (policy == "Tessel/fixed") {
    // A configured target workload: scores stay valid across cycles (a learned one moves).
    absl::StatusOr<SchedulerConfig> config = ParseSchedulerConfig(
        "apiVersion: tessel.io/v1alpha1\nkind: TesselSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: tessel\n  pluginConfig:\n  - name: Tessel\n    args:\n"
        "      targetWorkload: [{cpuMilli: 1000, gpuMilli: 1000, numGpu: 1, weight: 3},"
        " {cpuMilli: 2000, gpuMilli: 500, numGpu: 1, weight: 2},"
        " {cpuMilli: 4000, gpuMilli: 1000, numGpu: 4, weight: 1}]\n");
    REQUIRE(config.ok());
    return *std::move(config);
  }
  const bool learns = policy == "FGD";
  const std::string yaml = StrCat(
      "apiVersion: tessel.io/v1alpha1\nkind: TesselSchedulerConfiguration\nprofiles:\n"
      "- schedulerName: tessel\n  plugins:\n"
      "    preFilter:\n      disabled: [{name: Tessel}]\n",
      learns ? "      enabled: [{name: FGD}]\n" : "",
      "    preScore:\n      disabled: [{name: Tessel}]\n      enabled: [{name: ", policy, "}]\n",
      "    score:\n      disabled: [{name: Tessel}]\n      enabled: [{name: ", policy, ", weight: 10}]\n");
  absl::StatusOr<SchedulerConfig> config = ParseSchedulerConfig(yaml);
  INFO(yaml);
  REQUIRE(config.ok());
  return *std::move(config);
}

// Runs one seeded case through both worlds and compares them after every round; the cached
// world's decision cache counts. With `shift`, the mix of pod shapes changes every round (a
// learned target workload moves).
// With `queues`, pods go to two team queues in a cohort (team-b's, mostly, with two flavors by
// node pool: strict tiers, either fungibility) or to no queue, and the queues' small quotas run
// out as pods bind: the cache keys each queued pod by its quota verdicts, which then change
// between cycles, and answers a flavored pod tier by tier.
DecisionCache::Stats RunCase(const std::string& policy, uint64_t seed, int rounds = 4, bool shift = false,
                             bool plain = false, bool queues = false) {
  const SchedulerConfig config = ConfigFor(policy);
  World cached(config, /*reference=*/false);
  World reference(config, /*reference=*/true);
  Generator gen(seed, plain);
  int next_pod = 0;
  std::vector<std::string> node_names;

  json items = json::array();
  AddStorageClasses(items);
  const std::vector<std::string> namespaces = {"team-a", "team-b", "default"};
  if (queues) {
    for (const std::string& name : {namespaces[0], namespaces[1]}) {
      json quota{{"nvidia.com/gpu", StrCat(gen.Int(1, 16))}};
      if (gen.Chance(30)) quota["cpu"] = StrCat(gen.Int(2, 24));
      json spec{{"namespaces", json::array({name})}, {"nominalQuota", quota}};
      if (name == "team-a") spec["cohort"] = "research";
      if (name == "team-b" && gen.Chance(60)) {
        // Flavors by node pool (pool c has none), in a random order: strict tiers.
        std::vector<std::string> pools = {"a", "b"};
        if (gen.Chance(50)) std::swap(pools[0], pools[1]);
        json flavors = json::array();
        for (const std::string& pool : pools) {
          const json resource{{"name", "nvidia.com/gpu"}, {"nominalQuota", StrCat(gen.Int(1, 12))}};
          flavors.push_back({{"name", StrCat("pool-", pool)}, {"resources", json::array({resource})}});
        }
        spec.erase("nominalQuota");
        spec["cohort"] = "research";
        spec["resourceGroups"] = json::array({{{"coveredResources", json::array({"nvidia.com/gpu"})}, {"flavors", flavors}}});
        spec["flavorFungibility"] = {{"whenCanBorrow", gen.Chance(50) ? "TryNextFlavor" : "Borrow"},
                                     {"whenCanPreempt", gen.Chance(50) ? "Preempt" : "TryNextFlavor"}};
      }
      items.push_back({{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"}, {"metadata", {{"name", name}}},
                       {"spec", spec}});
    }
    for (const std::string pool : {"a", "b"}) {
      items.push_back({{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "ResourceFlavor"},
                       {"metadata", {{"name", StrCat("pool-", pool)}}}, {"spec", {{"nodeLabels", {{"pool", pool}}}}}});
    }
  }
  const int nodes = gen.Int(2, 24);
  for (int i = 0; i < nodes; ++i) {
    node_names.push_back(StrCat("n", i));
    items.push_back(gen.NodeJson(node_names.back()));
  }
  for (int i = 0, running = gen.Int(0, 10); i < running; ++i) items.push_back(gen.PodJson(next_pod++, gen.Pick(node_names)));

  for (int round = 0; round < rounds; ++round) {
    if (shift) gen.ShiftMix();
    for (int i = 0, pending = gen.Int(5, 40); i < pending; ++i) {
      json pod = gen.PodJson(next_pod++, "");
      if (queues) pod["metadata"]["namespace"] = gen.Pick(namespaces);
      if (gen.Chance(10)) AddClaim(gen, pod, items);
      items.push_back(std::move(pod));
    }
    const ObjectList objects = Decode(items);
    for (World* w : {&cached, &reference}) {
      w->sim().Load(objects);
      w->sim().RunUntilIdle();
    }
    INFO("policy " << policy << ", seed " << seed << ", round " << round);
    REQUIRE(cached.recorder.log == reference.recorder.log);
    REQUIRE(cached.sim().placements() == reference.sim().placements());
    REQUIRE(cached.sim().reasons() == reference.sim().reasons());
    // (Running pods are generated anywhere, so a node may start overcommitted: alike in both.)
    REQUIRE(cached.world->cache.CheckNodesFit().ToString() == reference.world->cache.CheckNodesFit().ToString());

    // Informer changes between rounds, the same in both worlds.
    items = json::array();
    std::vector<std::string> placed;
    for (const auto& [key, node] : reference.sim().placements()) {
      if (!node.empty()) placed.push_back(key);
    }
    for (int i = 0, deletes = gen.Int(0, 4); i < deletes && !placed.empty(); ++i) {
      const std::string key = gen.Pick(placed);
      const std::string uid = StrCat("uid-", key.substr(key.find('/') + 1));
      for (World* w : {&cached, &reference}) w->world->scheduler->OnPodDelete(key, uid);
    }
    if (gen.Chance(60)) {
      // A node changes labels, taints or cordon (a new Node object under its name).
      const ObjectList changed = Decode(json::array({gen.NodeJson(gen.Pick(node_names))}));
      for (World* w : {&cached, &reference}) w->world->scheduler->OnNodeUpdate(changed.nodes.front());
    }
    if (gen.Chance(30)) {
      node_names.push_back(StrCat("n", nodes + round));
      const ObjectList added = Decode(json::array({gen.NodeJson(node_names.back())}));
      for (World* w : {&cached, &reference}) w->world->scheduler->OnNodeAdd(added.nodes.front());
    }
    if (gen.Chance(15) && node_names.size() > 2) {
      const std::string gone = gen.Pick(node_names);
      for (World* w : {&cached, &reference}) w->world->scheduler->OnNodeDelete(gone);
    }
  }
  return cached.world->scheduler->FrameworkFor("tessel")->DecisionCacheStats();
}

// Backlogs where most pods fit nowhere (issue 19): PriorityClasses of several values, team
// queues (a cohort whose queue reclaims with Any, one with LowerPriority, a queue alone), running
// pods of every priority filling small clusters, running gangs, PodDisruptionBudgets whose
// allowance changes each round, and more pending pods than the nodes hold, so that most cycles
// end in preemption's dry run: its answers (victims, nominated nodes, cleared nominations) are
// compared too, with kube-scheduler's candidate limits small enough to stop the walk early in
// half of the cases, and the cached path keeps dry runs' answers between attempts.
struct BacklogCounts {
  int64_t preemptions = 0;
  int64_t no_fit = 0;         // answered by the decision cache
  int64_t unschedulable = 0;  // attempts that found no node
  int64_t scheduled = 0;
  int64_t with_held = 0;      // cache answers while pods were nominated
  int64_t held_out = 0;       // of those, where a held node sat out
  int64_t held_reused = 0;    // held nodes' verdicts kept from an earlier cycle
  int64_t dry_runs_kept = 0;  // preemption's dry runs answered from an earlier attempt
  int64_t dry_runs_made = 0;
};

BacklogCounts RunBacklogCase(uint64_t seed, bool plain) {
  // Plain pods keep every cycle in the cache; the others bring host ports, pod (anti-)affinity
  // and spread beside the nominations.
  Generator gen(seed, plain);
  const bool limited = gen.Chance(50);
  absl::StatusOr<SchedulerConfig> config = ParseSchedulerConfig(StrCat(
      "apiVersion: tessel.io/v1alpha1\nkind: TesselSchedulerConfiguration\nprofiles:\n"
      "- schedulerName: tessel\n",
      limited ? "  pluginConfig:\n  - name: DefaultPreemption\n    args:\n"
                "      minCandidateNodesPercentage: 10\n      minCandidateNodesAbsolute: 2\n"
              : ""));
  REQUIRE(config.ok());
  World cached(*config, /*reference=*/false);
  World reference(*config, /*reference=*/true);

  json items = json::array();
  const std::vector<int> values = {-10, 0, 100, 1000, 5000};
  for (int v : values) {
    items.push_back({{"apiVersion", "scheduling.k8s.io/v1"}, {"kind", "PriorityClass"},
                     {"metadata", {{"name", StrCat("p", v < 0 ? "m" : "", std::abs(v))}}}, {"value", v}});
  }
  auto queue = [&](const std::string& name, const std::string& cohort, int gpus, const std::string& reclaim) {
    json spec{{"namespaces", json::array({name})}, {"nominalQuota", {{"nvidia.com/gpu", StrCat(gpus)}}}};
    if (!cohort.empty()) spec["cohort"] = cohort;
    spec["preemption"] = {{"reclaimWithinCohort", reclaim}, {"withinQueue", "LowerPriority"}};
    items.push_back({{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"}, {"metadata", {{"name", name}}},
                     {"spec", spec}});
  };
  queue("team-a", "research", gen.Int(4, 40), "Any");
  queue("team-b", "research", gen.Int(4, 40), "LowerPriority");
  queue("team-c", "", gen.Int(4, 40), "Never");
  std::vector<std::string> node_names;
  const int nodes = gen.Int(6, 40);
  for (int i = 0; i < nodes; ++i) {
    node_names.push_back(StrCat("n", i));
    items.push_back(gen.NodeJson(node_names.back()));
  }
  int next_pod = 0;
  auto pod = [&](const std::string& node) {
    json p = gen.PodJson(next_pod++, node);
    p["metadata"]["namespace"] = gen.Pick(std::vector<std::string>{"team-a", "team-b", "team-c", "default"});
    const int v = gen.Pick(values);
    p["spec"]["priorityClassName"] = StrCat("p", v < 0 ? "m" : "", std::abs(v));
    if (gen.Chance(10)) p["spec"]["preemptionPolicy"] = "Never";
    if (!node.empty()) p["status"]["startTime"] = p["metadata"]["creationTimestamp"];
    return p;
  };
  for (int i = 0, running = gen.Int(nodes, 3 * nodes); i < running; ++i) items.push_back(pod(gen.Pick(node_names)));
  // Running gangs of two, their members on two nodes: a victim's mates run elsewhere.
  for (int g = 0, gangs = gen.Int(0, nodes / 3); g < gangs; ++g) {
    const std::string name = StrCat("gang", g);
    json members[2] = {pod(gen.Pick(node_names)), pod(gen.Pick(node_names))};
    const std::string ns = members[0]["metadata"]["namespace"];
    items.push_back({{"apiVersion", "scheduling.x-k8s.io/v1alpha1"}, {"kind", "PodGroup"},
                     {"metadata", {{"name", name}, {"namespace", ns}}}, {"spec", {{"minMember", 2}}}});
    for (json& m : members) {
      m["metadata"]["namespace"] = ns;
      m["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = name;
      items.push_back(m);
    }
  }

  BacklogCounts counts;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0, pending = gen.Int(2 * nodes, 4 * nodes); i < pending; ++i) items.push_back(pod(""));
    // Budgets over some apps, what they allow read again each round (evictions spend it too).
    for (const std::string app : {"a", "b"}) {
      if (!gen.Chance(40)) continue;
      items.push_back({{"apiVersion", "policy/v1"}, {"kind", "PodDisruptionBudget"},
                       {"metadata", {{"name", StrCat("pdb-", app)}, {"namespace", "default"}}},
                       {"spec", {{"selector", {{"matchLabels", {{"app", app}}}}}}},
                       {"status", {{"disruptionsAllowed", gen.Int(0, 2)}}}});
    }
    const ObjectList objects = Decode(items);
    for (World* w : {&cached, &reference}) {
      w->sim().Load(objects);
      w->sim().RunUntilIdle();
    }
    INFO("seed " << seed << ", round " << round << ", limited " << limited);
    REQUIRE(cached.recorder.log == reference.recorder.log);
    REQUIRE(cached.sim().placements() == reference.sim().placements());
    REQUIRE(cached.sim().reasons() == reference.sim().reasons());
    REQUIRE(cached.sim().evicted() == reference.sim().evicted());
    items = json::array();
    // Pods end elsewhere between rounds (the queue's hints by room decide who is retried).
    std::vector<std::string> placed;
    for (const auto& [key, node] : reference.sim().placements()) {
      if (!node.empty()) placed.push_back(key);
    }
    for (int i = 0, deletes = gen.Int(0, 6); i < deletes && !placed.empty(); ++i) {
      const std::string key = gen.Pick(placed);
      const std::string uid = StrCat("uid-", key.substr(key.find('/') + 1));
      for (World* w : {&cached, &reference}) w->world->scheduler->OnPodDelete(key, uid);
    }
  }
  counts.preemptions = cached.recorder.preemptions;
  const DecisionCache::Stats stats = cached.world->scheduler->FrameworkFor("tessel")->DecisionCacheStats();
  counts.no_fit = stats.no_fit;
  counts.with_held = stats.with_held;
  counts.held_out = stats.held_out;
  counts.held_reused = stats.held_reused;
  const auto* preemption = dynamic_cast<const default_preemption::DefaultPreemption*>(
      cached.world->scheduler->FrameworkFor("tessel")->FindPlugin(default_preemption::DefaultPreemption::kName));
  REQUIRE(preemption != nullptr);
  counts.dry_runs_kept = preemption->memo_stats().kept;
  counts.dry_runs_made = preemption->memo_stats().missed;
  counts.unschedulable = cached.recorder.unschedulable;
  for (const auto& [key, node] : cached.sim().placements()) counts.scheduled += !node.empty();
  return counts;
}

const std::vector<std::string> kPolicies = {"Tessel", "Tessel/fixed", "FGD",        "BestFit",    "DotProd",
                                            "GpuBinPack", "GpuClustering", "GpuPacking", "Random"};

TEST_CASE("decision cache: the same decisions as evaluating every node, every policy",
          "[decision_cache]") {
  DecisionCache::Stats total;
  for (const std::string& policy : kPolicies) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      const DecisionCache::Stats s = RunCase(policy, seed * 7919 + policy.size());
      total.answered += s.answered;
      total.no_fit += s.no_fit;
    }
  }
  // Both answers of the cache were compared, not only the fall-back.
  CHECK(total.answered > 300);
  CHECK(total.no_fit > 100);
}

TEST_CASE("decision cache: long streams whose mix shifts, learned workloads", "[decision_cache]") {
  // 12 rounds of plain pods (no pod-to-pod rules) with a new mix of shapes each: the learned
  // workload of Tessel and FGD is rebuilt (its version moves the score columns) while cached
  // scores of other shapes stay, and the small clusters fill up, so many pods fit nowhere.
  DecisionCache::Stats total;
  for (const std::string policy : {"Tessel", "FGD"}) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      const DecisionCache::Stats s =
          RunCase(policy, seed * 104729 + 11, /*rounds=*/12, /*shift=*/true, /*plain=*/true);
      total.answered += s.answered;
      total.no_fit += s.no_fit;
    }
  }
  CHECK(total.answered > 1000);
  CHECK(total.no_fit > 100);
}

TEST_CASE("decision cache: pods of team queues, flat and flavored, whose quota runs out as they bind",
          "[decision_cache]") {
  DecisionCache::Stats total;
  for (const std::string policy : {"Tessel", "BestFit"}) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      const DecisionCache::Stats s =
          RunCase(policy, seed * 6151 + policy.size(), /*rounds=*/4, /*shift=*/false, /*plain=*/true, /*queues=*/true);
      total.answered += s.answered;
      total.no_fit += s.no_fit;
      total.fallbacks += s.fallbacks;
    }
  }
  // Queued pods are answered by the cache (kept from falling back by nothing but their pod rules,
  // claims and tiers that preempt first), with a node or with every node's rejection, quota's
  // included.
  CAPTURE(total.answered, total.no_fit, total.fallbacks);
  CHECK(total.answered > 1000);
  CHECK(total.no_fit > 300);
}

TEST_CASE("decision cache: the optimised path answers most cycles of plain GPU pods",
          "[decision_cache]") {
  // Guards against a cache that silently falls back every time (and so proves nothing): with
  // pods that read only their node, the framework keeps a cache entry per pod shape.
  const bool queued = GENERATE(false, true);
  INFO((queued ? "in a team queue whose quota runs out" : "no queue"));
  SchedulerConfig config;
  World w(config, /*reference=*/false);
  json items = json::array();
  if (queued) {
    items.push_back({{"apiVersion", "tessel.io/v1alpha1"},
                     {"kind", "Queue"},
                     {"metadata", {{"name", "team"}}},
                     {"spec", {{"namespaces", json::array({"default"})}, {"nominalQuota", {{"nvidia.com/gpu", "20"}}}}}});
  }
  Generator gen(3);
  for (int i = 0; i < 16; ++i) {
    json node = gen.NodeJson(StrCat("n", i));
    node["spec"] = json::object();
    items.push_back(node);
  }
  for (int i = 0; i < 40; ++i) {
    items.push_back(json{{"apiVersion", "v1"},
                         {"kind", "Pod"},
                         {"metadata", {{"name", StrCat("p", i)}, {"namespace", "default"}, {"uid", StrCat("u", i)}}},
                         {"spec",
                          {{"schedulerName", "tessel"},
                           {"containers", json::array({{{"name", "c"},
                                                        {"resources", {{"requests", {{"cpu", "1"},
                                                                                     {"nvidia.com/gpu", StrCat(1 + i % 2)}}}}}}})}}}});
  }
  w.sim().Load(Decode(items));
  w.sim().RunUntilIdle();
  const Framework* fw = w.world->scheduler->FrameworkFor("tessel");
  REQUIRE(fw != nullptr);
  int64_t placed = 0;
  for (const auto& [key, node] : w.sim().placements()) placed += !node.empty();
  REQUIRE(placed > 10);
  // Every cycle is answered by the cache: with a node, or with every node's rejection.
  const DecisionCache::Stats stats = fw->DecisionCacheStats();
  CHECK(stats.answered == placed);
  CHECK(stats.fallbacks == 0);
  if (!queued) CHECK(stats.shapes == 2);
  if (queued) {
    // The quota held: 20 GPUs placed, the rest refused by it, from the cache.
    int64_t gpus = 0;
    for (const auto& [key, node] : w.sim().placements()) {
      if (!node.empty()) gpus += 1 + std::stoi(key.substr(key.find("/p") + 2)) % 2;
    }
    CHECK(gpus <= 20);
    CHECK(gpus >= 19);
    CHECK(stats.no_fit > 0);
  }
}

TEST_CASE("decision cache and preemption: backlogs that fit nowhere, priorities, queues and pod rules",
          "[decision_cache]") {
  BacklogCounts total;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const BacklogCounts c = RunBacklogCase(seed * 15485863 + 3, /*plain=*/seed % 3 != 0);
    total.preemptions += c.preemptions;
    total.no_fit += c.no_fit;
    total.unschedulable += c.unschedulable;
    total.scheduled += c.scheduled;
    total.with_held += c.with_held;
    total.held_out += c.held_out;
    total.held_reused += c.held_reused;
    total.dry_runs_kept += c.dry_runs_kept;
    total.dry_runs_made += c.dry_runs_made;
  }
  // Preemption chose victims in many cycles, most attempts found no node, and the cache's
  // no-fit answers were compared too; so were its answers while pods were nominated, including
  // those where a node that fits as it is sat out for the pods nominated there, and those that
  // reused a held node's verdict from an earlier cycle; and preemptions whose dry runs were
  // answered from an earlier attempt's, beside budgets and gangs.
  CAPTURE(total.preemptions, total.unschedulable, total.scheduled, total.no_fit, total.with_held, total.held_out,
          total.held_reused, total.dry_runs_kept, total.dry_runs_made);
  CHECK(total.preemptions > 100);
  CHECK(total.unschedulable > 2 * total.scheduled);
  CHECK(total.no_fit > 100);
  CHECK(total.with_held > 100);
  CHECK(total.held_out > 10);
  CHECK(total.held_reused > 100);
  CHECK(total.dry_runs_kept > 1000);
  CHECK(total.dry_runs_made > 1000);
}

}  // namespace decision_cache_test
}  // namespace tessel::bench
