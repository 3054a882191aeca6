// Resource flavors (scheduler/quota/flavor.h, docs/flavors.md): decoding ResourceFlavors and a
// Queue's spec.resourceGroups, where a pod's charge goes on a node, quota per (queue, flavor)
// with cohort borrowing per flavor, and in the whole core: a pod takes the first flavor of its
// queue where both quota and nodes have room, a higher-priority pod preempts on an earlier
// flavor (whenCanPreempt: Preempt) or takes a later one (TryNextFlavor, the default), a
// preempted pod comes back on the next flavor, and a node relabelled into another flavor takes
// its pods' usage with it.
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "harness/core_harness.h"
#include "nlohmann/json.hpp"
#include "scheduler/core/scheduler.h"
#include "scheduler/quota/flavor.h"
#include "scheduler/quota/queue.h"
#include "scheduler/quota/quota_tracker.h"
#include "scheduler/quota/quota_usage.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/strings.h"

namespace tessel {
using Pools = std::map<std::string, int>;  // pods per node pool
namespace flavor_test {

using nlohmann::json;
using testing::NodeBuilder;
using testing::PodBuilder;

json FlavorObject(std::string name, json node_labels, json extra = json::object()) {
  json spec = {{"nodeLabels", std::move(node_labels)}};
  spec.update(extra);
  return json{{"apiVersion", "tessel.io/v1alpha1"},
              {"kind", "ResourceFlavor"},
              {"metadata", {{"name", std::move(name)}}},
              {"spec", std::move(spec)}};
}

json QueueObject(std::string name, json spec) {
  return json{{"apiVersion", "tessel.io/v1alpha1"},
              {"kind", "Queue"},
              {"metadata", {{"name", std::move(name)}}},
              {"spec", std::move(spec)}};
}

// One resource group covering nvidia.com/gpu: flavors in order, each {name, nominal[, borrowing]}.
struct FlavorQuota {
  std::string name;
  std::string nominal;
  std::string borrowing;  // "" = unlimited
};
json GpuGroups(const std::vector<FlavorQuota>& flavors) {
  json list = json::array();
  for (const FlavorQuota& f : flavors) {
    json r = {{"name", "nvidia.com/gpu"}, {"nominalQuota", f.nominal}};
    if (!f.borrowing.empty()) r["borrowingLimit"] = f.borrowing;
    list.push_back({{"name", f.name}, {"resources", json::array({r})}});
  }
  return json::array({{{"coveredResources", {"nvidia.com/gpu"}}, {"flavors", std::move(list)}}});
}

Queue MustQueue(const json& object) {
  absl::StatusOr<Queue> q = DecodeQueue(object);
  INFO(q.status().message());
  REQUIRE(q.ok());
  return *q;
}

FlavorMap PoolFlavors() {
  FlavorMap out;
  for (const std::string name : {"reserved", "on-demand", "spot"}) {
    absl::StatusOr<ResourceFlavor> f = DecodeResourceFlavor(FlavorObject(name, {{"pool", name}}));
    REQUIRE(f.ok());
    out[name] = *f;
  }
  return out;
}

TEST_CASE("ResourceFlavor and spec.resourceGroups decode; bad input names the object and field",
          "[flavor]") {
  absl::StatusOr<ResourceFlavor> f = DecodeResourceFlavor(FlavorObject(
      "spot", {{"pool", "spot"}},
      {{"nodeTaints", {{{"key", "spot"}, {"value", "true"}, {"effect", "NoSchedule"}}}},
       {"tolerations", {{{"key", "spot"}, {"operator", "Exists"}}}}}));
  REQUIRE(f.ok());
  CHECK(f->HasNode({{"pool", "spot"}, {"zone", "a"}}));
  CHECK_FALSE(f->HasNode({{"pool", "reserved"}}));
  CHECK(f->Admits({}));  // the flavor's own toleration covers its taint
  REQUIRE(f->node_taints.size() == 1);

  auto bad_taint = DecodeResourceFlavor(FlavorObject("x", json::object(), {{"nodeTaints", {{{"key", "k"}, {"effect", "Sometimes"}}}}}));
  REQUIRE_FALSE(bad_taint.ok());
  CHECK(bad_taint.status().message() ==
        "ResourceFlavor x: spec.nodeTaints[0].effect: unknown taint effect \"Sometimes\" (want "
        "NoSchedule, PreferNoSchedule or NoExecute)");

  const Queue q = MustQueue(QueueObject(
      "team-a", {{"cohort", "batch"},
                 {"resourceGroups", GpuGroups({{"reserved", "4", "2"}, {"spot", "1.5", ""}})},
                 {"flavorFungibility", {{"whenCanPreempt", "Preempt"}}}}));
  REQUIRE(q.flavored());
  CHECK(q.resource_groups[0].flavors == std::vector<std::string>{"reserved", "spot"});
  CHECK(q.nominal.Get("nvidia.com/gpu@reserved") == 4000);
  CHECK(q.nominal.Get("nvidia.com/gpu@spot") == 1500);
  CHECK(q.borrowing_limit.at("nvidia.com/gpu@reserved") == 2000);
  CHECK(q.when_can_preempt == WhenCanPreempt::kPreempt);
  CHECK(q.when_can_borrow == WhenCanBorrow::kBorrow);

  auto error = [](json spec) {
    absl::StatusOr<Queue> bad = DecodeQueue(QueueObject("team-b", std::move(spec)));
    REQUIRE_FALSE(bad.ok());
    return std::string(bad.status().message());
  };
  CHECK(error({{"nominalQuota", {{"cpu", "1"}}}, {"resourceGroups", GpuGroups({{"spot", "1", ""}})}}) ==
        "Queue team-b: spec.nominalQuota: a Queue has either flat quotas or spec.resourceGroups, not both");
  CHECK(error({{"resourceGroups", GpuGroups({{"spot", "1", "1"}})}}) ==
        "Queue team-b: spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: is only "
        "meaningful with spec.cohort");
  CHECK(error({{"resourceGroups", GpuGroups({{"spot", "1", ""}, {"spot", "2", ""}})}}) ==
        "Queue team-b: spec.resourceGroups[0].flavors[1].name: flavor spot is listed twice");
  CHECK(error({{"resourceGroups", GpuGroups({{"spot", "-1", ""}})}}) ==
        "Queue team-b: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: must not be negative");
  json wrong = GpuGroups({{"spot", "1", ""}});
  wrong[0]["flavors"][0]["resources"][0]["name"] = "cpu";
  CHECK(error({{"resourceGroups", wrong}}) ==
        "Queue team-b: spec.resourceGroups[0].flavors[0].resources[0].name: \"cpu\" is not one of "
        "the group's coveredResources");
  json lending = GpuGroups({{"spot", "1", ""}});
  lending[0]["flavors"][0]["resources"][0]["lendingLimit"] = "2";
  CHECK(error({{"cohort", "c"}, {"resourceGroups", lending}}) ==
        "Queue team-b: spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: lends 2 but "
        "the nominal quota is 1");
  CHECK(error({{"resourceGroups", GpuGroups({{"spot", "1", ""}})},
               {"flavorFungibility", {{"whenCanPreempt", "Always"}}}}) ==
        "Queue team-b: spec.flavorFungibility.whenCanPreempt: \"Always\" is not one of TryNextFlavor, Preempt");
}

TEST_CASE("a pod's charge goes to the first of its queue's flavors its node belongs to",
          "[flavor]") {
  QueueDirectory dir;
  const Queue flavored = MustQueue(QueueObject(
      "team-a", {{"namespaces", {"a"}}, {"resourceGroups", GpuGroups({{"reserved", "4", ""}, {"spot", "8", ""}})}}));
  REQUIRE(dir.Set({flavored}, {}, PoolFlavors()).ok());
  const Queue& q = *dir.Find("team-a");
  Resources charge;
  charge.Set("nvidia.com/gpu", 2000);
  charge.Set("cpu", 1000);

  const FlavorPlacement spot = dir.Place(q, charge, {{"pool", "spot"}});
  CHECK(spot.in_flavor);
  CHECK(spot.tier == 1);
  CHECK(spot.charge.Get("nvidia.com/gpu@spot") == 2000);
  CHECK(spot.charge.Get("cpu") == 0);  // not covered: not limited
  CHECK(dir.Place(q, charge, {{"pool", "reserved"}}).tier == 0);

  const FlavorPlacement none = dir.Place(q, charge, {{"pool", "on-demand"}});
  CHECK_FALSE(none.in_flavor);
  CHECK(none.why == "queue team-a: the node is in none of its flavors for nvidia.com/gpu (reserved, spot)");
  Resources cpu_only;
  cpu_only.Set("cpu", 1000);
  CHECK(dir.Place(q, cpu_only, {{"pool", "on-demand"}}).in_flavor);  // it uses no covered resource

  SECTION("a flavor whose node taints the pod does not tolerate is refused") {
    FlavorMap tainted = PoolFlavors();
    tainted["spot"].node_taints.push_back(Taint{.key = "spot", .value = "true"});
    REQUIRE(dir.Set({flavored}, {}, tainted).ok());
    const std::vector<Toleration> none_tolerated;
    const FlavorPlacement refused = dir.Place(*dir.Find("team-a"), charge, {{"pool", "spot"}}, &none_tolerated);
    CHECK_FALSE(refused.in_flavor);
    CHECK(refused.why == "queue team-a: the pod does not tolerate the node taints of flavor spot");
  }
}

TEST_CASE("quota holds per (queue, flavor), and cohorts lend per flavor", "[flavor]") {
  QueueDirectory dir;
  REQUIRE(dir.Set({MustQueue(QueueObject("team-a", {{"namespaces", {"a"}},
                                                    {"cohort", "batch"},
                                                    {"resourceGroups", GpuGroups({{"reserved", "4", "2"}, {"spot", "2", "0"}})}})),
                   MustQueue(QueueObject("team-b", {{"namespaces", {"b"}},
                                                    {"cohort", "batch"},
                                                    {"resourceGroups", GpuGroups({{"reserved", "4", ""}, {"spot", "8", ""}})}}))},
                  {}, PoolFlavors())
              .ok());
  QuotaTracker t(&dir);
  auto gpus = [](std::string_view flavor, int n) {
    Resources r;
    r.Set(FlavoredResource("nvidia.com/gpu", flavor), n * 1000);
    return r;
  };
  t.AddUsage("team-a", gpus("reserved", 4));
  // team-a borrows 2 of team-b's idle reserved GPUs, not more (its borrowing limit).
  CHECK(t.Check("team-a", gpus("reserved", 2)).fits);
  CHECK(t.Check("team-a", gpus("reserved", 2)).borrows);
  const QuotaVerdict over = t.Check("team-a", gpus("reserved", 3));
  CHECK_FALSE(over.fits);
  CHECK(over.reason == "queue team-a: nvidia.com/gpu in flavor reserved 7 of nominal 4; its borrowing limit is 2");
  // Spot quota is separate: team-b's idle spot does not lend to team-a beyond its limit 0.
  CHECK(t.Check("team-a", gpus("spot", 2)).fits);
  CHECK_FALSE(t.Check("team-a", gpus("spot", 3)).fits);
  // team-a now borrows 2 of team-b's reserved quota: team-b has 2 left without reclaiming.
  t.AddUsage("team-a", gpus("reserved", 2));
  CHECK(t.Check("team-b", gpus("reserved", 2)).fits);
  const QuotaVerdict b_over = t.Check("team-b", gpus("reserved", 3));
  CHECK_FALSE(b_over.fits);
  CHECK(b_over.reason ==
        "queue team-b: nvidia.com/gpu in flavor reserved 3 of nominal 4; other queues of the cohort "
        "batch borrow 2 of its quota");

  SECTION("the report splits usage per flavor and sums it per resource") {
    QueueUsage usage;
    usage["team-a"] = t.Usage("team-a");
    const std::vector<QueueReport> reports = ReportQueues(dir, usage, {});
    const QueueReport& a = reports.front();
    CHECK(a.usage.Get("nvidia.com/gpu") == 6000);
    CHECK(a.nominal.Get("nvidia.com/gpu") == 6000);
    CHECK(a.borrowed.Get("nvidia.com/gpu") == 2000);
    REQUIRE(a.flavors.size() == 2);
    CHECK(a.flavors[0].name == "reserved");
    CHECK(a.flavors[0].usage.Get("nvidia.com/gpu") == 6000);
    CHECK(a.flavors[0].borrowed.Get("nvidia.com/gpu") == 2000);
    CHECK(a.flavors[1].name == "spot");
    CHECK(a.flavors[1].nominal.Get("nvidia.com/gpu") == 2000);
    CHECK(a.flavors[1].usage.IsZero());
  }
}

// The whole core with the default profile: nodes in pools reserved, on-demand and spot.
struct FlavoredCluster {
  FlavoredCluster() : harness({.observer = nullptr}) {
    for (const std::string pool : {"reserved", "on-demand", "spot"}) {
      REQUIRE(harness.ApplyQueueObject(FlavorObject(pool, {{"pool", pool}})).ok());
    }
    api.on_evict = [this](const Pod& pod, std::string_view) {
      Pod leaving = pod;
      leaving.meta.deletion_timestamp = clock.Now();
      s->OnPodUpdate(std::move(leaving));
      evicted.push_back(pod);
      return absl::OkStatus();
    };
  }
  void AddNode(std::string name, std::string pool, int gpus = 8) {
    harness.AddNode(NodeBuilder(std::move(name))
                        .Allocatable(StrCat("cpu:64,memory:256Gi,nvidia.com/gpu:", gpus))
                        .Label("pool", std::move(pool))
                        .Build());
  }
  // A PodGroup of `members` pods of `gpus` GPUs each (its topology key, if any).
  void AddGang(std::string ns, std::string name, int members, int gpus, int32_t priority = 0,
               std::string topology_key = "") {
    json pg = {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
               {"kind", "PodGroup"},
               {"metadata", {{"name", name}, {"namespace", ns}}},
               {"spec", {{"minMember", members}}}};
    if (!topology_key.empty()) pg["metadata"]["annotations"] = {{"tessel.io/topology-key", topology_key}};
    REQUIRE(harness.ApplyGangObject(pg).ok());
    for (int i = 0; i < members; ++i) {
      Pod member = PodBuilder(StrCat(name, "-", i), ns).Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus)).Priority(priority).Build();
      member.meta.labels["scheduling.x-k8s.io/pod-group"] = name;
      harness.AddPod(std::move(member));
    }
  }
  void AddQueue(std::string name, json spec) { REQUIRE(harness.ApplyQueueObject(QueueObject(std::move(name), std::move(spec))).ok()); }
  void AddPod(std::string ns, std::string name, int32_t priority = 0, int gpus = 1) {
    harness.AddPod(PodBuilder(std::move(name), std::move(ns))
                       .Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus))
                       .Priority(priority)
                       .Build());
  }
  // Rounds in which evicted pods go away and come back as new pods (as their Job's controller
  // would create them again), until nothing changes.
  void Run(int rounds = 6) {
    for (int i = 0; i < rounds; ++i) {
      harness.RunUntilIdle();
      for (const Pod& gone : std::exchange(evicted, {})) {
        s->OnPodDelete(gone.Key());
        Pod again = PodBuilder(StrCat(gone.meta.name, "-again"), gone.meta.namespace_)
                        .Requests(StrCat("cpu:1,nvidia.com/gpu:", gone.requests.Get(kNvidiaGpu) / 1000))
                        .Priority(gone.PriorityValue())
                        .Build();
        s->OnPodAdd(std::move(again));
      }
      clock.Advance(absl::Minutes(6));
    }
    harness.RunUntilIdle();
  }
  // Pods of namespace `ns` per node pool.
  std::map<std::string, int> PoolsOf(std::string_view ns) const {
    std::map<std::string, int> out;
    for (const std::string& name : harness.cache.NodeNames()) {
      const std::optional<NodeInfo> info = harness.cache.GetNodeInfo(name);
      for (const PodRef& p : info->pods()) {
        if (p->meta.namespace_ == ns && !p->meta.deletion_timestamp.has_value()) {
          ++out[info->node()->meta.labels.at("pool")];
        }
      }
    }
    return out;
  }

  testing::CoreHarness harness;
  testing::FakeClusterApi& api = harness.api;
  ManualClock& clock = harness.clock;
  std::unique_ptr<Scheduler>& s = harness.s;
  std::vector<Pod> evicted;
};


}  // namespace flavor_test
}  // namespace tessel

