// Consolidation (plugins/consolidation) and the disruption rules (scheduler/preemption/
// disruption.h, framework/disruption_ledger.h) on a real Scheduler: the seeds' "fragmentation
// hell" arrived in the worst order, the opt-in, the minimum run time (of moves and of
// preemption), the move limit, PodDisruptionBudgets, moved pods that would fit nowhere; and the
// nominated room a preemptor waits for keeping its own spread (no evicting again for it).
// A Job controller is played by the test: an evicted pod goes away and comes back under a new
// name, with the same owner.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "harness/core_harness.h"
#include "plugins/consolidation/consolidation.h"
#include "nlohmann/json.hpp"
#include "scheduler/core/scheduler.h"
#include "scheduler/preemption/disruption.h"
#include "scheduler/testing/builders.h"

namespace tessel {
namespace consolidation_test {

using testing::NodeBuilder;
using testing::PodBuilder;

constexpr int64_t kStart = 1'700'000'000;

std::string Config(int64_t min_run_seconds, int max_moves = 1) {
  return StrCat(R"(
profiles:
- schedulerName: tessel
  pluginConfig:
  - name: Consolidation
    args: {minRunSeconds: )", min_run_seconds, ", maxMovesPerPod: ", max_moves,
                R"(, moveWindowSeconds: 3600}
)");
}

// A cluster of GPU nodes whose Jobs come back when their pods are evicted.
struct Lab {
  testing::CoreHarness h;
  std::map<std::string, std::string> owner_of;  // pod key -> Job name
  std::map<std::string, int> incarnations;      // Job -> pods made
  std::map<std::string, Pod> spec_of;           // Job -> its pod template
  size_t evictions_seen = 0;

  explicit Lab(std::string config) : h({.config_yaml = std::move(config), .start = absl::FromUnixSeconds(kStart)}) {}

  // Nodes n1..n<count>; with `pools`, node i is labelled pool=pools[i-1].
  void Nodes(int count, int gpus, const std::vector<std::string>& pools = {}) {
    for (int i = 1; i <= count; ++i) {
      NodeBuilder b(StrCat("n", i));
      b.Allocatable(StrCat("cpu:64,memory:256Gi,nvidia.com/gpu:", gpus)).Label("kubernetes.io/hostname", StrCat("n", i));
      if (!pools.empty()) b.Label("pool", pools[static_cast<size_t>(i - 1)]);
      h.AddNode(b.Build());
    }
  }
  std::string pod_class;  // priorityClassName of the Jobs made next
  StringMap pod_labels;   // labels of the Jobs made next

