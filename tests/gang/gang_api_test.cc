// Decoding the gang APIs from their documented examples, pods' declared gangs, and the
// GangBook's resolution of a pod to its gang.
#include <catch2/catch.hpp>

#include "nlohmann/json.hpp"
#include "scheduler/kinds/object_kinds.h"
#include "scheduler/testing/builders.h"
#include "scheduler/api/decode.h"
#include "scheduler/gang/gang_book.h"

namespace tessel::gang {
namespace gang_api_test {

using nlohmann::json;
using testing::PodBuilder;

// The scheduler-plugins coscheduling README's PodGroup.
const char* kPodGroup = R"({
  "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
  "metadata": {"name": "nginx", "namespace": "default"},
  "spec": {"scheduleTimeoutSeconds": 10, "minMember": 3,
           "minResources": {"cpu": "3", "nvidia.com/gpu": "2"}},
  "status": {"phase": "Running", "scheduled": 3, "running": 2, "failed": 1}})";

// Kubernetes 1.35 documentation, "Workload API" (KEP-4671).
const char* kWorkload = R"({
  "apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
  "metadata": {"name": "training-job-workload", "namespace": "some-ns"},
  "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "training-job"},
           "podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 4}}},
                         {"name": "driver", "policy": {"basic": {}}}]}})";

// Kubernetes documentation, "Workload Reference": a pod of the workers group, replica "0".
const char* kWorkloadPod = R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "worker-0", "namespace": "some-ns"},
  "spec": {"schedulerName": "tessel",
           "workloadRef": {"name": "training-job-workload", "podGroup": "workers",
                           "podGroupReplicaKey": "0"},
           "containers": [{"name": "ml-worker", "image": "training:v1"}]}})";

// Its successor: the scheduling.k8s.io/v1alpha2 PodGroup and spec.schedulingGroup.
const char* kSchedulingPodGroup = R"({
  "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
  "metadata": {"name": "training-worker-0", "namespace": "some-ns"},
  "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}})";
const char* kSchedulingGroupPod = R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "worker-0", "namespace": "some-ns"},
  "spec": {"schedulingGroup": {"podGroupName": "training-worker-0"},
           "containers": [{"name": "ml-worker", "image": "training:v1"}]}})";

// A decoded object; the test stops if it does not decode.
template <typename T>
T Decoded(absl::StatusOr<T> decoded) {
  REQUIRE(decoded.ok());
  return *std::move(decoded);
}

TEST_CASE("a scheduler-plugins PodGroup decodes spec and status", "[gang][decode]") {
  auto pg = DecodePodGroup(json::parse(kPodGroup));
  REQUIRE(pg.ok());
  CHECK(pg->meta.name == "nginx");
  CHECK(pg->min_member == 3);
  CHECK(pg->schedule_timeout_seconds == 10);
  CHECK(pg->min_resources.milli_cpu == 3000);
  CHECK(pg->min_resources.Get("nvidia.com/gpu") == 2000);
  CHECK(pg->status.phase == "Running");
  CHECK(pg->status.scheduled == 3);
  CHECK(pg->status.running == 2);
  CHECK(pg->status.failed == 1);
}

TEST_CASE("bad PodGroups are rejected with the object and the field", "[gang][decode]") {
  struct Case {
    const char* name;
    const char* spec;
    const char* want;
  };
  const Case cases[] = {
      {"negative minMember", R"({"minMember": -1})",
       "PodGroup ns/g: spec.minMember: must be an integer of at least 0, got -1"},
      {"string minMember", R"({"minMember": "3"})",
       "PodGroup ns/g: spec.minMember: expected an integer, got \"3\""},
      {"bad timeout", R"({"minMember": 2, "scheduleTimeoutSeconds": 1.5})",
       "PodGroup ns/g: spec.scheduleTimeoutSeconds: expected an integer, got 1.5"},
      {"bad quantity", R"({"minMember": 2, "minResources": {"cpu": "lots"}})",
       "PodGroup ns/g: spec.minResources.cpu: quantity \"lots\" is not valid"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      json object = json::parse(R"({"apiVersion": "scheduling.x-k8s.io/v1alpha1",
          "kind": "PodGroup", "metadata": {"name": "g", "namespace": "ns"}})");
      object["spec"] = json::parse(c.spec);
      auto pg = DecodePodGroup(object);
      REQUIRE_FALSE(pg.ok());
      CHECK_THAT(std::string(pg.status().message()), Catch::StartsWith(c.want));
    }
  }
}