namespace Catch {
template <>
struct StringMaker<tessel::Pools> {
  static std::string convert(const tessel::Pools& pools) {
    std::string out;
    for (const auto& [pool, n] : pools) out += tessel::StrCat(out.empty() ? "" : ", ", pool, ": ", n);
    return "{" + out + "}";
  }
};
}  // namespace Catch

namespace tessel {
namespace flavor_test {

TEST_CASE("a pod takes the first flavor with both quota and room: fallback on quota and on "
          "capacity, never a flavor its queue does not list",
          "[flavor][core]") {
  FlavoredCluster c;
  c.AddNode("r1", "reserved");
  c.AddNode("o1", "on-demand");
  c.AddNode("s1", "spot");
  SECTION("on quota: 4 of reserved's 8 GPUs are the queue's, the rest goes to spot") {
    c.AddQueue("low", {{"namespaces", {"low"}}, {"resourceGroups", GpuGroups({{"reserved", "4", ""}, {"spot", "8", ""}})}});
    for (int i = 0; i < 10; ++i) c.AddPod("low", StrCat("j", i));
    c.Run();
    CHECK(c.PoolsOf("low") == Pools{{"reserved", 4}, {"spot", 6}});
  }
  SECTION("on capacity: reserved's quota is larger than its nodes") {
    c.AddQueue("low", {{"namespaces", {"low"}}, {"resourceGroups", GpuGroups({{"reserved", "16", ""}, {"spot", "8", ""}})}});
    for (int i = 0; i < 12; ++i) c.AddPod("low", StrCat("j", i));
    c.Run();
    CHECK(c.PoolsOf("low") == Pools{{"reserved", 8}, {"spot", 4}});
  }
  SECTION("a pod past every flavor's quota waits, over quota") {
    c.AddQueue("low", {{"namespaces", {"low"}}, {"resourceGroups", GpuGroups({{"reserved", "1", ""}, {"spot", "1", ""}})}});
    for (int i = 0; i < 3; ++i) c.AddPod("low", StrCat("j", i));
    c.Run();
    CHECK(c.PoolsOf("low") == Pools{{"reserved", 1}, {"spot", 1}});
  }
}

TEST_CASE("high-priority pods preempt low-priority ones on reserved and overflow to on-demand; "
          "the preempted pods come back on spot",
          "[flavor][core]") {
  FlavoredCluster c;
  c.AddNode("r1", "reserved");
  c.AddNode("o1", "on-demand");
  c.AddNode("s1", "spot");
  c.AddQueue("low", {{"namespaces", {"low"}}, {"resourceGroups", GpuGroups({{"reserved", "8", ""}, {"spot", "8", ""}})}});
  for (int i = 0; i < 8; ++i) c.AddPod("low", StrCat("j", i), 0);
  c.Run();
  REQUIRE(c.PoolsOf("low") == Pools{{"reserved", 8}});

  SECTION("whenCanPreempt: Preempt frees reserved first") {
    c.AddQueue("high", {{"namespaces", {"high"}},
                        {"resourceGroups", GpuGroups({{"reserved", "4", ""}, {"on-demand", "8", ""}})},
                        {"flavorFungibility", {{"whenCanPreempt", "Preempt"}}}});
    for (int i = 0; i < 6; ++i) c.AddPod("high", StrCat("h", i), 1000);
    c.Run();
    CHECK(c.PoolsOf("high") == Pools{{"reserved", 4}, {"on-demand", 2}});
    CHECK(c.PoolsOf("low") == Pools{{"reserved", 4}, {"spot", 4}});  // 4 preempted, back on spot
  }
  SECTION("whenCanPreempt: TryNextFlavor (the default) takes on-demand's free room instead") {
    c.AddQueue("high", {{"namespaces", {"high"}},
                        {"resourceGroups", GpuGroups({{"reserved", "4", ""}, {"on-demand", "8", ""}})}});
    for (int i = 0; i < 6; ++i) c.AddPod("high", StrCat("h", i), 1000);
    c.Run();
    CHECK(c.PoolsOf("high") == Pools{{"on-demand", 6}});
    CHECK(c.PoolsOf("low") == Pools{{"reserved", 8}});
    SECTION("and preempts on reserved, the first flavor, once on-demand is full") {
      for (int i = 6; i < 9; ++i) c.AddPod("high", StrCat("h", i), 1000);
      c.Run();
      CHECK(c.PoolsOf("high") == Pools{{"on-demand", 8}, {"reserved", 1}});
      CHECK(c.PoolsOf("low") == Pools{{"reserved", 7}, {"spot", 1}});
    }
  }
}

TEST_CASE("a gang takes one flavor whole, and its topology key applies within that flavor",
          "[flavor][core][gang]") {
  FlavoredCluster c;
  c.AddNode("r1", "reserved");
  c.AddNode("s1", "spot");
  c.AddNode("s2", "spot");
  c.AddQueue("low", {{"namespaces", {"low"}}, {"resourceGroups", GpuGroups({{"reserved", "8", ""}, {"spot", "16", ""}})}});
  auto gang = [&](std::string name, int members, std::string topology_key = "") {
    c.AddGang("low", std::move(name), members, 4, 0, std::move(topology_key));
  };
  SECTION("reserved has room for two of three members: the gang goes to spot whole") {
    gang("train", 3);
    c.Run();
    CHECK(c.PoolsOf("low") == Pools{{"spot", 3}});
  }
  SECTION("a gang that fits reserved stays there") {
    gang("small", 2);
    c.Run();
    CHECK(c.PoolsOf("low") == Pools{{"reserved", 2}});
  }
  SECTION("compact placement within the flavor: one spot node") {
    c.harness.AddNode(NodeBuilder("s1").Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8").Label("pool", "spot").Label("rack", "a").Build());
    c.harness.AddNode(NodeBuilder("s2").Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8").Label("pool", "spot").Label("rack", "b").Build());
    c.harness.AddNode(NodeBuilder("r1").Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8").Label("pool", "reserved").Label("rack", "a").Build());
    gang("first", 1);  // takes half of r1
    c.Run();
    gang("pair", 2, "rack");  // r1 has room for one: the pair goes to one rack of spot
    c.Run();
    const std::map<std::string, int> pools = c.PoolsOf("low");
    CHECK(pools == Pools{{"reserved", 1}, {"spot", 2}});
  }
}

TEST_CASE("a gang whose total is its first flavor's whole nominal quota takes that flavor",
          "[flavor][core][gang]") {
  // The planner counts how many members a node hosts member by member: each one placed leaves
  // one fewer of the gang still to place, so the last of 3 is not refused for a 4th.
  FlavoredCluster c;
  c.AddNode("s1", "spot", 4);
  c.AddNode("o1", "on-demand", 8);
  c.AddQueue("low", {{"namespaces", {"low"}}, {"resourceGroups", GpuGroups({{"spot", "3", ""}, {"on-demand", "8", ""}})}});
  c.AddGang("low", "train", 3, 1);
  c.Run();
  CHECK(c.PoolsOf("low") == Pools{{"spot", 3}});
}

// Spot of two kinds of node: s-sliced, one GPU time-sliced into 4 replicas (a replica charges 250
// milli-GPU), and s-whole, 4 whole GPUs; reserved: r1, 8 GPUs. Queue "low" (spot nominal 2, then
// reserved, whenCanBorrow: TryNextFlavor) borrows in cohort lab from "lender" (spot 4).
void SpotOfTwoKinds(FlavoredCluster& c, std::string low_reserved, std::string lender_reserved) {
  c.harness.AddNode(NodeBuilder("s-sliced").Allocatable("cpu:64,memory:256Gi").TimeSliced(1, 4).Label("pool", "spot").Build());
  c.AddNode("s-whole", "spot", 4);
  c.AddNode("r1", "reserved", 8);
  c.AddQueue("low", {{"namespaces", {"low"}},
                     {"cohort", "lab"},
                     {"resourceGroups", GpuGroups({{"spot", "2", ""}, {"reserved", low_reserved, ""}})},
                     {"flavorFungibility", {{"whenCanBorrow", "TryNextFlavor"}}}});
  c.AddQueue("lender", {{"namespaces", {"lender"}},
                        {"cohort", "lab"},
                        {"resourceGroups", GpuGroups({{"spot", "4", ""}, {"reserved", lender_reserved, ""}})}});
}

TEST_CASE("under TryNextFlavor a gang does not borrow on a flavor for the quota time-sliced nodes "
          "would charge, when it may land on whole GPUs there", "[flavor][core][gang]") {
  // Spot: a time-sliced node (a replica charges 250 milli-GPU) and a node of whole GPUs. 3 members
  // of 1 GPU are 750 milli-GPU of quota on the first and 3 GPUs on the second, above spot's
  // nominal 2: only the time-sliced node keeps the gang within its quota.
  FlavoredCluster c;
  SpotOfTwoKinds(c, /*low_reserved=*/"8", /*lender_reserved=*/"0");
  c.AddGang("low", "train", 3, 1);
  c.Run();
  std::map<std::string, int> nodes;
  for (const std::string& name : c.harness.cache.NodeNames()) {
    const std::optional<NodeInfo> info = c.harness.cache.GetNodeInfo(name);
    for (const PodRef& p : info->pods()) {
      if (p->meta.namespace_ == "low") ++nodes[name];
    }
  }
  CHECK(nodes == std::map<std::string, int>{{"s-sliced", 3}});
}

// A flavor's nodes may charge differently (a time-sliced replica a quarter GPU): a gang that
// borrows on spot only on its whole GPUs may still spread over both kinds of spot node, before it
// takes a later flavor (composition seed 3518 of 3,000 + 1,500).
TEST_CASE("under TryNextFlavor a gang that borrows on a flavor anyway uses that flavor's nodes "
          "where it would not, before a later flavor",
          "[flavor][core][gang][quota]") {
  // 6 members of 1 GPU: 4 fit the time-sliced node (1 GPU of quota), 4 the node of whole GPUs (6
  // GPUs there, above spot's nominal 2): neither kind holds the gang, both together do, borrowing
  // 1 GPU on spot. Reserved (nominal 4) would hold it whole, borrowing 2, and comes later.
  FlavoredCluster c;
  SpotOfTwoKinds(c, /*low_reserved=*/"4", /*lender_reserved=*/"4");
  c.AddGang("low", "train", 6, 1);
  c.Run();
  CHECK(c.PoolsOf("low") == Pools{{"spot", 6}});
}

TEST_CASE("a gang's members placed after it (beyond minMember) join the flavor it runs on",
          "[flavor][core][gang]") {
  FlavoredCluster c;
  c.AddNode("r1", "reserved");
  c.AddNode("s1", "spot");
  c.AddQueue("low", {{"namespaces", {"low"}}, {"resourceGroups", GpuGroups({{"reserved", "16", ""}, {"spot", "16", ""}})}});
  // minMember 2 of three 4-GPU members: two fill r1's 8 GPUs; the third finds room only on spot.
  REQUIRE(c.harness
              .ApplyGangObject(json{{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                                    {"kind", "PodGroup"},
                                    {"metadata", {{"name", "elastic"}, {"namespace", "low"}}},
                                    {"spec", {{"minMember", 2}}}})
              .ok());
  auto member = [&](int i) {
    Pod m = PodBuilder(StrCat("elastic-", i), "low").Requests("cpu:1,nvidia.com/gpu:4").Build();
    m.meta.labels["scheduling.x-k8s.io/pod-group"] = "elastic";
    c.harness.AddPod(std::move(m));
  };
  member(0);
  member(1);
  c.Run();
  REQUIRE(c.PoolsOf("low") == Pools{{"reserved", 2}});
  member(2);  // a later member: reserved is full
  c.Run();
  CHECK(c.PoolsOf("low") == Pools{{"reserved", 2}});  // it waits for reserved, not spot
}

// Gang preemption plans within one flavor at a time, as the gang is placed (docs/flavors.md).
TEST_CASE("a gang preempts within one flavor: never for room split across flavors, and on its "
          "second flavor when the first cannot hold it",
          "[flavor][core][gang][preemption]") {
  FlavoredCluster c;
  c.AddNode("r1", "reserved");
  c.AddNode("s1", "spot");
  c.AddQueue("low", {{"namespaces", {"low"}}, {"resourceGroups", GpuGroups({{"reserved", "8", ""}, {"spot", "16", ""}})}});
  c.AddQueue("high", {{"namespaces", {"high"}}, {"resourceGroups", GpuGroups({{"reserved", "16", ""}, {"spot", "16", ""}})}});
  SECTION("evicting would free one 8-GPU node per flavor: a 2-member gang evicts nothing") {
    for (int i = 0; i < 16; ++i) c.AddPod("low", StrCat("j", i));
    c.Run();
    REQUIRE(c.PoolsOf("low") == Pools{{"reserved", 8}, {"spot", 8}});
    c.AddGang("high", "train", 2, 8, 1000);
    c.harness.RunUntilIdle();
    CHECK(c.evicted.empty());
    CHECK(c.PoolsOf("high").empty());
    CHECK(c.PoolsOf("low") == Pools{{"reserved", 8}, {"spot", 8}});
  }
  SECTION("reserved has one node, spot two: the gang preempts on spot only") {
    c.AddNode("s2", "spot");
    for (int i = 0; i < 24; ++i) c.AddPod("low", StrCat("j", i));
    c.Run();
    REQUIRE(c.PoolsOf("low") == Pools{{"reserved", 8}, {"spot", 16}});
    c.AddGang("high", "train", 2, 8, 1000);
    c.harness.RunUntilIdle();
    REQUIRE(c.evicted.size() == 16);
    for (const Pod& v : c.evicted) {
      CAPTURE(v.Key(), v.node_name);
      CHECK(v.node_name.rfind("s", 0) == 0);
    }
    c.Run();
    CHECK(c.PoolsOf("high") == Pools{{"spot", 2}});
    CHECK(c.PoolsOf("low") == Pools{{"reserved", 8}});  // the victims' new pods find no room
  }
}

// A gang and a single pod of its shape get the same flavor decision (node_tiers.h ChooseTier,
// issue 38 defect 1): with whenCanPreempt: Preempt a gang frees room on its earlier flavor
// before it takes a later flavor's free room, and waits for its victims there.
TEST_CASE("a gang preempts on its earlier flavor first under whenCanPreempt: Preempt, as pods do",
          "[flavor][core][gang][preemption]") {
  FlavoredCluster c;
  c.AddNode("r1", "reserved");
  c.AddNode("o1", "on-demand");
  c.AddQueue("low", {{"namespaces", {"low"}}, {"resourceGroups", GpuGroups({{"reserved", "8", ""}})}});
  for (int i = 0; i < 8; ++i) c.AddPod("low", StrCat("j", i), 0);
  c.Run();
  REQUIRE(c.PoolsOf("low") == Pools{{"reserved", 8}});
  c.AddQueue("high", {{"namespaces", {"high"}},
                      {"resourceGroups", GpuGroups({{"reserved", "4", ""}, {"on-demand", "8", ""}})},
                      {"flavorFungibility", {{"whenCanPreempt", "Preempt"}}}});
  const bool gang = GENERATE(false, true);
  CAPTURE(gang);
  if (gang) {
    c.AddGang("high", "train", 2, 1, 1000);
  } else {
    for (int i = 0; i < 2; ++i) c.AddPod("high", StrCat("h", i), 1000);
  }
  c.harness.RunUntilIdle();
  CHECK(c.evicted.size() == 2);
  for (const Pod& v : c.evicted) CHECK(v.node_name == "r1");
  CHECK(c.PoolsOf("high").empty());  // waiting for its victims, not on on-demand meanwhile
  c.Run();
  CHECK(c.PoolsOf("high") == Pools{{"reserved", 2}});
  CHECK(c.PoolsOf("low") == Pools{{"reserved", 6}});
}

// whenCanBorrow: TryNextFlavor judges a gang's borrowing by its total (issue 38, defect 2): the
// gang goes whole to the first flavor that takes it without borrowing; pods split as each fits.
TEST_CASE("under whenCanBorrow: TryNextFlavor a gang takes the first flavor its whole total fits "
          "without borrowing",
          "[flavor][core][gang][quota]") {
  FlavoredCluster c;
  c.AddNode("r1", "reserved");
  c.AddNode("s1", "spot");
  c.AddQueue("lender", {{"namespaces", {"lender"}}, {"cohort", "pool"}, {"resourceGroups", GpuGroups({{"reserved", "6", ""}})}});
  c.AddQueue("team", {{"namespaces", {"team"}},
                      {"cohort", "pool"},
                      {"resourceGroups", GpuGroups({{"reserved", "2", ""}, {"spot", "8", ""}})},
                      {"flavorFungibility", {{"whenCanBorrow", "TryNextFlavor"}}}});
  SECTION("four pods: two on reserved, within its nominal, two on spot") {
    for (int i = 0; i < 4; ++i) c.AddPod("team", StrCat("p", i));
    c.Run();
    CHECK(c.PoolsOf("team") == Pools{{"reserved", 2}, {"spot", 2}});
  }
  SECTION("a gang of four: whole on spot, borrowing nothing") {
    c.AddGang("team", "train", 4, 1);
    c.Run();
    CHECK(c.PoolsOf("team") == Pools{{"spot", 4}});
  }
  SECTION("a gang of two fits reserved's nominal: it stays there") {
    c.AddGang("team", "pair", 2, 1);
    c.Run();
    CHECK(c.PoolsOf("team") == Pools{{"reserved", 2}});
  }
}

// A seeded property over generated clusters and queues, checked with its own arithmetic (no
// tracker, no plugin): every pod of a flavored queue sits on a node of one of its queue's
// flavors; per (queue, flavor) the GPUs its pods hold stay within the nominal quota (no
// cohorts here); and a pod sits on a later flavor only when each earlier flavor of its queue
// had no room for it, in quota or on its nodes (pods are never removed, so what is full at the
// end was full when the pod was placed).
TEST_CASE("seeded: pods stay on their flavors, within each flavor's quota, in flavor order",
          "[flavor][core][property]") {
  const std::vector<std::string> pools = {"reserved", "on-demand", "spot"};
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    FlavoredCluster c;
    std::map<std::string, std::string> pool_of;  // node -> pool
    std::map<std::string, int> gpus_of;          // node -> GPUs
    for (int i = 0; i < pick(3, 6); ++i) {
      const std::string name = StrCat("n", i);
      pool_of[name] = pools[pick(0, 2)];
      gpus_of[name] = pick(1, 4) * 2;
      c.AddNode(name, pool_of[name], gpus_of[name]);
    }
    // Two queues, each with two or three of the flavors in a random order and random quotas.
    std::map<std::string, std::vector<std::pair<std::string, int>>> order;  // queue -> (flavor, nominal)
    for (const std::string queue : {"q1", "q2"}) {
      std::vector<std::string> mine = pools;
      std::shuffle(mine.begin(), mine.end(), rng);
      mine.resize(pick(2, 3));
      std::vector<FlavorQuota> quotas;
      for (const std::string& f : mine) {
        const int nominal = pick(0, 8);
        order[queue].push_back({f, nominal});
        quotas.push_back({f, StrCat(nominal), ""});
      }
      c.AddQueue(queue, {{"namespaces", {queue}}, {"resourceGroups", GpuGroups(quotas)}});
    }
    std::map<std::string, int> size_of;  // pod key -> GPUs
    for (int i = 0; i < pick(5, 25); ++i) {
      const std::string ns = pick(0, 1) == 0 ? "q1" : "q2";
      const int gpus = pick(1, 2);
      size_of[StrCat(ns, "/p", i)] = gpus;
      c.AddPod(ns, StrCat("p", i), 0, gpus);
    }
    c.Run(1);
    // What the cluster shows.
    std::map<std::string, int> used_on;                            // node -> GPUs held
    std::map<std::pair<std::string, std::string>, int> held;       // (queue, flavor) -> GPUs
    std::vector<std::pair<std::string, std::string>> placed;       // (pod key, node)
    for (const std::string& name : c.harness.cache.NodeNames()) {
      const std::optional<NodeInfo> info = c.harness.cache.GetNodeInfo(name);
      for (const PodRef& p : info->pods()) {
        const int gpus = size_of.at(p->Key());
        used_on[name] += gpus;
        held[{p->meta.namespace_, pool_of.at(name)}] += gpus;
        placed.push_back({p->Key(), name});
      }
    }
    for (const auto& [key, node] : placed) {
      CAPTURE(key, node);
      const std::string queue = key.substr(0, key.find('/'));
      const std::vector<std::pair<std::string, int>>& flavors = order.at(queue);
      const std::string& node_pool = pool_of.at(node);
      auto mine = std::find_if(flavors.begin(), flavors.end(), [&](const auto& f) { return f.first == node_pool; });
      REQUIRE(mine != flavors.end());  // on a node of one of its flavors
      for (auto earlier = flavors.begin(); earlier != mine; ++earlier) {
        const bool quota_full = held[{queue, earlier->first}] + size_of.at(key) > earlier->second;
        bool nodes_full = true;
        for (const auto& [n, pool] : pool_of) {
          if (pool == earlier->first && gpus_of.at(n) - used_on[n] >= size_of.at(key)) nodes_full = false;
        }
        CAPTURE(earlier->first);
        CHECK((quota_full || nodes_full));
      }
    }
    for (const auto& [queue, flavors] : order) {
      for (const auto& [flavor, nominal] : flavors) {
        CAPTURE(queue, flavor);
        CHECK(held[{queue, flavor}] <= nominal);
      }
    }
  }
}

// What the core reports for each pod that failed: its kind and message.
class FailureRecorder final : public SchedulingObserver {
 public:
  void PodScheduled(const Pod&, const std::string&) override {}
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override {
    failures[pod.Key()] = {kind, message};
  }
  std::map<std::string, std::pair<FailureKind, std::string>> failures;
};

TEST_CASE("a pod that tolerates none of its flavor's taints is told so, not to wait for quota",
          "[flavor][core]") {
  // Issue 38, defect 9: spot's quota is used up too, but waiting for it cannot help the pod.
  FailureRecorder rec;
  testing::CoreHarness h({.parallelism = 1, .observer = &rec});
  REQUIRE(h.ApplyQueueObject(FlavorObject("spot", {{"pool", "spot"}},
                                          {{"nodeTaints", {{{"key", "spot"}, {"value", "true"}, {"effect", "NoSchedule"}}}}}))
              .ok());
  REQUIRE(h.ApplyQueueObject(QueueObject("q", {{"namespaces", {"q"}}, {"resourceGroups", GpuGroups({{"spot", "1", ""}})}})).ok());
  h.AddNode(NodeBuilder("s1").Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8").Label("pool", "spot").Build());
  Pod tolerant = PodBuilder("tolerant", "q").Requests("cpu:1,nvidia.com/gpu:1").Build();
  tolerant.tolerations.push_back(Toleration{.key = "spot", .value = "true",
                                            .effect = TaintEffect::kNoSchedule});
  h.AddPod(std::move(tolerant));
  h.RunUntilIdle();
  REQUIRE(h.api.bound.contains("q/tolerant"));  // spot's quota is used up now
  SECTION("a pod without the toleration: Unschedulable, naming the taint") {
    h.AddPod(PodBuilder("intolerant", "q").Requests("cpu:1,nvidia.com/gpu:1").Build());
    h.RunUntilIdle();
    REQUIRE(rec.failures.contains("q/intolerant"));
    const auto& [kind, message] = rec.failures.at("q/intolerant");
    CHECK(kind == FailureKind::kUnschedulable);
    CHECK_THAT(message, Catch::Contains("does not tolerate the node taints of flavor"));
  }
  SECTION("a gang of such pods: Unschedulable too, as a pod") {
    REQUIRE(h.ApplyGangObject(json{{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                                   {"kind", "PodGroup"},
                                   {"metadata", {{"name", "pair"}, {"namespace", "q"}}},
                                   {"spec", {{"minMember", 2}}}})
                .ok());
    for (int i = 0; i < 2; ++i) {
      Pod member = PodBuilder(StrCat("pair-", i), "q").Requests("cpu:1,nvidia.com/gpu:1").Build();
      member.meta.labels["scheduling.x-k8s.io/pod-group"] = "pair";
      h.AddPod(std::move(member));
    }
    h.RunUntilIdle();
    REQUIRE(rec.failures.contains("q/pair-0"));
    const auto& [kind, message] = rec.failures.at("q/pair-0");
    CAPTURE(message);
    CHECK(kind == FailureKind::kUnschedulable);
    CHECK_THAT(message, Catch::Contains("does not tolerate the node taints of flavor"));
  }
  SECTION("a pod with it waits for quota, over quota") {
    Pod second = PodBuilder("second", "q").Requests("cpu:1,nvidia.com/gpu:1").Build();
    second.tolerations.push_back(Toleration{.key = "spot", .value = "true",
                                            .effect = TaintEffect::kNoSchedule});
    h.AddPod(std::move(second));
    h.RunUntilIdle();
    REQUIRE(rec.failures.contains("q/second"));
    CHECK(rec.failures.at("q/second").first == FailureKind::kQuotaExceeded);
  }
}

TEST_CASE("a node relabelled into another flavor takes its pods' usage with it", "[flavor]") {
  FlavoredCluster c;
  c.AddNode("r1", "reserved");
  c.AddNode("s1", "spot");
  c.AddQueue("low", {{"namespaces", {"low"}}, {"resourceGroups", GpuGroups({{"reserved", "4", ""}, {"spot", "4", ""}})}});
  for (int i = 0; i < 4; ++i) c.AddPod("low", StrCat("j", i));
  c.Run();
  REQUIRE(c.PoolsOf("low") == Pools{{"reserved", 4}});
  // r1 becomes a spot node: its 4 pods now use spot's whole quota, and reserved has none left
  // to use (no node), so a new pod waits although both quotas add up to 8.
  c.harness.AddNode(NodeBuilder("r1").Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8").Label("pool", "spot").Build());
  c.AddPod("low", "late");
  c.Run();
  CHECK(c.PoolsOf("low") == Pools{{"spot", 4}});
  const std::vector<QueueReport> report =
      ReportQueues(*c.s->Queues(), [&] {
        QueueUsage usage;
        for (const std::string& name : c.harness.cache.NodeNames()) {
          AddNodeUsage(*c.s->Queues(), *c.harness.cache.GetNodeInfo(name), usage);
        }
        return usage;
      }(), {});
  REQUIRE(report.front().flavors.size() == 2);
  CHECK(report.front().flavors[0].usage.IsZero());
  CHECK(report.front().flavors[1].usage.Get("nvidia.com/gpu") == 4000);
}

}  // namespace flavor_test
}  // namespace tessel