  // A Job of one pod; `movable` annotates its template; `pin` selects a node by hostname.
  void Job(const std::string& name, int gpus, bool movable, const std::string& ns = "team-a",
           const std::string& pin = "") {
    PodBuilder b(name, ns);
    b.Requests(StrCat("cpu:1,memory:1Gi,nvidia.com/gpu:", gpus)).Created(kStart);
    if (!pin.empty()) b.Selector("kubernetes.io/hostname", pin);
    Pod p = b.Build();
    p.priority_class_name = pod_class;
    p.meta.labels = pod_labels;
    p.meta.owner_references.push_back({.api_version = "batch/v1", .kind = "Job", .name = name,
                                       .uid = StrCat("uid-", name), .controller = true});
    if (movable) p.meta.annotations[std::string(preemption::kMovableAnnotation)] = "true";
    spec_of[name] = p;
    Create(name);
  }
  void Create(const std::string& job) {
    Pod p = spec_of.at(job);
    const int n = incarnations[job]++;
    if (n > 0) p.meta.name = StrCat(job, "-", n);
    p.meta.uid = StrCat(p.meta.name, "-uid");
    p.meta.creation_timestamp = h.clock.Now();
    owner_of[p.Key()] = job;
    h.AddPod(std::move(p));
  }
  // Binds confirmed come back with status.startTime, as the kubelet reports it.
  void StartPodsWhenBound() {
    h.api.on_bind = [this](const Pod& pod, const std::string& node) {
      Pod bound = pod;
      bound.node_name = node;
      bound.phase = PodPhase::kRunning;
      bound.start_time = h.clock.Now();
      h.s->OnPodUpdate(std::move(bound));
    };
  }
  // Runs until nothing is ready; evicted pods go away and their Jobs make new ones, and pods
  // back off (a few seconds of the manual clock); again.
  void Run() {
    for (int round = 0; round < 10; ++round) {
      h.RunUntilIdle();
      h.clock.Advance(absl::Seconds(20));
      h.RunUntilIdle();
      if (h.api.evictions.size() == evictions_seen) return;
      for (; evictions_seen < h.api.evictions.size(); ++evictions_seen) {
        const std::string key = h.api.evictions[evictions_seen];
        h.s->OnPodDelete(key);
        Create(owner_of.at(key));
      }
    }
  }
  // The gang team-b/pair: a PodGroup of two 8-GPU members.
  void Pair() {
    REQUIRE(h.ApplyGangObject(nlohmann::json{{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                                             {"kind", "PodGroup"},
                                             {"metadata", {{"name", "pair"}, {"namespace", "team-b"}}},
                                             {"spec", {{"minMember", 2}}}})
                .value());
    for (int i = 0; i < 2; ++i) {
      Pod m = PodBuilder(StrCat("pair-", i), "team-b").Requests("cpu:1,memory:1Gi,nvidia.com/gpu:8").Created(kStart).Build();
      m.meta.labels["scheduling.x-k8s.io/pod-group"] = "pair";
      h.AddPod(std::move(m));
    }
  }
  // ResourceFlavors named by the nodes' pool label, and a Queue for namespace `ns` with 16 GPUs
  // of each, in this order (and the fields of `more_spec`).
  void FlavoredQueue(const std::string& ns, const std::vector<std::string>& pools,
                     const nlohmann::json& more_spec = nlohmann::json::object()) {
    nlohmann::json flavors = nlohmann::json::array();
    for (const std::string& pool : pools) {
      REQUIRE(h.ApplyQueueObject(nlohmann::json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "ResourceFlavor"},
                                                {"metadata", {{"name", pool}}}, {"spec", {{"nodeLabels", {{"pool", pool}}}}}})
                  .ok());
      flavors.push_back({{"name", pool}, {"resources", {{{"name", "nvidia.com/gpu"}, {"nominalQuota", "16"}}}}});
    }
    nlohmann::json spec{{"namespaces", {ns}},
                        {"resourceGroups", {{{"coveredResources", {"nvidia.com/gpu"}}, {"flavors", flavors}}}}};
    spec.update(more_spec);
    REQUIRE(h.ApplyQueueObject(nlohmann::json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"},
                                              {"metadata", {{"name", ns}}}, {"spec", spec}})
                .ok());
  }
  // The pod ends (its Job completes).
  void Delete(const std::string& key) {
    h.s->OnPodDelete(key);
    h.api.bound.erase(key);
  }
  std::string NodeOf(const std::string& key) const {
    auto it = h.api.bound.find(key);
    return it == h.api.bound.end() ? "" : it->second;
  }
  // Pods bound per node, by key.
  std::map<std::string, std::vector<std::string>> ByNode() const {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& [key, node] : h.api.bound) out[node].push_back(key);
    return out;
  }
  int Moves() const {
    return static_cast<int>(std::count_if(h.api.events.begin(), h.api.events.end(),
                                          [](const std::string& e) { return e.find(" Moved: ") != std::string::npos; }));
  }
};

// The seed's layout, arrived in the worst order: twelve 3-GPU jobs pack four 10-GPU nodes three
// apiece, then six end so that the nodes hold 2, 2, 1 and 1 (4, 4, 7 and 7 GPUs free: 22 free,
// no 8 anywhere).
void FragmentationHell(Lab& lab, bool movable, const std::vector<std::string>& pools = {}) {
  lab.StartPodsWhenBound();
  lab.Nodes(4, 10, pools);
  for (int i = 0; i < 12; ++i) lab.Job(StrCat("a", i), 3, movable);
  lab.Run();
  REQUIRE(lab.h.api.bound.size() == 12);
  const std::map<std::string, std::vector<std::string>> by_node = lab.ByNode();
  REQUIRE(by_node.size() == 4);
  int ends[] = {1, 1, 2, 2};
  int n = 0;
  for (const auto& [node, keys] : by_node) {
    REQUIRE(keys.size() == 3);
    for (int k = 0; k < ends[n]; ++k) lab.Delete(keys[static_cast<size_t>(k)]);
    ++n;
  }
}

// GPUs free per node, from the scheduler's cache.
std::map<std::string, int64_t> FreeGpus(Lab& lab) {
  std::map<std::string, int64_t> out;
  for (int i = 1; i <= 4; ++i) {
    const std::string name = StrCat("n", i);
    std::optional<NodeInfo> info = lab.h.cache.GetNodeInfo(name);
    if (info) out[name] = info->gpus().total_free_milli() / 1000;
  }
  return out;
}