TEST_CASE("a KEP-4671 Workload decodes its gang and basic pod groups", "[gang][decode]") {
  auto w = DecodeWorkload(json::parse(kWorkload));
  REQUIRE(w.ok());
  CHECK(w->meta.namespace_ == "some-ns");
  REQUIRE(w->pod_groups.size() == 2);
  CHECK(w->pod_groups[0].name == "workers");
  CHECK(w->pod_groups[0].gang_min_count == 4);
  CHECK(w->pod_groups[1].name == "driver");
  CHECK_FALSE(w->pod_groups[1].gang_min_count.has_value());

  SECTION("a policy must be exactly one of basic and gang") {
    json bad = json::parse(kWorkload);
    bad["spec"]["podGroups"][0]["policy"]["basic"] = json::object();
    auto r = DecodeWorkload(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() ==
          "Workload some-ns/training-job-workload: spec.podGroups[0].policy: exactly one of "
          "basic and gang must be set");
  }
  SECTION("gang.minCount is required and positive") {
    json bad = json::parse(kWorkload);
    bad["spec"]["podGroups"][0]["policy"]["gang"]["minCount"] = 0;
    auto r = DecodeWorkload(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() ==
          "Workload some-ns/training-job-workload: spec.podGroups[0].policy.gang.minCount: must "
          "be an integer of at least 1, got 0");
  }
}

TEST_CASE("pods declare their gang through each API", "[gang][decode]") {
  SECTION("spec.workloadRef with a replica key") {
    auto pod = DecodePod(json::parse(kWorkloadPod));
    REQUIRE(pod.ok());
    REQUIRE(pod->workload_ref.has_value());
    CHECK(pod->workload_ref->pod_group_replica_key == "0");
    auto id = DeclaredGang(*pod);
    REQUIRE(id.has_value());
    CHECK(id->kind == GangKind::kWorkload);
    CHECK(id->Key() == "workload:some-ns/training-job-workload/workers/0");
    CHECK(id->Describe() == "Workload some-ns/training-job-workload pod group workers (replica 0)");
  }
  SECTION("spec.workloadRef without podGroup is an error") {
    json bad = json::parse(kWorkloadPod);
    bad["spec"]["workloadRef"].erase("podGroup");
    auto pod = DecodePod(bad);
    REQUIRE_FALSE(pod.ok());
    CHECK(pod.status().message() == "Pod some-ns/worker-0: spec.workloadRef.podGroup: missing");
  }
  SECTION("spec.schedulingGroup (v1alpha2)") {
    auto pod = DecodePod(json::parse(kSchedulingGroupPod));
    REQUIRE(pod.ok());
    auto id = DeclaredGang(*pod);
    REQUIRE(id.has_value());
    CHECK(id->Key() == "schedulingpodgroup:some-ns/training-worker-0");
    auto pg = DecodeSchedulingPodGroup(json::parse(kSchedulingPodGroup));
    REQUIRE(pg.ok());
    CHECK(pg->gang_min_count == 4);
  }
  SECTION("the PodGroup label wins") {
    Pod pod = PodBuilder("w", "team-a").Build();
    pod.meta.labels[std::string(kPodGroupLabel)] = "train";
    pod.workload_ref = WorkloadReference{"w", "workers", ""};
    CHECK(DeclaredGang(pod)->Key() == "podgroup:team-a/train");
  }
  SECTION("a pod controlled by a Job names the Job; other pods name nothing") {
    Pod pod = PodBuilder("sweep-abc", "team-a").Build();
    CHECK_FALSE(DeclaredGang(pod).has_value());
    pod.meta.owner_references.push_back(
        OwnerReference{.api_version = "batch/v1", .kind = "Job", .name = "sweep", .controller = true});
    CHECK(DeclaredGang(pod)->Key() == "job:team-a/sweep");
  }
}

