// Explain (scheduler/core/explain.h): the per-node reasons and the nearest miss of a pending
// pod, by dry runs on the snapshot that change nothing: a preemption case (the pods holding the
// room, lowest priority and newest first, and whether the pod may preempt them), a quota case,
// a gang case, a pod that fits now, one no node could ever take, and a pod the scheduler does
// not hold.
#include <catch2/catch.hpp>

#include <set>

#include "nlohmann/json.hpp"
#include "harness/core_harness.h"
#include "plugins/registry.h"
#include "scheduler/testing/builders.h"
#include "scheduler/core/explain.h"

namespace tessel {
namespace explain_test {

using nlohmann::json;
using testing::NodeBuilder;
using testing::PodBuilder;

// The core harness (tests/harness/core_harness.h) over one node; nothing here runs a cycle.
struct World {
  testing::CoreHarness harness{{.start = absl::FromUnixSeconds(1000)}};
  Cache& cache = harness.cache;
  std::unique_ptr<Scheduler>& s = harness.s;

  World() { harness.AddNode(NodeBuilder("n1").Allocatable("cpu:32,memory:128Gi,nvidia.com/gpu:4").Build()); }
  void Bound(std::string name, std::string ns, std::string_view gpus, int32_t priority, int64_t created) {
    s->OnPodAdd(PodBuilder(std::move(name), std::move(ns))
                    .Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus))
                    .Priority(priority)
                    .Created(created)
                    .Node("n1")
                    .Build());
  }
  void Pending(Pod pod) { s->OnPodAdd(std::move(pod)); }
  std::set<std::string> CacheKeys() {
    std::set<std::string> out;
    const std::optional<NodeInfo> node = cache.GetNodeInfo("n1");
    REQUIRE(node.has_value());
    for (const PodRef& p : node->pods()) out.insert(p->Key());
    return out;
  }
};

TEST_CASE("explain: the pods that hold the room, and whether they may be preempted") {
  World w;
  w.Bound("b-0", "default", "2", 0, 100);
  w.Bound("b-1", "default", "2", 0, 200);
  const auto before = w.CacheKeys();
  SECTION("same priority: not preemptible") {
    w.Pending(PodBuilder("p").Requests("cpu:1,nvidia.com/gpu:2").Priority(0).Created(300).Build());
    const Explanation e = Explain(*w.s, "default/p");
    CHECK(e.state == "pending");
    CHECK(e.message == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
    REQUIRE(e.reasons.size() == 1);
    CHECK(e.reasons[0].reason == "Insufficient nvidia.com/gpu");
    CHECK(e.reasons[0].nodes == std::vector<std::string>{"n1"});
    CHECK(e.nearest_kind == "preemption");
    CHECK(e.nearest_miss ==
          "fits on n1 if 2 GPUs are freed (held by default/b-1, priority 0, preemptible: no, lower "
          "priority required)");
  }
  SECTION("higher priority: preemptible") {
    w.Pending(PodBuilder("p").Requests("cpu:1,nvidia.com/gpu:3").Priority(100).Created(300).Build());
    const Explanation e = Explain(*w.s, "default/p");
    CHECK(e.nearest_kind == "preemption");
    CHECK(e.nearest_miss ==
          "fits on n1 if 4 GPUs are freed (held by default/b-1, priority 0, preemptible: yes; "
          "default/b-0, priority 0, preemptible: yes)");
  }
  CHECK(w.CacheKeys() == before);  // a dry run: nothing evicted, nothing assumed
}

TEST_CASE("explain: the queue's quota, with usage, nominal and borrowing") {
  World w;
  REQUIRE(w.harness.ApplyQueueObject(json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"},
                                  {"metadata", {{"name", "team-a"}}},
                                  {"spec", {{"namespaces", {"team-a"}},
                                            {"nominalQuota", {{"nvidia.com/gpu", "2"}}}}}})
              .ok());
  w.Bound("run", "team-a", "2", 0, 100);
  w.Pending(PodBuilder("p", "team-a").Requests("cpu:1,nvidia.com/gpu:1").Created(200).Build());
  const Explanation e = Explain(*w.s, "team-a/p");
  CHECK(e.queue == "team-a");
  CHECK(e.nearest_kind == "quota");
  CHECK(e.nearest_miss == "queue team-a is at 2 of nominal 2 nvidia.com/gpu, no cohort, so no "
                          "borrowing: it waits for its own pods to finish");
  CHECK_FALSE(e.message.empty());
}