TEST_CASE("consolidation: the seed's fragmentation hell, Team B's 8-GPU job gets a node by moving "
          "at most two movable jobs, which run again elsewhere", "[consolidation]") {
  Lab lab(Config(600));
  FragmentationHell(lab, /*movable=*/true);
  std::map<std::string, int64_t> free = FreeGpus(lab);
  std::vector<int64_t> frees;
  for (const auto& [node, f] : free) frees.push_back(f);
  std::sort(frees.begin(), frees.end());
  REQUIRE(frees == std::vector<int64_t>{4, 4, 7, 7});

  lab.h.clock.Advance(absl::Minutes(30));  // the jobs have run their minimum
  lab.Job("big", 8, /*movable=*/false, "team-b");
  lab.Run();

  const std::string node = lab.NodeOf("team-b/big");
  REQUIRE(!node.empty());
  CHECK(lab.Moves() >= 1);
  CHECK(lab.Moves() <= 2);
  CHECK(lab.h.api.evictions.size() == static_cast<size_t>(lab.Moves()));
  // Every moved job's new pod runs again, and never on the big job's node.
  for (const std::string& victim : lab.h.api.evictions) {
    const std::string job = lab.owner_of.at(victim);
    const std::string again = StrCat("team-a/", job, "-1");
    CHECK(!lab.NodeOf(again).empty());
    CHECK(lab.NodeOf(again) != node);
  }
  // Told why, naming the pod they made room for and the node.
  REQUIRE(!lab.h.api.disruption_targets.empty());
  CHECK(lab.h.api.disruption_targets[0].find("ConsolidationByScheduler: moved to make room for team-b/big on node " + node) !=
        std::string::npos);
  CHECK(lab.h.api.disruption_targets[0].find("(its 1st move in 24h)") != std::string::npos);
  // The cluster is whole: 22 - 8 = 14 free, 6 team-a jobs and the big one running.
  int64_t total_free = 0;
  for (const auto& [n, f] : FreeGpus(lab)) total_free += f;
  CHECK(total_free == 14);
}

TEST_CASE("consolidation: room is made only for pods asking minPodGpus or more (default 2)",
          "[consolidation]") {
  // Two 2-GPU nodes packed with four movable 1-GPU jobs, then one ends on each: 2 GPUs free,
  // not on one node.
  for (const int64_t min_pod_gpus : {-1, 3, 0}) {  // -1: the default
    INFO("minPodGpus " << min_pod_gpus);
    std::string config = Config(0);
    if (min_pod_gpus >= 0) {
      config.replace(config.find("moveWindowSeconds"), 0, StrCat("minPodGpus: ", min_pod_gpus, ", "));
    }
    Lab lab(config);
    lab.StartPodsWhenBound();
    lab.Nodes(2, 2);
    for (int i = 0; i < 4; ++i) lab.Job(StrCat("a", i), 1, /*movable=*/true);
    lab.Run();
    REQUIRE(lab.h.api.bound.size() == 4);
    for (const auto& [node, keys] : lab.ByNode()) {
      REQUIRE(keys.size() == 2);
      lab.Delete(keys[0]);
    }
    lab.Job("pair", 2, /*movable=*/false, "team-b");
    lab.Run();
    if (min_pod_gpus == 3) {
      CHECK(lab.Moves() == 0);
      CHECK(lab.NodeOf("team-b/pair").empty());
    } else {
      CHECK(lab.Moves() == 1);
      CHECK(!lab.NodeOf("team-b/pair").empty());
    }
  }
  auto negative = consolidation::Consolidation::ParseArgs(YAML::Load("{minPodGpus: -1}"));
  REQUIRE_FALSE(negative.ok());
  CHECK(std::string(negative.status().message()).find("minPodGpus") != std::string::npos);
}

TEST_CASE("consolidation: a gang of two 8-GPU pods in the fragmentation hell gets two nodes by "
          "moves, all or nothing", "[consolidation][gang]") {
  for (const bool movable : {true, false}) {
    INFO("movable " << movable);
    Lab lab(Config(0));
    FragmentationHell(lab, movable);
    lab.Pair();
    lab.Run();
    const std::string n0 = lab.NodeOf("team-b/pair-0"), n1 = lab.NodeOf("team-b/pair-1");
    if (!movable) {
      CHECK(lab.h.api.evictions.empty());
      CHECK(n0.empty());
      CHECK(n1.empty());
      continue;
    }
    // Each 7-free node gives up its one 3-GPU job, which lands on a 4-free node.
    REQUIRE(!n0.empty());
    REQUIRE(!n1.empty());
    CHECK(n0 != n1);
    CHECK(lab.Moves() == 2);
    for (const std::string& victim : lab.h.api.evictions) {
      const std::string again = StrCat("team-a/", lab.owner_of.at(victim), "-1");
      CHECK(!lab.NodeOf(again).empty());
      CHECK(lab.NodeOf(again) != n0);
      CHECK(lab.NodeOf(again) != n1);
    }
    REQUIRE(lab.h.api.disruption_targets.size() == 2);
    for (const std::string& t : lab.h.api.disruption_targets) {
      CHECK(t.find("ConsolidationByScheduler: moved to make room for team-b/pair-") != std::string::npos);
    }
  }
}