TEST_CASE("the GangBook resolves pods to gangs, waits for missing ones", "[gang][book]") {
  GangBook book;
  Pod member = PodBuilder("train-0", "default").Build();
  member.meta.labels[std::string(kPodGroupLabel)] = "nginx";

  SECTION("a PodGroup not seen yet: the pod waits") {
    auto r = book.Resolve(member);
    CHECK(r.membership == GangBook::Membership::kWaiting);
    CHECK(r.spec.id.Describe() == "PodGroup default/nginx");
  }
  SECTION("once it appears, the pod is a member with its spec") {
    json pg = json::parse(kPodGroup);
    pg["metadata"]["annotations"] = {{"tessel.io/topology-key", "topology.kubernetes.io/zone"}};
    book.Put(Decoded(DecodePodGroup(pg)));
    auto r = book.Resolve(member);
    REQUIRE(r.membership == GangBook::Membership::kGang);
    CHECK(r.spec.min_member == 3);
    CHECK(r.spec.schedule_timeout == absl::Seconds(10));
    CHECK(r.spec.topology_key == "topology.kubernetes.io/zone");
    book.Remove(GangKind::kPodGroup, pg["metadata"].value("namespace", ""), pg["metadata"]["name"]);
    CHECK(book.Resolve(member).membership == GangBook::Membership::kWaiting);
  }
  SECTION("Workload groups: gang, basic, replica keys") {
    book.Put(Decoded(DecodeWorkload(json::parse(kWorkload))));
    auto worker = DecodePod(json::parse(kWorkloadPod));
    REQUIRE(worker.ok());
    auto r = book.Resolve(*worker);
    REQUIRE(r.membership == GangBook::Membership::kGang);
    CHECK(r.spec.min_member == 4);
    Pod other_replica = *worker;
    other_replica.workload_ref->pod_group_replica_key = "1";
    CHECK(book.Resolve(other_replica).spec.id != r.spec.id);
    Pod driver = *worker;
    driver.workload_ref->pod_group = "driver";
    CHECK(book.Resolve(driver).membership == GangBook::Membership::kNone);
    Pod unknown_group = *worker;
    unknown_group.workload_ref->pod_group = "ps";
    CHECK(book.Resolve(unknown_group).membership == GangBook::Membership::kWaiting);
  }
  SECTION("implicit gangs: Job annotation, or the pod's own from the template") {
    Pod pod = PodBuilder("sweep-abc", "team-a").Build();
    pod.meta.owner_references.push_back(
        OwnerReference{.api_version = "batch/v1", .kind = "Job", .name = "sweep", .controller = true});
    CHECK(book.Resolve(pod).membership == GangBook::Membership::kNone);
    book.Put(Decoded(DecodeJob(json::parse(R"({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "sweep", "namespace": "team-a",
                     "annotations": {"tessel.io/min-available": "6"}}})"))));
    auto r = book.Resolve(pod);
    REQUIRE(r.membership == GangBook::Membership::kGang);
    CHECK(r.spec.id.Describe() == "Job team-a/sweep");
    CHECK(r.spec.min_member == 6);
    pod.meta.annotations["tessel.io/min-available"] = "2";
    CHECK(book.Resolve(pod).spec.min_member == 2);
    pod.meta.annotations["tessel.io/min-available"] = "two";
    auto bad = book.Resolve(pod);
    CHECK(bad.warning ==
          "Pod team-a/sweep-abc: metadata.annotations.tessel.io/min-available: \"two\" is not a "
          "positive integer");
    CHECK(bad.spec.min_member == 6);  // falls back to the Job's
  }
  SECTION("Jobs watched: a pod whose Job is not known yet waits for it") {
    Pod pod = PodBuilder("late-abc", "team-a").Build();
    pod.meta.owner_references.push_back(
        OwnerReference{.api_version = "batch/v1", .kind = "Job", .name = "late", .controller = true});
    book.SetJobsWatched(true);
    auto waiting = book.Resolve(pod);
    CHECK(waiting.membership == GangBook::Membership::kWaiting);
    CHECK(waiting.spec.id.Describe() == "Job team-a/late");
    book.Put(Decoded(DecodeJob(json::parse(R"({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "late", "namespace": "team-a"}})"))));
    CHECK(book.Resolve(pod).membership == GangBook::Membership::kNone);  // not a gang Job
  }
  SECTION("a bad Job annotation is a decode error") {
    auto r = DecodeJob(json::parse(R"({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "a", "annotations": {"tessel.io/min-available": "0"}}})"));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() ==
          "Job a/j: metadata.annotations.tessel.io/min-available: \"0\" is not a positive integer");
  }
  SECTION("the kind table reads the gang kinds, and no other") {
    CHECK(IsReadKind(kPodGroupApiVersion, "PodGroup"));
    CHECK(IsReadKind(kSchedulingPodGroupApiVersion, "PodGroup"));
    CHECK(IsReadKind(kWorkloadApiVersion, "Workload"));
    CHECK(IsReadKind("batch/v1", "Job"));
    CHECK_FALSE(IsReadKind("v1", "ConfigMap"));
    CHECK_FALSE(IsReadKind("apps/v1", "Job"));
    CHECK_FALSE(IsReadKind("scheduling.k8s.io/v1", "PodGroup"));
  }
}

