// Decoding Kubernetes JSON: fields land where they should, and every malformed object yields
// an error that names the object and the field.
#include <catch2/catch.hpp>

#include "scheduler/api/decode.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace decode_test {

using nlohmann::json;

json PodJson() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "train-0", "namespace": "team-a", "uid": "u1",
                 "labels": {"app": "llm"}, "annotations": {"tessel.io/gpu-milli": "500"},
                 "creationTimestamp": "2026-11-01T10:00:00Z",
                 "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
                                      "uid": "j1", "controller": true}]},
    "spec": {
      "schedulerName": "tessel",
      "nodeSelector": {"nvidia.com/gpu.product": "A100"},
      "priority": 100, "priorityClassName": "high", "preemptionPolicy": "Never",
      "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                      {"key": "k", "value": "v", "tolerationSeconds": 30}],
      "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]},
                                {"key": "gpus", "operator": "Gt", "values": ["3"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
          {"weight": 10, "preference": {"matchExpressions": [{"key": "fast", "operator": "Exists"}]}}]}},
      "containers": [{"name": "main", "resources": {"requests": {"cpu": "2", "memory": "8Gi"},
                                                    "limits": {"nvidia.com/gpu": "1"}}}],
      "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "4"}}}],
      "overhead": {"cpu": "100m"},
      "schedulingGates": [{"name": "example.com/quota"}, {"name": "example.com/data"}]
    },
    "status": {"phase": "Pending", "nominatedNodeName": "n1"}
  })");
}

TEST_CASE("a full pod decodes", "[decode]") {
  auto pod = DecodePod(PodJson());
  REQUIRE(pod.ok());
  CHECK(pod->Key() == "team-a/train-0");
  CHECK(pod->meta.uid == "u1");
  CHECK(pod->meta.labels.at("app") == "llm");
  CHECK(pod->meta.annotations.at("tessel.io/gpu-milli") == "500");
  CHECK(pod->meta.creation_timestamp == absl::FromUnixSeconds(1793527200));
  REQUIRE(pod->meta.owner_references.size() == 1);
  CHECK(pod->meta.owner_references[0].controller);
  CHECK(pod->scheduler_name == "tessel");
  CHECK(pod->priority == 100);
  CHECK(pod->preemption_policy == PreemptionPolicy::kNever);
  REQUIRE(pod->tolerations.size() == 2);
  CHECK(pod->tolerations[0].op == Toleration::Operator::kExists);
  CHECK(pod->tolerations[1].toleration_seconds == 30);
  CHECK_FALSE(pod->tolerations[1].effect.has_value());
  REQUIRE(pod->node_affinity.required.has_value());
  CHECK(pod->node_affinity.required->at(0).match_expressions.size() == 2);
  CHECK(pod->node_affinity.preferred.at(0).weight == 10);
  // requests default to limits; init container (4 cpu) beats containers (2); + 100m overhead
  CHECK(pod->requests.milli_cpu == 4100);
  CHECK(pod->requests.Get("nvidia.com/gpu") == 1000);
  CHECK(pod->requests.memory == int64_t{8} << 30);
  CHECK(pod->nominated_node_name == "n1");
  CHECK(pod->scheduling_gates == std::vector<std::string>{"example.com/quota", "example.com/data"});
}