TEST_CASE("explain: a queue within its nominal quota whose quota the cohort borrows") {
  World w;
  for (const char* q : {"team-a", "team-b"}) {
    REQUIRE(w.harness.ApplyQueueObject(json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"},
                                    {"metadata", {{"name", q}}},
                                    {"spec", {{"namespaces", {q}}, {"cohort", "research"},
                                              {"nominalQuota", {{"nvidia.com/gpu", "2"}}}}}})
                .ok());
  }
  w.Bound("borrower", "team-b", "4", 0, 100);  // team-b holds 4: 2 of them team-a's
  w.Pending(PodBuilder("p", "team-a").Requests("cpu:1,nvidia.com/gpu:1").Created(200).Build());
  const Explanation e = Explain(*w.s, "team-a/p");
  CHECK(e.nearest_kind == "quota");
  CHECK(e.nearest_miss == "queue team-a is at 0 of nominal 2 nvidia.com/gpu and lends 2 of it to cohort "
                          "research: it waits for the borrowers' pods to finish "
                          "(spec.preemption.reclaimWithinCohort: Never)");
}

TEST_CASE("explain: a gang's members placeable now and the largest free block") {
  World w;
  w.Bound("busy", "default", "3", 0, 100);
  REQUIRE(w.harness.ApplyGangObject(json{{"apiVersion", "scheduling.x-k8s.io/v1alpha1"}, {"kind", "PodGroup"},
                                 {"metadata", {{"name", "trio"}, {"namespace", "default"}}},
                                 {"spec", {{"minMember", 3}}}})
              .ok());
  for (int i = 0; i < 3; ++i) {
    PodBuilder b(StrCat("trio-", i));
    b.Requests("cpu:1,nvidia.com/gpu:2").Created(200 + i);
    b.mutable_pod().meta.labels["scheduling.x-k8s.io/pod-group"] = "trio";
    w.Pending(b.Build());
  }
  const Explanation e = Explain(*w.s, "default/trio-2");
  CHECK(e.nearest_kind == "gang");
  CHECK(e.nearest_miss == "gang PodGroup default/trio needs 3 members of 2 GPUs; 0 can be placed "
                          "now; the largest free block is 1 GPU on n1");
}