// Kubernetes 1.37's scheduling.k8s.io/v1beta1 PodGroup (k8s.io/api scheduling/v1beta1), as a
// workload controller instantiates it from a Workload's podGroupTemplates.
const char* kV1beta1PodGroup = R"({
  "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
  "metadata": {"name": "train-0", "namespace": "team-a", "generation": 1},
  "spec": {"workloadRef": {"workloadName": "train", "templateName": "workers"},
           "schedulingPolicy": {"gang": {"minCount": 3}},
           "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
           "disruptionMode": {"all": {}},
           "priorityClassName": "high", "priority": 1000, "preemptionPolicy": "Never"},
  "status": {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True",
                             "reason": "Scheduled", "message": "",
                             "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})";

TEST_CASE("a v1beta1 PodGroup decodes gang, topology, disruption, priority and status", "[gang][decode]") {
  SchedulingPodGroup pg = Decoded(DecodeSchedulingPodGroup(json::parse(kV1beta1PodGroup)));
  CHECK(pg.api_version == "scheduling.k8s.io/v1beta1");
  CHECK(pg.meta.namespace_ == "team-a");
  CHECK(pg.gang_min_count == 3);
  CHECK(pg.topology_key == "topology.kubernetes.io/rack");
  CHECK(pg.disruption_mode == SchedulingPodGroup::DisruptionMode::kAll);
  CHECK(pg.priority_class_name == "high");
  CHECK(pg.priority == 1000);
  CHECK(pg.preemption_policy == PreemptionPolicy::kNever);
  CHECK(pg.workload_name == "train");
  CHECK(pg.template_name == "workers");
  CHECK(pg.initially_scheduled);
  CHECK(Unsupported(pg).empty());

  SECTION("the same shape in v1alpha3 and v1alpha2 (1.36); other versions are named") {
    json object = json::parse(kV1beta1PodGroup);
    object["apiVersion"] = "scheduling.k8s.io/v1alpha3";
    CHECK(DecodeSchedulingPodGroup(object).ok());
    object["apiVersion"] = "scheduling.k8s.io/v1alpha2";
    CHECK(DecodeSchedulingPodGroup(object).ok());
    object["apiVersion"] = "scheduling.k8s.io/v2";
    auto r = DecodeSchedulingPodGroup(object);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() ==
          "PodGroup team-a/train-0: apiVersion: expected one of scheduling.k8s.io/v1beta1, "
          "scheduling.k8s.io/v1alpha3, scheduling.k8s.io/v1alpha2, got scheduling.k8s.io/v2");
  }
}