TEST_CASE("a node decodes with allocatable, taints and readiness", "[decode]") {
  auto node = DecodeNode(json::parse(R"({"kind": "Node", "metadata": {"name": "gpu-1", "labels": {"a": "b"}},
    "spec": {"unschedulable": true, "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]},
    "status": {"capacity": {"cpu": "64", "nvidia.com/gpu": "8", "pods": "110"},
               "allocatable": {"cpu": "63500m", "nvidia.com/gpu": "8", "pods": "110", "memory": "250Gi"},
               "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}]}})"));
  REQUIRE(node.ok());
  CHECK(node->unschedulable);
  CHECK(node->allocatable.milli_cpu == 63500);  // allocatable, not capacity
  CHECK(node->capacity.milli_cpu == 64000);
  CHECK(node->allocatable.pods == 110);
  CHECK(node->ready == ConditionStatus::kTrue);
  REQUIRE(node->taints.size() == 1);
  CHECK(node->taints[0].effect == TaintEffect::kNoSchedule);

  auto bare = DecodeNode(json::parse(R"({"kind": "Node", "metadata": {"name": "n"}})"));
  REQUIRE(bare.ok());
  CHECK(bare->ready == ConditionStatus::kUnknown);
}

TEST_CASE("malformed objects name the object and the field", "[decode]") {
  struct Case {
    std::string name;
    std::string json_text;
    std::string want;  // substring of the error
  };
  const std::vector<Case> cases = {
      {"bad cpu", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"ten"}}}]}})",
       "Pod ns/p: spec.containers[0].resources.requests.cpu: quantity \"ten\""},
      {"negative request", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"c","resources":{"requests":{"memory":"-1Gi"}}}]}})",
       "Pod ns/p: spec.containers[0].resources.requests.memory: negative quantity \"-1Gi\""},
      {"bad init limit", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"initContainers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1.2.3"}}}]}})",
       "Pod ns/p: spec.initContainers[0].resources.limits.nvidia.com/gpu: quantity \"1.2.3\""},
      {"containers not a list", R"({"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":{}}})",
       "Pod p: spec.containers: expected a list"},
      {"priority not an integer", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"priority":"high"}})",
       "Pod ns/p: spec.priority: expected an integer"},
      {"unknown operator", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"Like","values":["x"]}]}]}}}}})",
       "nodeSelectorTerms[0].matchExpressions[0].operator: unknown operator \"Like\""},
      {"In without values", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"In"}]}]}}}}})",
       "matchExpressions[0].values: must be non-empty for operator In"},
      {"bad toleration effect", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"tolerations":[{"key":"k","effect":"Sometimes"}]}})",
       "Pod ns/p: spec.tolerations[0].effect: unknown taint effect \"Sometimes\""},
      {"bad timestamp", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns","creationTimestamp":"yesterday"}})",
       "Pod ns/p: metadata.creationTimestamp: timestamp \"yesterday\""},
      {"no name", R"({"kind":"Pod","metadata":{"namespace":"ns"}})", "Pod ns/<unnamed>: metadata.name: missing"},
      {"labels not strings", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns","labels":{"a":1}}})",
       "Pod ns/p: metadata.labels.a: expected a string"},
      {"unknown phase", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"status":{"phase":"Sleeping"}})",
       "Pod ns/p: status.phase: unknown phase \"Sleeping\""},
      {"preferred weight out of range", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":0,"preference":{}}]}}}})",
       "preferredDuringSchedulingIgnoredDuringExecution[0].weight: must be in 1..100"},
      // 2^32 + 50: narrowed to 32 bits first, it read as 50 and passed.
      {"preferred weight beyond 32 bits", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":4294967346,"preference":{}}]}}}})",
       "preferredDuringSchedulingIgnoredDuringExecution[0].weight: must be in 1..100, got 4294967346"},
      {"scheduling gate without a name", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"schedulingGates":[{"name":"a"},{}]}})",
       "Pod ns/p: spec.schedulingGates[1].name: missing"},
      {"scheduling gates not a list", R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"schedulingGates":{"name":"a"}}})",
       "Pod ns/p: spec.schedulingGates: expected a list"},
      {"node allocatable garbage", R"({"kind":"Node","metadata":{"name":"n"},"status":{"allocatable":{"nvidia.com/gpu":"5Gb"}}})",
       "Node n: status.allocatable.nvidia.com/gpu: quantity \"5Gb\""},
      {"node taint without effect", R"({"kind":"Node","metadata":{"name":"n"},"spec":{"taints":[{"key":"k"}]}})",
       "Node n: spec.taints[0].effect: unknown taint effect \"\""},
      {"node unschedulable not bool", R"({"kind":"Node","metadata":{"name":"n"},"spec":{"unschedulable":"yes"}})",
       "Node n: spec.unschedulable: expected true or false"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      json j = json::parse(c.json_text);
      absl::Status st = j["kind"] == "Node" ? DecodeNode(j).status() : DecodePod(j).status();
      REQUIRE_FALSE(st.ok());
      CHECK_THAT(std::string(st.message()), Catch::Contains(c.want));
    }
  }
}