TEST_CASE("explain: a pod of a flavored queue: the flavor it is tried on, and why each other was "
          "skipped") {
  testing::CoreHarness harness{{.start = absl::FromUnixSeconds(1000)}};
  Scheduler& s = *harness.s;
  for (const char* pool : {"reserved", "on-demand", "spot", "a100"}) {
    REQUIRE(harness.ApplyQueueObject(json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "ResourceFlavor"},
                                          {"metadata", {{"name", pool}}},
                                          {"spec", {{"nodeLabels", {{"pool", pool}}}}}})
                .ok());
  }
  json flavors = json::array();
  for (const auto& [pool, nominal] : {std::pair{"reserved", "2"}, std::pair{"on-demand", "4"}, std::pair{"spot", "8"},
                                      std::pair{"a100", "8"}}) {
    flavors.push_back({{"name", pool}, {"resources", {{{"name", "nvidia.com/gpu"}, {"nominalQuota", nominal}}}}});
  }
  REQUIRE(harness.ApplyQueueObject(json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"},
                                        {"metadata", {{"name", "team-a"}}},
                                        {"spec", {{"namespaces", {"team-a"}},
                                                  {"resourceGroups", {{{"coveredResources", {"nvidia.com/gpu"}},
                                                                       {"flavors", flavors}}}}}}})
              .ok());
  for (const char* pool : {"reserved", "on-demand", "spot"}) {  // no a100 node
    harness.AddNode(NodeBuilder(StrCat(pool, "-1")).Allocatable("cpu:32,memory:128Gi,nvidia.com/gpu:4").Label("pool", pool).Build());
  }
  // team-a holds its 2 reserved GPUs; a pod of no queue fills on-demand.
  s.OnPodAdd(PodBuilder("run", "team-a").Requests("cpu:1,nvidia.com/gpu:2").Node("reserved-1").Build());
  s.OnPodAdd(PodBuilder("other").Requests("cpu:1,nvidia.com/gpu:4").Node("on-demand-1").Build());
  SECTION("one GPU: spot") {
    s.OnPodAdd(PodBuilder("p", "team-a").Requests("cpu:1,nvidia.com/gpu:1").Build());
    const Explanation e = Explain(s, "team-a/p");
    CHECK(e.nearest_kind == "fits");
    CHECK(e.details == std::vector<std::string>{
                           "flavor reserved: skipped, quota: queue team-a: nvidia.com/gpu in flavor reserved 3 of "
                           "nominal 2; it is in no cohort, so it cannot borrow",
                           "flavor on-demand: skipped, no feasible node of 1: 1 Insufficient nvidia.com/gpu",
                           "flavor spot: tried: fits on 1 of 1 node",
                           "flavor a100: skipped, it has no node the pod may use"});
  }
  SECTION("six GPUs: no flavor") {
    s.OnPodAdd(PodBuilder("p", "team-a").Requests("cpu:1,nvidia.com/gpu:6").Build());
    const Explanation e = Explain(s, "team-a/p");
    REQUIRE(e.details.size() >= 4);
    CHECK(e.details[0] == "flavor reserved: skipped, quota: queue team-a: nvidia.com/gpu in flavor reserved 8 of "
                          "nominal 2; it is in no cohort, so it cannot borrow");
    CHECK(e.details[1] == "flavor on-demand: skipped, quota: queue team-a: nvidia.com/gpu in flavor on-demand 6 of "
                          "nominal 4; it is in no cohort, so it cannot borrow");
    CHECK(e.details[2] == "flavor spot: skipped, no feasible node of 1: 1 Insufficient nvidia.com/gpu");
    CHECK(e.details[3] == "flavor a100: skipped, it has no node the pod may use");
  }
}

TEST_CASE("explain: fits now, never fits, and a pod it does not hold") {
  World w;
  w.Pending(PodBuilder("small").Requests("cpu:1,nvidia.com/gpu:1").Build());
  w.Pending(PodBuilder("huge").Requests("cpu:1,nvidia.com/gpu:8").Build());
  Explanation e = Explain(*w.s, "default/small");
  CHECK(e.nearest_kind == "fits");
  CHECK(e.message.empty());
  e = Explain(*w.s, "default/huge");
  CHECK(e.nearest_kind == "none");
  CHECK(e.message == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
  e = Explain(*w.s, "default/nobody");
  CHECK(e.state == "unknown");
  CHECK(e.nearest_kind == "none");
}

TEST_CASE("explain: room a nominated pod will take does not count as fitting now") {
  // n1 has 2 of its 4 GPUs free, promised to a priority-100 pod nominated there (its
  // preemption's victims gone already): a pod of lower priority does not fit now, one of
  // higher priority does (kube-scheduler's nomination rule, as a scheduling cycle filters).
  for (const int32_t priority : {0, 200}) {
    INFO("priority " << priority);
    World w;
    w.Bound("run", "default", "2", 0, 100);
    Pod ahead = PodBuilder("ahead").Requests("cpu:1,nvidia.com/gpu:2").Priority(100).Created(200).Build();
    ahead.nominated_node_name = "n1";
    w.Pending(std::move(ahead));
    w.Pending(PodBuilder("p").Requests("cpu:1,nvidia.com/gpu:1").Priority(priority).Created(300).Build());
    const Explanation e = Explain(*w.s, "default/p");
    if (priority > 100) {
      CHECK(e.nearest_kind == "fits");
      CHECK(e.message.empty());
      continue;
    }
    CHECK(e.nearest_kind != "fits");
    CHECK(e.message == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
    REQUIRE(e.reasons.size() == 1);
    CHECK(e.reasons[0].nodes == std::vector<std::string>{"n1"});
  }
}

}  // namespace explain_test
}  // namespace tessel