// Gang moves plan within one flavor at a time (docs/flavors.md), as the gang is placed.
TEST_CASE("consolidation: a flavored gang's moves stay within one flavor, though moves split across "
          "flavors would be fewer", "[consolidation][gang][flavor]") {
  Lab lab(Config(0));
  // n1 and n3 reserved (4 and 7 GPUs free), n2 and n4 spot (4 and 7 free): one move each on n3
  // and n4 would make two 10-GPU nodes, but of two flavors; the gang takes reserved with three.
  FragmentationHell(lab, true, {"reserved", "spot", "reserved", "spot"});
  lab.FlavoredQueue("team-b", {"reserved", "spot"});
  lab.Pair();
  lab.Run();
  const std::set<std::string> gang_nodes = {lab.NodeOf("team-b/pair-0"), lab.NodeOf("team-b/pair-1")};
  CHECK(gang_nodes == std::set<std::string>{"n1", "n3"});
  CHECK(lab.Moves() == 3);
  for (const std::string& victim : lab.h.api.evictions) {
    const std::string again = lab.NodeOf(StrCat("team-a/", lab.owner_of.at(victim), "-1"));
    CAPTURE(victim, again);
    CHECK((again == "n2" || again == "n4"));
  }
}

// A single pod's moves follow the core tier by tier: a search in vain on the first flavor does
// not keep the second from being searched in the same attempt.
TEST_CASE("consolidation: a flavored pod without a plan on its first flavor gets moves on its "
          "second", "[consolidation][flavor]") {
  Lab lab(Config(0));
  lab.StartPodsWhenBound();
  // n1 (reserved) holds three jobs that stay; n2 (spot) one movable job, n3 (spot) one that
  // stays: an 8-GPU pod fits nowhere, reserved cannot be helped, and on spot moving n2's job
  // to n3 frees n2. (n3 is full while the movable job is placed, so that it lands on n2.)
  lab.Nodes(3, 10, {"reserved", "spot", "spot"});
  for (int i = 0; i < 3; ++i) lab.Job(StrCat("r", i), 3, /*movable=*/false, "team-a", "n1");
  lab.Job("t", 3, /*movable=*/false, "team-a", "n3");
  lab.Job("tmp", 7, /*movable=*/false, "team-a", "n3");
  lab.Run();
  lab.Job("s", 3, /*movable=*/true);
  lab.Run();
  REQUIRE(lab.NodeOf("team-a/s") == "n2");
  lab.Delete("team-a/tmp");
  lab.FlavoredQueue("team-b", {"reserved", "spot"});
  lab.Job("big", 8, /*movable=*/false, "team-b");
  lab.Run();
  CHECK(lab.Moves() == 1);
  CHECK(lab.NodeOf("team-b/big") == "n2");
  CHECK(lab.NodeOf("team-a/s-1") == "n3");
}

TEST_CASE("consolidation: pods that did not opt in are never moved", "[consolidation]") {
  Lab lab(Config(0));
  FragmentationHell(lab, /*movable=*/false);
  lab.Job("big", 8, /*movable=*/false, "team-b");
  lab.Run();
  CHECK(lab.h.api.evictions.empty());
  CHECK(lab.NodeOf("team-b/big").empty());
}

TEST_CASE("consolidation: a pod is moved only once it ran its minimum run time", "[consolidation]") {
  Lab lab(Config(600));
  FragmentationHell(lab, /*movable=*/true);
  lab.Job("big", 8, /*movable=*/false, "team-b");
  lab.Run();  // the jobs started a moment ago
  CHECK(lab.h.api.evictions.empty());
  CHECK(lab.NodeOf("team-b/big").empty());
  lab.h.clock.Advance(absl::Minutes(11));  // past 600 s, and past the queue's 5-minute flush
  lab.Run();
  CHECK(lab.Moves() >= 1);
  CHECK(!lab.NodeOf("team-b/big").empty());
}

TEST_CASE("consolidation: a PriorityClass's minimum run time overrides the plugin's", "[consolidation]") {
  Lab lab(Config(0));
  PriorityClass pc;
  pc.meta.name = "checkpointed";
  pc.meta.annotations[std::string(preemption::kMinRunSecondsAnnotation)] = "3600";
  lab.h.s->OnPriorityClass(pc);
  lab.pod_class = "checkpointed";
  FragmentationHell(lab, /*movable=*/true);
  lab.pod_class.clear();
  lab.h.clock.Advance(absl::Minutes(30));
  lab.Job("big", 8, /*movable=*/false, "team-b");
  lab.Run();
  CHECK(lab.h.api.evictions.empty());  // 30 of the class's 60 minutes
  lab.h.clock.Advance(absl::Minutes(31));
  lab.Run();
  CHECK(lab.Moves() >= 1);
  CHECK(!lab.NodeOf("team-b/big").empty());
}