// A pod with one defect in `spec` (merged into a 1-GPU pod), bound to n1 or pending.
json DefectivePod(const json& spec_patch, const json& status_patch, bool bound) {
  json pod = json::parse(R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns","uid":"u1",
      "annotations":{"tessel.io/gpu-devices":"0"}},
    "spec":{"schedulerName":"default-scheduler","containers":[{"name":"c","resources":{
      "requests":{"cpu":"2","memory":"1Gi"},"limits":{"nvidia.com/gpu":"1"}}}]},
    "status":{"phase":"Running"}})");
  pod["spec"].merge_patch(spec_patch);
  pod["status"].merge_patch(status_patch);
  if (bound) pod["spec"]["nodeName"] = "n1";
  return pod;
}

TEST_CASE("a bound pod that fails strict decoding is charged, never dropped", "[decode]") {
  struct Case {
    std::string name;
    json spec_patch;
    json status_patch;
    std::string field;          // named by the warning (bound) and the error (pending)
    int64_t want_cpu = 2000;    // what the bound pod is charged
    int64_t want_memory = int64_t{1} << 30;
  };
  const json gpu_container_with = json::parse(R"({"name":"c","resources":{
      "requests":{"cpu":"2","memory":"1Gi"},"limits":{"nvidia.com/gpu":"1"}}})");
  auto containers = [&](const json& resources_patch) {
    json c = gpu_container_with;
    c["resources"].merge_patch(resources_patch);
    return json{{"containers", json::array({c})}};
  };
  const std::vector<Case> cases = {
      {"toleration operator of a newer Kubernetes (Lt)",
       json::parse(R"({"tolerations":[{"key":"gpu-age","operator":"Lt","value":"3","effect":"NoSchedule"}]})"),
       json::object(), "spec.tolerations[0].operator"},
      {"unknown node affinity operator",
       json::parse(R"({"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"Like","values":["x"]}]}]}}}})"),
       json::object(), "matchExpressions[0].operator"},
      {"a CPU limit of 2^63-1 beside a CPU request", containers(json::parse(R"({"limits":{"cpu":"9223372036854775807"}})")),
       json::object(), "spec.containers[0].resources.limits.cpu"},
      {"a CPU limit of 10^30 and no CPU request: the limit is the request",
       containers(json::parse(R"({"requests":{"cpu":null},"limits":{"cpu":"1e30"}})")), json::object(),
       "spec.containers[0].resources.limits.cpu", kUnreadableQuantity},
      {"a memory request beyond int64", containers(json::parse(R"({"requests":{"memory":"100Ei"}})")),
       json::object(), "spec.containers[0].resources.requests.memory", 2000, kUnreadableQuantity},
      {"an unknown phase of a newer Kubernetes", json::object(), json::parse(R"({"phase":"Hibernating"})"),
       "status.phase"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      absl::StatusOr<Pod> bound = DecodePod(DefectivePod(c.spec_patch, c.status_patch, true));
      REQUIRE(bound.ok());
      CHECK(bound->node_name == "n1");
      CHECK(bound->Key() == "ns/p");
      CHECK(bound->requests.milli_cpu == c.want_cpu);
      CHECK(bound->requests.memory == c.want_memory);
      CHECK(bound->requests.Get("nvidia.com/gpu") == 1000);
      REQUIRE(bound->gpu_devices.has_value());
      CHECK(*bound->gpu_devices == std::vector<int32_t>{0});
      CHECK_FALSE(bound->IsTerminal());
      REQUIRE(bound->decode_warnings.size() == 1);
      CHECK_THAT(bound->decode_warnings[0], Catch::Contains("Pod ns/p: " ) && Catch::Contains(c.field) &&
                                                Catch::Contains("bound to n1: charged as read leniently"));

      absl::StatusOr<Pod> pending = DecodePod(DefectivePod(c.spec_patch, c.status_patch, false));
      REQUIRE_FALSE(pending.ok());
      CHECK_THAT(std::string(pending.status().message()), Catch::Contains("Pod ns/p: ") && Catch::Contains(c.field));
      Pod identity = DecodePodIdentity(DefectivePod(c.spec_patch, c.status_patch, false));
      CHECK(identity.Key() == "ns/p");
      CHECK(identity.meta.uid == "u1");
      CHECK(identity.scheduler_name == "default-scheduler");
    }
  }
  SECTION("a bound pod without a readable name is still an error") {
    json pod = DefectivePod(json::parse(R"({"tolerations":[{"operator":"Lt"}]})"), json::object(), true);
    pod["metadata"].erase("name");
    CHECK_FALSE(DecodePod(pod).ok());
  }
}

