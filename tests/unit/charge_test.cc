// Charges fixed at bind (state/pod_charge.h): a pod's owner who edits its annotations or labels
// after it is bound changes nothing Tessel counts, on the node's devices or in the team's quota,
// and a scheduler that restarts charges the larger of the record made at bind and what the pod
// says now. The two setups of issue 37's defect 1 run through the whole core.
#include <catch2/catch.hpp>

#include <map>

#include "harness/core_harness.h"
#include "nlohmann/json.hpp"
#include "scheduler/core/scheduler.h"
#include "scheduler/state/pod_charge.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace charge_test {

using nlohmann::json;
using testing::NodeBuilder;
using testing::PodBuilder;

class Outcomes final : public SchedulingObserver {
 public:
  void PodScheduled(const Pod& pod, const std::string& node) override { scheduled[pod.Key()] = node; }
  void PodUnschedulable(const Pod& pod, FailureKind, const std::string& message) override {
    failures[pod.Key()] = message;
  }
  std::map<std::string, std::string> scheduled;
  std::map<std::string, std::string> failures;
};

struct Cluster {
  explicit Cluster(std::string_view node_size) : harness({.observer = &outcomes}) {
    harness.AddNode(NodeBuilder("n1").Allocatable(node_size).Build());
  }
  // The pod as the scheduler bound it, then edited by its owner (what the informer delivers).
  void Edit(const Pod& pod, std::string_view key, std::string value, bool label = false) {
    Pod edited = pod;
    edited.node_name = harness.cache.NodeOf(pod.Key()).value();
    (label ? edited.meta.labels : edited.meta.annotations)[std::string(key)] = std::move(value);
    harness.s->OnPodUpdate(std::move(edited));
  }
  void RetryParked() {
    harness.clock.Advance(absl::Minutes(6));
    harness.RunUntilIdle();
  }
  int64_t AllocatedMilli() const { return harness.cache.GetNodeInfo("n1")->gpus().total_allocated_milli(); }

  Outcomes outcomes;
  testing::CoreHarness harness;
};

Pod Fraction(std::string name, int64_t milli, std::string ns = "default") {
  return PodBuilder(std::move(name), std::move(ns))
      .Requests("cpu:1,nvidia.com/gpu:1")
      .Annotation("tessel.io/gpu-milli", StrCat(milli))
      .Build();
}

TEST_CASE("Charges: an owner's edit of tessel.io/gpu-milli after the bind does not free room on the device",
          "[charge]") {
  Cluster c("cpu:8,memory:32Gi,nvidia.com/gpu:1");
  const Pod a = Fraction("a", 900);
  const Pod b = Fraction("b", 500);
  c.harness.AddPod(a);
  c.harness.RunUntilIdle();
  c.harness.AddPod(b);
  c.harness.RunUntilIdle();
  REQUIRE(c.outcomes.scheduled.contains("default/a"));
  REQUIRE(c.outcomes.failures.contains("default/b"));

  c.Edit(a, "tessel.io/gpu-milli", "100");
  c.RetryParked();
  CHECK_FALSE(c.outcomes.scheduled.contains("default/b"));
  CHECK(c.AllocatedMilli() == 900);
  CHECK(c.harness.cache.CheckNodesFit().ok());

  SECTION("nor does removing the annotation, or another device choice") {
    Pod whole = a;
    whole.meta.annotations.erase("tessel.io/gpu-milli");
    whole.meta.annotations["tessel.io/gpu-devices"] = "0";
    whole.node_name = "n1";
    c.harness.s->OnPodUpdate(whole);
    c.RetryParked();
    CHECK(c.AllocatedMilli() == 900);
    CHECK_FALSE(c.outcomes.scheduled.contains("default/b"));
  }
  SECTION("the pod's end frees what it held") {
    c.harness.s->OnPodDelete("default/a");
    c.RetryParked();
    CHECK(c.outcomes.scheduled.contains("default/b"));
    CHECK(c.AllocatedMilli() == 500);
  }
}