TEST_CASE("consolidation: refused evictions (PodDisruptionBudgets) move nothing and bind nothing",
          "[consolidation]") {
  Lab lab(Config(0));
  FragmentationHell(lab, /*movable=*/true);
  lab.h.api.refuse_evictions = 1000;
  lab.Job("big", 8, /*movable=*/false, "team-b");
  lab.Run();
  CHECK(lab.h.api.evictions.empty());
  CHECK(!lab.h.api.eviction_attempts.empty());
  CHECK(lab.NodeOf("team-b/big").empty());
}

TEST_CASE("consolidation: a plan that a PodDisruptionBudget would refuse is not started",
          "[consolidation]") {
  // n1 holds two movable 3-GPU jobs under one budget (2 GPUs free), n2 a fixed 2-GPU job (6
  // free): an 8-GPU pod fits only if both jobs move to n2. With a budget of 1 the plan would
  // stop after its first eviction, a restart for nothing; with 2 it runs.
  for (const int32_t allowed : {1, 2}) {
    INFO("disruptionsAllowed " << allowed);
    Lab lab(Config(0));
    lab.StartPodsWhenBound();
    lab.Nodes(2, 8);
    lab.Job("f", 2, /*movable=*/false, "team-a", "n2");
    lab.Job("tmp", 6, /*movable=*/false, "team-a", "n2");
    lab.Run();
    lab.pod_labels = {{"app", "m"}};
    lab.Job("m1", 3, /*movable=*/true);
    lab.Job("m2", 3, /*movable=*/true);
    lab.pod_labels.clear();
    lab.Run();
    REQUIRE(lab.NodeOf("team-a/m1") == "n1");
    REQUIRE(lab.NodeOf("team-a/m2") == "n1");
    lab.Delete("team-a/tmp");
    PodDisruptionBudget pdb;
    pdb.meta.name = "m";
    pdb.meta.namespace_ = "team-a";
    pdb.selector = LabelSelector{.match_labels = {{"app", "m"}}};
    pdb.disruptions_allowed = allowed;
    lab.h.s->OnPodDisruptionBudget(pdb);
    // The API server refuses an eviction past the budget (the disruption controller would
    // lower disruptionsAllowed after each).
    int budget = allowed;
    lab.h.api.on_evict = [&](const Pod& pod, std::string_view) {
      if (pdb.Covers(pod) && budget-- <= 0) return absl::ResourceExhaustedError("would violate the budget");
      return absl::OkStatus();
    };
    lab.Job("big", 8, /*movable=*/false, "team-b");
    lab.Run();
    if (allowed == 1) {
      CHECK(lab.h.api.eviction_attempts.empty());
      CHECK(lab.NodeOf("team-a/m1") == "n1");
      CHECK(lab.NodeOf("team-a/m2") == "n1");
      CHECK(lab.NodeOf("team-b/big").empty());
    } else {
      CHECK(lab.Moves() == 2);
      CHECK(lab.NodeOf("team-b/big") == "n1");
    }
  }
}

// A preempt-first pod (whenCanPreempt: Preempt) that fits on a later flavor now frees room on
// the earlier ones by preemption only: moves are for a pod that fits nowhere.
TEST_CASE("consolidation: a preempt-first pod that fits on a later flavor moves nobody",
          "[consolidation][flavor]") {
  Lab lab(Config(0));
  lab.StartPodsWhenBound();
  // n1 and n2 reserved, n3 on-demand. n1 holds a movable 3-GPU job, n2 a fixed 4-GPU one:
  // moving the job to n2 would free n1 for an 8-GPU pod, but on-demand's n3 is empty.
  lab.Nodes(3, 8, {"reserved", "reserved", "on-demand"});
  lab.Job("f", 4, /*movable=*/false, "team-a", "n2");
  lab.Job("tmp2", 4, /*movable=*/false, "team-a", "n2");
  lab.Job("tmp3", 8, /*movable=*/false, "team-a", "n3");
  lab.Run();
  lab.Job("s", 3, /*movable=*/true);
  lab.Run();
  REQUIRE(lab.NodeOf("team-a/s") == "n1");
  lab.Delete("team-a/tmp2");
  lab.Delete("team-a/tmp3");
  lab.FlavoredQueue("team-b", {"reserved", "on-demand"}, {{"flavorFungibility", {{"whenCanPreempt", "Preempt"}}}});
  lab.Job("big", 8, /*movable=*/false, "team-b");
  lab.Run();
  CHECK(lab.h.api.evictions.empty());
  CHECK(lab.Moves() == 0);
  CHECK(lab.NodeOf("team-b/big") == "n3");
  CHECK(lab.NodeOf("team-a/s") == "n1");
}