TEST_CASE("what a v1beta1 PodGroup's status read leaves out changes nothing decoded", "[gang][decode]") {
  // Statuses a group goes through: Tessel's own condition messages and times, the condition
  // flipping, claims made for the group, another condition, malformed ones.
  std::vector<json> statuses = {
      json::object(),
      json::parse(R"({"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable",
                                      "message": "2 of 3 members fit", "lastTransitionTime": "2026-01-01T00:00:00Z"}]})"),
      json::parse(R"({"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable",
                                      "message": "1 of 3 members fit", "lastTransitionTime": "2026-01-01T00:05:00Z"}]})"),
      json::parse(R"({"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled",
                                      "message": "", "lastTransitionTime": "2026-01-01T00:09:00Z"}]})"),
      json::parse(R"({"conditions": [{"type": "Unsupported", "status": "True", "message": "x"},
                                     {"type": "PodGroupInitiallyScheduled", "status": "True"}]})"),
      json::parse(R"({"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"}],
                      "resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "train-0-gpus-x7"}]})"),
      json::parse(R"({"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"}],
                      "resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "train-0-gpus-q2"}]})"),
      json::parse(R"({"conditions": [{"type": "PodGroupInitiallyScheduled", "status": 7}]})"),
      json::parse(R"({"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"}, "bad"]})"),
      json::parse(R"({"conditions": [{"type": 7}, {"type": "PodGroupInitiallyScheduled", "status": "True"}]})"),
      json::parse(R"({"conditions": [{"type": "Other"}, {"type": "PodGroupInitiallyScheduled", "status": "True"}]})"),
      json::parse(R"({"conditions": "bad"})"),
      json(3),
  };
  auto decoded = [](const json& status) {
    json object = json::parse(kV1beta1PodGroup);
    object["status"] = status;
    auto pg = DecodeSchedulingPodGroup(object);
    if (!pg.ok()) return std::string(pg.status().message());
    std::string out = pg->initially_scheduled ? "scheduled" : "not scheduled";
    for (const auto& [name, claim] : pg->generated_claims) out += " " + name + "=" + claim;
    return out;
  };
  int same_read = 0, different_read = 0;
  for (const json& a : statuses) {
    for (const json& b : statuses) {
      CAPTURE(a.dump(), b.dump());
      if (SchedulingPodGroupStatusRead(a) == SchedulingPodGroupStatusRead(b)) {
        ++same_read;
        CHECK(decoded(a) == decoded(b));
      } else {
        ++different_read;
      }
    }
  }
  CHECK(same_read > static_cast<int>(statuses.size()));  // not only each with itself
  CHECK(SchedulingPodGroupStatusRead(statuses[1]) == SchedulingPodGroupStatusRead(statuses[2]));  // messages, times
  CHECK(SchedulingPodGroupStatusRead(statuses[2]) != SchedulingPodGroupStatusRead(statuses[3]));  // the flip
  CHECK(SchedulingPodGroupStatusRead(statuses[5]) != SchedulingPodGroupStatusRead(statuses[6]));  // the claims
}

TEST_CASE("bad v1beta1 PodGroups are rejected with the object and the field", "[gang][decode]") {
  struct Case {
    const char* name;
    const char* patch;  // merged into the spec
    const char* want;
  };
  const Case cases[] = {
      {"no policy", R"({"schedulingPolicy": null})", "spec.schedulingPolicy: missing"},
      {"both policies", R"({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 2}}})",
       "spec.schedulingPolicy: exactly one of basic and gang must be set"},
      {"zero minCount", R"({"schedulingPolicy": {"gang": {"minCount": 0}}})",
       "spec.schedulingPolicy.gang.minCount: must be an integer of at least 1, got 0"},
      {"two topology keys",
       R"({"schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]}})",
       "spec.schedulingConstraints.topology: at most one topology constraint is supported, got 2"},
      {"topology without key", R"({"schedulingConstraints": {"topology": [{}]}})",
       "spec.schedulingConstraints.topology[0].key: missing"},
      {"both disruption modes", R"({"disruptionMode": {"single": {}, "all": {}}})",
       "spec.disruptionMode: exactly one of single and all must be set"},
      {"unknown preemption policy", R"({"preemptionPolicy": "Sometimes"})",
       "spec.preemptionPolicy: unknown preemption policy \"Sometimes\" (want PreemptLowerPriority or Never)"},
      {"priority out of range", R"({"priority": 3000000000})", "spec.priority: out of the int32 range"},
      {"claim without name", R"({"resourceClaims": [{"resourceClaimName": "c"}]})",
       "spec.resourceClaims[0].name: missing"},
      {"claim naming a claim and a template",
       R"({"resourceClaims": [{"name": "nic", "resourceClaimName": "c", "resourceClaimTemplateName": "t"}]})",
       "spec.resourceClaims[0]: exactly one of resourceClaimName and resourceClaimTemplateName must be set"},
      {"claim naming neither", R"({"resourceClaims": [{"name": "nic"}]})",
       "spec.resourceClaims[0]: exactly one of resourceClaimName and resourceClaimTemplateName must be set"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      json object = json::parse(kV1beta1PodGroup);
      object["spec"].merge_patch(json::parse(c.patch));
      auto r = DecodeSchedulingPodGroup(object);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().message() == std::string("PodGroup team-a/train-0: ") + c.want);
    }
  }
}