TEST_CASE("Charges: a queue of 1 GPU keeps four 0.9-GPU pods at one, whatever their owners edit",
          "[charge][quota]") {
  Cluster c("cpu:64,memory:256Gi,nvidia.com/gpu:8");
  REQUIRE(c.harness
              .ApplyQueueObject(json{{"apiVersion", "tessel.io/v1alpha1"},
                                     {"kind", "Queue"},
                                     {"metadata", {{"name", "team"}}},
                                     {"spec", {{"namespaces", {"team"}}, {"nominalQuota", {{"nvidia.com/gpu", "1"}}}}}})
              .ok());
  std::vector<Pod> pods;
  for (int i = 0; i < 4; ++i) pods.push_back(Fraction(StrCat("p", i), 900, "team"));
  for (const Pod& p : pods) c.harness.AddPod(p);
  c.harness.RunUntilIdle();
  REQUIRE(c.outcomes.scheduled.size() == 1);
  // Every bound pod's owner lowers it, then moves it to no queue; the rest retry each time.
  for (int round = 0; round < 4; ++round) {
    for (const Pod& p : pods) {
      if (!c.outcomes.scheduled.contains(p.Key())) continue;
      c.Edit(p, "tessel.io/gpu-milli", "1");
      c.Edit(p, "tessel.io/queue", "elsewhere", /*label=*/true);
    }
    c.RetryParked();
  }
  CHECK(c.outcomes.scheduled.size() == 1);
  CHECK(c.AllocatedMilli() == 900);
  for (const auto& [key, message] : c.outcomes.failures) {
    if (c.outcomes.scheduled.contains(key)) continue;
    CHECK_THAT(message, Catch::Contains("queue team: nvidia.com/gpu"));
  }
}

TEST_CASE("Charges: the bind records the charge; a restarted scheduler charges the larger of record and pod",
          "[charge]") {
  SECTION("the Binding carries the record of what the pod is charged") {
    Cluster c("cpu:8,memory:32Gi,nvidia.com/gpu:2");
    REQUIRE(c.harness
                .ApplyQueueObject(json{{"apiVersion", "tessel.io/v1alpha1"},
                                       {"kind", "Queue"},
                                       {"metadata", {{"name", "q"}}},
                                       {"spec", {{"namespaces", {"default"}}}}})
                .ok());
    Pod p = PodBuilder("p").Requests("cpu:1,nvidia.com/gpu:1").Annotation("tessel.io/gpu-milli", "900").Build();
    p.meta.labels["tessel.io/queue"] = "q";
    c.harness.AddPod(p);
    c.harness.RunUntilIdle();
    REQUIRE(c.harness.api.bind_annotations.size() == 1);
    const StringMap& sent = c.harness.api.bind_annotations[0].second;
    REQUIRE(sent.contains("tessel.io/charge"));
    CHECK(json::parse(sent.at("tessel.io/charge")) ==
          json{{"tessel.io/gpu-milli", "900"}, {"tessel.io/queue", "q"}, {"tessel.io/gpu-devices", sent.at("tessel.io/gpu-devices")}});
  }

  // A bound pod delivered to a scheduler that never held it.
  auto restarted = [](std::string_view record, std::string_view milli_now) {
    Cluster c("cpu:8,memory:32Gi,nvidia.com/gpu:1");
    Pod a = Fraction("a", 0);
    a.meta.annotations["tessel.io/gpu-milli"] = std::string(milli_now);
    a.meta.annotations["tessel.io/charge"] = std::string(record);
    a.node_name = "n1";
    c.harness.AddPod(a);
    return c.AllocatedMilli();
  };
  CHECK(restarted(R"({"tessel.io/gpu-milli":"900"})", "100") == 900);  // lowered while it was down
  CHECK(restarted(R"({"tessel.io/gpu-milli":"100"})", "900") == 900);  // the record is no licence to pay less
  CHECK(restarted(R"({})", "100") == 1000);  // recorded as a whole GPU
  CHECK(restarted("not json", "100") == 100);  // no record to trust: as the pod says

  SECTION("a record that does not decode is named in the pod's warnings") {
    Pod p = Fraction("p", 100);
    p.meta.annotations["tessel.io/charge"] = R"({"tessel.io/gpu-milli":900})";
    RestoreCharge(p);
    REQUIRE(p.decode_warnings.size() == 1);
    CHECK_THAT(p.decode_warnings[0], Catch::Contains("metadata.annotations[tessel.io/charge]") &&
                                         Catch::Contains("tessel.io/gpu-milli"));
    CHECK(p.meta.annotations.at("tessel.io/gpu-milli") == "100");
  }
  SECTION("the queue is the recorded one") {
    Pod p = Fraction("p", 900);
    p.meta.labels["tessel.io/queue"] = "cheap";
    p.meta.annotations["tessel.io/charge"] = R"({"tessel.io/gpu-milli":"900","tessel.io/queue":"team"})";
    RestoreCharge(p);
    CHECK(p.meta.labels.at("tessel.io/queue") == "team");
  }
}

}  // namespace charge_test
}  // namespace tessel