TEST_CASE("consolidation: a pod its queue's quota holds back moves nobody (moves free no quota)",
          "[consolidation][quota]") {
  // team-a borrows 2 of team-b's 4 GPUs; its movable 4-GPU job runs on whole GPUs (n1, full). A
  // time-sliced node (n2: 4 GPUs x 2 replicas, a replica charged half a GPU) then joins, and
  // team-b's 2-GPU pod has room there but no quota; team-b may not reclaim (reclaimWithinCohort:
  // Never, the default). Moving the job to n2 would halve its charge and hand the quota over:
  // a reclaim the queue forbids, under another name. Found by the composition property.
  Lab lab(Config(0));
  lab.StartPodsWhenBound();
  for (const auto& team : {"team-a", "team-b"}) {
    REQUIRE(lab.h.ApplyQueueObject(nlohmann::json{
                                       {"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"},
                                       {"metadata", {{"name", team}}},
                                       {"spec", {{"namespaces", {team}}, {"cohort", "lab"},
                                                 {"nominalQuota", {{"nvidia.com/gpu", "4"}}}}}})
                .ok());
  }
  lab.Nodes(1, 8);
  lab.Job("b1", 2, /*movable=*/false, "team-b");
  lab.Job("a1", 2, /*movable=*/false, "team-a");
  lab.Job("a2", 4, /*movable=*/true, "team-a");  // team-a borrows 2
  lab.Run();
  REQUIRE(lab.h.api.bound.size() == 3);
  lab.h.AddNode(NodeBuilder("n2").Allocatable("cpu:64,memory:256Gi").TimeSliced(4, 2).Label("kubernetes.io/hostname", "n2").Build());
  lab.Job("need", 2, /*movable=*/false, "team-b");
  lab.Run();
  CHECK(lab.Moves() == 0);
  CHECK(lab.h.api.evictions.empty());
  CHECK(lab.NodeOf("team-a/a2") == "n1");
  CHECK(lab.NodeOf("team-b/need").empty());
  // Once the borrower ends, the quota is team-b's again and the pod runs.
  lab.Delete("team-a/a2");
  lab.Run();
  CHECK_FALSE(lab.NodeOf("team-b/need").empty());
}