TEST_CASE("a v1beta1 PodGroup maps onto the gang spec; what Tessel cannot honour is named", "[gang][book]") {
  GangBook book;
  Pod member = PodBuilder("train-0-a", "team-a").Priority(1000).Build();
  member.scheduling_group = "train-0";
  CHECK(book.Resolve(member).membership == GangBook::Membership::kWaiting);

  json object = json::parse(kV1beta1PodGroup);
  book.Put(Decoded(DecodeSchedulingPodGroup(object)));
  GangBook::Resolution r = book.Resolve(member);
  REQUIRE(r.membership == GangBook::Membership::kGang);
  CHECK(r.spec.id.Describe() == "PodGroup team-a/train-0 (scheduling.k8s.io)");
  CHECK(r.spec.min_member == 3);
  CHECK(r.spec.topology_key == "topology.kubernetes.io/rack");
  CHECK(r.spec.preemption_policy == PreemptionPolicy::kNever);
  CHECK_FALSE(r.spec.schedule_timeout.has_value());  // v1beta1 has no timeout field
  CHECK(r.spec.unsupported.empty());

  SECTION("a parent CompositePodGroup, group resource claims (honoured: DynamicResources), another priority") {
    object["spec"]["parentCompositePodGroupName"] = "job";
    object["spec"]["resourceClaims"] = json::parse(
        R"([{"name": "nic", "resourceClaimName": "rdma"}, {"name": "gpus", "resourceClaimTemplateName": "eight"}])");
    object["status"]["resourceClaimStatuses"] = json::parse(R"([{"name": "gpus", "resourceClaimName": "train-0-gpus-x7"}])");
    object["spec"]["priority"] = 10;
    absl::StatusOr<SchedulingPodGroup> decoded = DecodeSchedulingPodGroup(object);
    REQUIRE(decoded.ok());
    REQUIRE(decoded->resource_claims.size() == 2);
    CHECK(decoded->resource_claims[0].resource_claim_name == "rdma");
    CHECK(decoded->resource_claims[1].resource_claim_template_name == "eight");
    CHECK(decoded->generated_claims.at("gpus") == "train-0-gpus-x7");
    book.Put(Decoded(DecodeSchedulingPodGroup(object)));
    CHECK(book.Resolve(member).spec.unsupported ==
          std::vector<std::string>{
              "spec.parentCompositePodGroupName: Tessel does not read CompositePodGroups; the PodGroup is "
              "placed as a gang of its own, without CompositePodGroup job's minGroupCount",
              "spec.priority: 10 differs from member team-a/train-0-a's priority 1000; Tessel orders and "
              "preempts by the members' priority"});
  }
  SECTION("the basic policy: ordinary pods") {
    object["spec"]["schedulingPolicy"] = {{"basic", json::object()}};
    book.Put(Decoded(DecodeSchedulingPodGroup(object)));
    CHECK(book.Resolve(member).membership == GangBook::Membership::kNone);
  }
  SECTION("the kind table reads every version") {
    for (std::string_view v : kSchedulingPodGroupVersions) CHECK(IsReadKind(v, "PodGroup"));
    CHECK_FALSE(IsReadKind("scheduling.k8s.io/v1beta1", "CompositePodGroup"));
  }
}

}  // namespace gang_api_test
}  // namespace tessel::gang