TEST_CASE("PriorityClass decodes and validates its value", "[decode]") {
  auto pc = DecodePriorityClass(json::parse(
      R"({"kind":"PriorityClass","metadata":{"name":"high"},"value":1000,"globalDefault":true,"preemptionPolicy":"Never"})"));
  REQUIRE(pc.ok());
  CHECK(pc->value == 1000);
  CHECK(pc->global_default);
  CHECK(pc->preemption_policy == PreemptionPolicy::kNever);
  auto missing = DecodePriorityClass(json::parse(R"({"kind":"PriorityClass","metadata":{"name":"x"}})"));
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("PriorityClass x: value: missing"));
  auto huge = DecodePriorityClass(json::parse(R"({"kind":"PriorityClass","metadata":{"name":"x"},"value":2000000000})"));
  CHECK_THAT(std::string(huge.status().message()), Catch::Contains("must be at most 1000000000"));
}

TEST_CASE("DecodeList keeps good objects and names bad ones", "[decode]") {
  auto list = DecodeList(R"({"apiVersion":"v1","kind":"List","items":[
      {"kind":"Node","metadata":{"name":"n1"}},
      {"kind":"Pod","metadata":{"name":"good","namespace":"ns"}},
      {"kind":"Pod","metadata":{"name":"bad","namespace":"ns"},"spec":{"containers":[{"resources":{"requests":{"cpu":"x"}}}]}},
      {"kind":"PodGroup","metadata":{"name":"g","namespace":"ns"}},
      {"metadata":{"name":"kindless"}},
      42]})");
  REQUIRE(list.ok());
  CHECK(list->nodes.size() == 1);
  CHECK(list->pods.size() == 1);
  CHECK(list->others.size() == 1);
  REQUIRE(list->warnings.size() == 3);
  CHECK_THAT(list->warnings[0], Catch::Contains("Pod ns/bad: spec.containers[0].resources.requests.cpu"));
  CHECK_THAT(list->warnings[1], Catch::Contains("object kindless: kind: missing"));
  CHECK_THAT(list->warnings[2], Catch::Contains("object <unnamed>: kind: missing"));

  CHECK_THAT(std::string(DecodeList("{not json").status().message()), Catch::Contains("not valid JSON"));
  CHECK_THAT(std::string(DecodeList("[1,2]").status().message()), Catch::Contains("not a Kubernetes List"));
  CHECK_THAT(std::string(DecodeList(R"({"kind":"List"})").status().message()), Catch::Contains("no \"items\" array"));
}

}  // namespace decode_test
}  // namespace tessel