TEST_CASE("consolidation: no move when a moved pod would fit nowhere else", "[consolidation]") {
  // Two 8-GPU nodes, each with a movable 4-GPU job and a fixed 2-GPU job: 2 free on each. A
  // 6-GPU pod could have either node if its 4-GPU job moved, but no node has 4 GPUs for it.
  Lab lab(Config(0));
  lab.StartPodsWhenBound();
  lab.Nodes(2, 8);
  lab.Job("m1", 4, true);
  lab.Run();
  const std::string x = lab.NodeOf("team-a/m1");
  REQUIRE(!x.empty());
  lab.Job("f1", 2, false, "team-a", x);
  lab.Run();
  lab.Job("m2", 4, true);  // 2 left beside m1: the other node
  lab.Run();
  const std::string y = lab.NodeOf("team-a/m2");
  REQUIRE(!y.empty());
  REQUIRE(y != x);
  lab.Job("f2", 2, false, "team-a", y);
  lab.Run();
  REQUIRE(lab.h.api.bound.size() == 4);
  lab.Job("big", 6, false, "team-b");
  lab.Run();
  CHECK(lab.h.api.evictions.empty());
  CHECK(lab.NodeOf("team-b/big").empty());
  // With room for the moved pod on a third node, the same pod gets a node by one move (once the
  // 30 s after the search that found nothing have passed).
  lab.h.clock.Advance(absl::Seconds(31));
  lab.h.AddNode(NodeBuilder("n3").Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:5").Build());
  lab.Run();
  CHECK(lab.Moves() == 1);
  CHECK(!lab.NodeOf("team-b/big").empty());
  CHECK(lab.NodeOf(StrCat("team-a/", lab.owner_of.at(lab.h.api.evictions.at(0)), "-1")) == "n3");
}

TEST_CASE("consolidation: a workload is not moved twice within the window", "[consolidation]") {
  Lab lab(Config(0, /*max_moves=*/1));
  lab.StartPodsWhenBound();
  lab.Nodes(2, 4);
  lab.Job("x", 2, true);
  lab.Run();
  const std::string x = lab.NodeOf("team-a/x");
  REQUIRE(!x.empty());
  const std::string other = x == "n1" ? "n2" : "n1";
  lab.Job("f", 2, false, "team-a", other);
  lab.Run();
  // Round 1: x moves to make room for a.
  lab.Job("a", 4, false, "team-b");
  lab.Run();
  REQUIRE(lab.Moves() == 1);
  REQUIRE(lab.NodeOf("team-b/a") == x);
  REQUIRE(lab.NodeOf("team-a/x-1") == other);
  // a ends; g takes half of x's old node; f ends: x's new pod alone on the other node again.
  lab.Delete("team-b/a");
  lab.Job("g", 2, false, "team-a", x);
  lab.Run();
  lab.Delete("team-a/f");
  lab.h.clock.Advance(absl::Minutes(10));
  lab.Job("b", 4, false, "team-b");
  lab.Run();
  CHECK(lab.Moves() == 1);  // within the hour: not again
  CHECK(lab.NodeOf("team-b/b").empty());
  lab.h.clock.Advance(absl::Minutes(51));
  lab.Run();
  CHECK(lab.Moves() == 2);
  CHECK(lab.NodeOf("team-b/b") == other);
  CHECK(lab.h.api.disruption_targets.back().find("(its 2nd move in 24h)") != std::string::npos);
}

TEST_CASE("preemption: a PriorityClass's minimum run time protects young victims", "[consolidation]") {
  Lab lab(Config(0));
  PriorityClass pc;
  pc.meta.name = "low";
  pc.meta.annotations[std::string(preemption::kMinRunSecondsAnnotation)] = "600";
  lab.h.s->OnPriorityClass(pc);
  lab.StartPodsWhenBound();
  lab.Nodes(1, 8);
  lab.pod_class = "low";
  lab.Job("low", 8, false);
  lab.pod_class.clear();
  lab.Run();
  REQUIRE(lab.NodeOf("team-a/low") == "n1");
  Pod high = PodBuilder("high", "team-b").Requests("cpu:1,nvidia.com/gpu:8").Priority(1000).Build();
  lab.h.AddPod(high);
  lab.Run();
  CHECK(lab.h.api.evictions.empty());
  lab.h.clock.Advance(absl::Minutes(11));
  lab.Run();
  REQUIRE(lab.h.api.evictions.size() == 1);
  CHECK(lab.h.api.evictions[0] == "team-a/low");
  CHECK(std::any_of(lab.h.api.events.begin(), lab.h.api.events.end(), [](const std::string& e) {
    return e.rfind("team-a/low Normal Preempted: preempted by team-b/high", 0) == 0;
  }));
}

TEST_CASE("a pod nominated after a preemption keeps its own topology spread: a lower-priority pod it "
          "counts does not take its node meanwhile", "[consolidation][nomination]") {
  Lab lab(Config(0));
  lab.StartPodsWhenBound();
  lab.Nodes(2, 4);
  auto add = [&](std::string name, int32_t priority, std::string node, std::string app, std::string gpus) {
    PodBuilder b(name, "web");
    b.Requests("cpu:1,nvidia.com/gpu:" + gpus).Priority(priority);
    if (!node.empty()) b.Selector("kubernetes.io/hostname", node);
    Pod p = b.Build();
    p.meta.labels["app"] = app;
    if (name == "high") {
      p.topology_spread_constraints.push_back(TopologySpreadConstraint{
          .max_skew = 1, .topology_key = "kubernetes.io/hostname",
          .label_selector = LabelSelector{.match_labels = {{"app", "web"}}}});
    }
    lab.h.AddPod(std::move(p));
  };
  add("low", 0, "n1", "batch", "4");
  add("keeper", 200, "n2", "batch", "4");
  lab.Run();
  REQUIRE(lab.NodeOf("web/low") == "n1");
  REQUIRE(lab.NodeOf("web/keeper") == "n2");
  // The terminating victim stays until the test deletes it (a grace period).
  lab.h.api.on_evict = [&](const Pod& pod, std::string_view) {
    Pod leaving = pod;
    leaving.meta.deletion_timestamp = lab.h.clock.Now();
    lab.h.s->OnPodUpdate(std::move(leaving));
    return absl::OkStatus();
  };
  add("high", 100, "", "web", "4");
  lab.h.RunUntilIdle();
  REQUIRE(lab.h.api.evictions == std::vector<std::string>{"web/low"});
  REQUIRE(lab.h.s->NominatedNodeOf("web/high") == "n1");
  // A web pod of lower priority that only n1 would take: beside the nominated pod it would make
  // n1 hold two web pods and n2 none, more than the nominated pod's maxSkew allows.
  add("follower", 0, "n1", "web", "0");
  lab.h.RunUntilIdle();
  CHECK(lab.NodeOf("web/follower").empty());
  // The victim leaves: the nominated pod takes its node; the follower may join it then.
  lab.h.s->OnPodDelete("web/low");
  lab.h.api.bound.erase("web/low");
  lab.h.clock.Advance(absl::Minutes(6));
  lab.h.RunUntilIdle();
  CHECK(lab.NodeOf("web/high") == "n1");
  CHECK(lab.NodeOf("web/follower") == "n1");
  CHECK(lab.h.api.evictions.size() == 1);  // no second round
}

TEST_CASE("disruption ledger: workloads across recreations, counts in a window, pruning", "[consolidation]") {
  Pod a = PodBuilder("train-0", "ml").Build();
  CHECK(WorkloadKey(a) == "Pod/ml/train-0");
  a.meta.owner_references.push_back({.kind = "Job", .name = "train", .uid = "u1", .controller = true});
  CHECK(WorkloadKey(a) == "Job/u1");
  a.meta.labels["batch.kubernetes.io/job-completion-index"] = "3";
  CHECK(WorkloadKey(a) == "Job/u1#3");
  DisruptionLedger ledger;
  const absl::Time t0 = absl::FromUnixSeconds(kStart);
  ledger.Record("w", DisruptionKind::kMove, t0);
  CHECK(ledger.Count("w", DisruptionKind::kMove, t0 - absl::Hours(1)) == 1);
  ledger.Record("w", DisruptionKind::kPreemption, t0 + absl::Minutes(1));
  CHECK(ledger.Count("w", DisruptionKind::kPreemption, t0) == 1);
  ledger.Record("w", DisruptionKind::kMove, t0 + absl::Minutes(30));
  CHECK(ledger.Count("w", DisruptionKind::kMove, t0) == 2);
  CHECK(ledger.Count("w", DisruptionKind::kMove, t0 + absl::Minutes(10)) == 1);
  CHECK(ledger.Count("other", DisruptionKind::kMove, t0) == 0);
  ledger.Prune(t0 + absl::Minutes(5));
  CHECK(ledger.Count("w", DisruptionKind::kMove, t0 - absl::Hours(1)) == 1);
  CHECK(ledger.Count("w", DisruptionKind::kPreemption, t0 - absl::Hours(1)) == 0);
}

TEST_CASE("Consolidation: a move window longer than the 24 h the scheduler remembers is refused",
          "[consolidation]") {
  CHECK(consolidation::Consolidation::ParseArgs(YAML::Load("{moveWindowSeconds: 86400}")).ok());
  auto longer = consolidation::Consolidation::ParseArgs(YAML::Load("{moveWindowSeconds: 86401}"));
  REQUIRE_FALSE(longer.ok());
  CHECK(std::string(longer.status().message()) ==
        "Consolidation: args.moveWindowSeconds: want an integer in 1..86400, got \"86401\"");
}

TEST_CASE("disruption rules: the pod's word, then its PriorityClass, then its Queue", "[consolidation]") {
  PriorityClass movable_class;
  movable_class.meta.name = "movable";
  movable_class.meta.annotations[std::string(preemption::kMovableAnnotation)] = "true";
  movable_class.meta.annotations[std::string(preemption::kMinRunSecondsAnnotation)] = "120";
  PriorityClass junk;
  junk.meta.name = "junk";
  junk.meta.annotations[std::string(preemption::kMinRunSecondsAnnotation)] = "soon";
  auto queues = std::make_shared<QueueDirectory>();
  Queue q;
  q.meta.name = "research";
  q.namespaces = {"research"};
  q.movable = true;
  q.min_run_seconds = 900;
  REQUIRE(queues->Set({q}).ok());
  const preemption::DisruptionRules rules({movable_class, junk}, queues);

  Pod plain = PodBuilder("p", "prod").Build();
  CHECK_FALSE(rules.Movable(plain));
  Pod by_class = plain;
  by_class.priority_class_name = "movable";
  CHECK(rules.Movable(by_class));
  Pod refuses = by_class;
  refuses.meta.annotations[std::string(preemption::kMovableAnnotation)] = "false";
  CHECK_FALSE(rules.Movable(refuses));
  Pod by_queue = PodBuilder("r", "research").Build();
  CHECK(rules.Movable(by_queue));
  CHECK(rules.MinRunTime(by_queue) == absl::Seconds(900));
  CHECK(rules.MinRunTime(by_class) == absl::Seconds(120));
  Pod in_junk = plain;
  in_junk.priority_class_name = "junk";
  CHECK(rules.MinRunTime(in_junk) == std::nullopt);  // unreadable: sets nothing
  by_queue.start_time = absl::FromUnixSeconds(kStart);
  CHECK_FALSE(rules.RanLongEnough(by_queue, absl::FromUnixSeconds(kStart + 899), absl::ZeroDuration()));
  CHECK(rules.RanLongEnough(by_queue, absl::FromUnixSeconds(kStart + 900), absl::ZeroDuration()));
  CHECK(rules.RanLongEnough(plain, absl::FromUnixSeconds(kStart), absl::ZeroDuration()));
}

}  // namespace consolidation_test
}  // namespace tessel
