// ProvisioningRequests (scheduler/provisioning): the objects Tessel writes for a gang, what a
// request's conditions say, the marking, the per-gang state machine (Provisioned, Failed,
// CapacityRevoked, BookingExpired, a deleted gang, a gang placed elsewhere, a restart), and the
// core's hooks: a marked gang short only of capacity asks, and says so; one short of quota, or
// not marked, does not; a placed gang lets go of its request.
#include <catch2/catch.hpp>

#include <algorithm>

#include "harness/core_harness.h"
#include "nlohmann/json.hpp"
#include "scheduler/provisioning/provisioner.h"
#include "scheduler/provisioning/provisioning_request.h"
#include "scheduler/provisioning/request_book.h"
#include "scheduler/quota/flavor.h"
#include "scheduler/quota/queue.h"
#include "scheduler/quota/quota_tracker.h"
#include "scheduler/quota/quota_usage.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/strings.h"

namespace tessel::provisioning {
namespace provisioning_test {

using nlohmann::json;
using testing::NodeBuilder;
using testing::PodBuilder;

json PodJson(std::string name, std::string gpus, json extra_spec = json::object()) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "team-a"}}},
              {"spec",
               {{"schedulerName", "tessel"},
                {"containers",
                 {{{"name", "main"},
                   {"image", "trainer"},
                   {"command", {"train"}},
                   {"env", {{{"name", "A"}, {"value", "1"}}}},
                   {"resources", {{"requests", {{"cpu", "1"}}}, {"limits", {{"nvidia.com/gpu", gpus}}}}}}}},
                {"volumes", {{{"name", "data"}, {"emptyDir", json::object()}}}}}}};
  pod["spec"].update(extra_spec);
  return pod;
}

RequestSpec Spec() {
  return RequestSpec{.namespace_ = "team-a",
                     .name = "tessel-podgroup-train-1",
                     .gang_key = "podgroup:team-a/train",
                     .marking = {.class_name = "queued-provisioning.gke.io", .parameters = {{"maxRunDurationSeconds", "3600"}}},
                     .owner = {.api_version = "scheduling.x-k8s.io/v1alpha1", .kind = "PodGroup", .name = "train", .uid = "u1"}};
}

json Request(std::string name, std::vector<std::pair<std::string, std::string>> conditions,
             std::string gang = "podgroup:team-a/train") {
  json c = json::array();
  for (const auto& [type, status] : conditions) {
    c.push_back({{"type", type}, {"status", status}, {"reason", type + "Reason"}, {"message", type + " message"}});
  }
  return {{"metadata",
           {{"name", name},
            {"namespace", "team-a"},
            {"labels", {{kManagedByLabel, kManagedByValue}}},
            {"annotations", {{kGangAnnotation, gang}}}}},
          {"status", {{"conditions", c}}}};
}

TEST_CASE("request names are deterministic, valid and per gang", "[provisioning]") {
  CHECK(RequestName("podgroup:team-a/train", 1) == "tessel-podgroup-train-1");
  CHECK(RequestName("podgroup:team-a/train", 2) == "tessel-podgroup-train-2");
  CHECK(RequestName("job:team-a/train", 1) == "tessel-job-train-1");
  CHECK(RequestName("workload:ns/W/Workers/0", 3) == "tessel-workload-w-workers-0-3");
  const std::string long_name = RequestName(StrCat("podgroup:ns/", std::string(400, 'a')), 12);
  CHECK(long_name.size() <= 249);
  CHECK(long_name.ends_with("a-12"));
  CHECK(TemplateName("tessel-podgroup-train-1", 0) == "tessel-podgroup-train-1-0");
}

TEST_CASE("a template keeps what decides placement and drops the rest", "[provisioning]") {
  const json pod = PodJson("p", "8",
                           {{"nodeSelector", {{"pool", "a100"}}},
                            {"tolerations", {{{"key", "gpu"}, {"operator", "Exists"}}}},
                            {"affinity", {{"nodeAffinity", json::object()}}},
                            {"priorityClassName", "high"}});
  const json spec = TemplateSpecOf(pod);
  CHECK(spec["nodeSelector"] == json({{"pool", "a100"}}));
  CHECK(spec["tolerations"].size() == 1);
  CHECK(spec.contains("affinity"));
  CHECK(spec["priorityClassName"] == "high");
  CHECK_FALSE(spec.contains("volumes"));
  REQUIRE(spec["containers"].size() == 1);
  CHECK(spec["containers"][0] == json({{"name", "main"},
                                       {"image", "trainer"},
                                       {"resources", {{"requests", {{"cpu", "1"}}}, {"limits", {{"nvidia.com/gpu", "8"}}}}}}));
  CHECK(TemplateSpecOf(json("not a pod")) == json({{"containers", json::array()}}));
}

TEST_CASE("members of one shape are one pod set; the request names the templates", "[provisioning]") {
  const std::vector<PodSetTemplate> sets =
      PodSets({PodJson("w-0", "8"), PodJson("w-1", "8"), PodJson("ps", "1"), PodJson("w-2", "8")});
  REQUIRE(sets.size() == 2);
  CHECK(sets[0].count == 3);
  CHECK(sets[1].count == 1);

  const json request = RequestObject(Spec(), sets);
  CHECK(request["apiVersion"] == "autoscaling.x-k8s.io/v1");
  CHECK(request["kind"] == "ProvisioningRequest");
  CHECK(request["metadata"]["name"] == "tessel-podgroup-train-1");
  CHECK(request["metadata"]["annotations"][std::string(kGangAnnotation)] == "podgroup:team-a/train");
  CHECK(request["metadata"]["ownerReferences"][0] ==
        json({{"apiVersion", "scheduling.x-k8s.io/v1alpha1"}, {"kind", "PodGroup"}, {"name", "train"}, {"uid", "u1"}}));
  CHECK(request["spec"]["provisioningClassName"] == "queued-provisioning.gke.io");
  CHECK(request["spec"]["parameters"] == json({{"maxRunDurationSeconds", "3600"}}));
  CHECK(request["spec"]["podSets"] ==
        json::parse(R"([{"podTemplateRef":{"name":"tessel-podgroup-train-1-0"},"count":3},
                        {"podTemplateRef":{"name":"tessel-podgroup-train-1-1"},"count":1}])"));

  const json tmpl = PodTemplateObject(Spec(), 1, sets[1]);
  CHECK(tmpl["kind"] == "PodTemplate");
  CHECK(tmpl["metadata"]["name"] == "tessel-podgroup-train-1-1");
  CHECK(tmpl["metadata"]["ownerReferences"][0]["uid"] == "u1");
  CHECK(tmpl["template"]["spec"] == sets[1].template_spec);
}

TEST_CASE("a request's conditions decide its phase", "[provisioning]") {
  auto phase = [](std::vector<std::pair<std::string, std::string>> c) {
    return DecodeRequest(Request("tessel-podgroup-train-1", std::move(c)))->phase;
  };
  CHECK(phase({}) == RequestPhase::kPending);
  CHECK(phase({{"Accepted", "True"}}) == RequestPhase::kPending);
  CHECK(phase({{"Accepted", "True"}, {"Provisioned", "False"}}) == RequestPhase::kPending);
  CHECK(phase({{"Provisioned", "True"}}) == RequestPhase::kProvisioned);
  CHECK(phase({{"Failed", "True"}}) == RequestPhase::kFailed);
  CHECK(phase({{"Provisioned", "True"}, {"BookingExpired", "True"}}) == RequestPhase::kBookingExpired);
  CHECK(phase({{"Provisioned", "True"}, {"CapacityRevoked", "True"}}) == RequestPhase::kCapacityRevoked);

  absl::StatusOr<ObservedRequest> r = DecodeRequest(Request("tessel-podgroup-train-1", {{"Failed", "True"}}));
  REQUIRE(r.ok());
  CHECK(r->gang_key == "podgroup:team-a/train");
  CHECK(r->reason == "FailedReason");
  CHECK(r->message == "Failed message");

  json bad = Request("tessel-podgroup-train-1", {});
  bad["status"]["conditions"] = "x";
  CHECK(DecodeRequest(bad).status().message() == "ProvisioningRequest team-a/tessel-podgroup-train-1: status.conditions is not a list");
  CHECK(DecodeRequest(json::object()).status().message() == "ProvisioningRequest /: metadata.name is missing");
}

TEST_CASE("the marking: the pod's annotation, then its gang's, then its queue's", "[provisioning]") {
  Queue q;
  q.provisioning = ProvisioningClass{.class_name = "check-capacity.autoscaling.x-k8s.io", .parameters = {{"a", "b"}}};
  const StringMap pod = {{std::string(kClassAnnotation), "from-pod"}};
  const StringMap group = {{std::string(kClassAnnotation), "from-group"}};
  CHECK(MarkingFor(pod, group, {}, &q)->class_name == "from-pod");
  CHECK(MarkingFor({}, group, {}, &q)->class_name == "from-group");
  CHECK(*MarkingFor({}, {}, {}, &q) == Marking{.class_name = "check-capacity.autoscaling.x-k8s.io", .parameters = {{"a", "b"}}});
  CHECK_FALSE(MarkingFor({}, {}, {}, nullptr).has_value());
  const Queue plain;
  CHECK_FALSE(MarkingFor({}, {}, {}, &plain).has_value());
}

TEST_CASE("Queue spec.provisioning decodes, and a missing className names the field", "[provisioning]") {
  json queue = {{"apiVersion", "tessel.io/v1alpha1"},
                {"kind", "Queue"},
                {"metadata", {{"name", "team-a"}}},
                {"spec",
                 {{"namespaces", {"team-a"}},
                  {"provisioning", {{"className", "queued-provisioning.gke.io"}, {"parameters", {{"x", "1"}}}}}}}};
  absl::StatusOr<Queue> q = DecodeQueue(queue);
  REQUIRE(q.ok());
  REQUIRE(q->provisioning.has_value());
  CHECK(q->provisioning->class_name == "queued-provisioning.gke.io");
  CHECK(q->provisioning->parameters == StringMap{{"x", "1"}});
  queue["spec"]["provisioning"] = {{"parameters", {{"x", "1"}}}};
  CHECK_THAT(std::string(DecodeQueue(queue).status().message()), Catch::Contains("spec.provisioning.className"));
}

TEST_CASE("shortfalls that more nodes can end", "[provisioning]") {
  CHECK(CapacityOnly({}));
  CHECK(CapacityOnly({"NodeResourcesFit", "Tessel", "NodeAffinity", "TaintToleration"}));
  CHECK_FALSE(CapacityOnly({"NodeResourcesFit", "QueueQuota"}));
  CHECK_FALSE(CapacityOnly({"VolumeBinding"}));
  CHECK_FALSE(CapacityOnly({"NodeName"}));
}

// --- The state machine. ---

const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
const std::vector<std::string> kTrain = {"team-a/train-0", "team-a/train-1"};

Ask TrainAsk() {
  return Ask{.gang_key = "podgroup:team-a/train",
             .namespace_ = "team-a",
             .marking = {.class_name = "queued-provisioning.gke.io"},
             .owner = {.api_version = "scheduling.x-k8s.io/v1alpha1", .kind = "PodGroup", .name = "train", .uid = "u1"}};
}

void See(RequestBook& book, std::string name, std::vector<std::pair<std::string, std::string>> conditions,
         absl::Time now = t0) {
  book.Observe(*DecodeRequest(Request(std::move(name), std::move(conditions))), now);
}

TEST_CASE("a gang asks once and waits until Provisioned, then lets go when placed", "[provisioning]") {
  RequestBook book;
  Step first = book.Shortfall(TrainAsk(), kTrain, t0);
  REQUIRE(first.kind == Step::Kind::kCreate);
  CHECK(first.create.name == "tessel-podgroup-train-1");
  CHECK(first.create.owner.uid == "u1");
  CHECK(first.create.marking.class_name == "queued-provisioning.gke.io");
  CHECK(first.remove.empty());
  CHECK(first.message ==
        "waiting for ProvisioningRequest team-a/tessel-podgroup-train-1 (class queued-provisioning.gke.io) to be provisioned");

  // Not seen yet, then Accepted: no second request.
  CHECK(book.Shortfall(TrainAsk(), kTrain, t0).kind == Step::Kind::kWait);
  See(book, "tessel-podgroup-train-1", {{"Accepted", "True"}});
  CHECK(book.Shortfall(TrainAsk(), kTrain, t0).kind == Step::Kind::kWait);

  See(book, "tessel-podgroup-train-1", {{"Accepted", "True"}, {"Provisioned", "True"}});
  Step provisioned = book.Shortfall(TrainAsk(), kTrain, t0);
  CHECK(provisioned.kind == Step::Kind::kWait);
  CHECK_THAT(provisioned.message, Catch::Contains("is Provisioned; waiting for its nodes"));
  CHECK(book.PhaseOf("podgroup:team-a/train") == RequestPhase::kProvisioned);

  // Placed: its request goes, and a late update of it does not bring the gang back.
  CHECK(book.Release("podgroup:team-a/train") == std::vector<RequestRef>{{"team-a", "tessel-podgroup-train-1"}});
  See(book, "tessel-podgroup-train-1", {{"Provisioned", "True"}});
  CHECK(book.size() == 0);
  book.Removed({"team-a", "tessel-podgroup-train-1"});
  CHECK(book.Release("podgroup:team-a/train").empty());
}

TEST_CASE("placed elsewhere before the request was provisioned: the request is removed", "[provisioning]") {
  RequestBook book;
  REQUIRE(book.Shortfall(TrainAsk(), kTrain, t0).kind == Step::Kind::kCreate);
  See(book, "tessel-podgroup-train-1", {{"Accepted", "True"}});
  CHECK(book.Release("podgroup:team-a/train") == std::vector<RequestRef>{{"team-a", "tessel-podgroup-train-1"}});
  // Short again later: a fresh ask.
  CHECK(book.Shortfall(TrainAsk(), kTrain, t0).kind == Step::Kind::kCreate);
}

TEST_CASE("a deleted gang's requests, earlier attempts included, are removed", "[provisioning]") {
  RequestBook book;
  REQUIRE(book.Shortfall(TrainAsk(), kTrain, t0).kind == Step::Kind::kCreate);
  See(book, "tessel-podgroup-train-1", {{"Provisioned", "True"}, {"BookingExpired", "True"}});
  Step again = book.Shortfall(TrainAsk(), kTrain, t0);
  REQUIRE(again.kind == Step::Kind::kCreate);
  // The old one is handed out for deletion once, and does not come back.
  CHECK(again.remove == std::vector<RequestRef>{{"team-a", "tessel-podgroup-train-1"}});
  CHECK(book.Release("podgroup:team-a/train") == std::vector<RequestRef>{{"team-a", "tessel-podgroup-train-2"}});
}

TEST_CASE("BookingExpired before placement: asked again with the next attempt", "[provisioning]") {
  RequestBook book;
  REQUIRE(book.Shortfall(TrainAsk(), kTrain, t0).kind == Step::Kind::kCreate);
  See(book, "tessel-podgroup-train-1", {{"Provisioned", "True"}, {"BookingExpired", "True"}});
  Step again = book.Shortfall(TrainAsk(), kTrain, t0);
  REQUIRE(again.kind == Step::Kind::kCreate);
  CHECK(again.create.name == "tessel-podgroup-train-2");
  CHECK_THAT(again.message, Catch::StartsWith("ProvisioningRequest team-a/tessel-podgroup-train-1 (class "
                                              "queued-provisioning.gke.io) expired before the gang was placed "
                                              "(BookingExpired: BookingExpiredReason); waiting for "
                                              "ProvisioningRequest team-a/tessel-podgroup-train-2"));
  CHECK(book.Current("podgroup:team-a/train") == RequestRef{"team-a", "tessel-podgroup-train-2"});
}

TEST_CASE("CapacityRevoked: the reason is reported and the gang asks again at once", "[provisioning]") {
  RequestBook book;
  REQUIRE(book.Shortfall(TrainAsk(), kTrain, t0).kind == Step::Kind::kCreate);
  See(book, "tessel-podgroup-train-1", {{"Provisioned", "True"}, {"CapacityRevoked", "True"}});
  Step again = book.Shortfall(TrainAsk(), kTrain, t0);
  REQUIRE(again.kind == Step::Kind::kCreate);
  CHECK(again.create.name == "tessel-podgroup-train-2");
  CHECK_THAT(again.message, Catch::Contains("lost its capacity (CapacityRevoked: CapacityRevokedReason: "
                                            "CapacityRevoked message)"));
  CHECK(again.remove == std::vector<RequestRef>{{"team-a", "tessel-podgroup-train-1"}});
}

TEST_CASE("Failed: the gang stays pending with the reason until the retry is due", "[provisioning]") {
  RequestBook book({.failed_retry = absl::Minutes(10)});
  REQUIRE(book.Shortfall(TrainAsk(), kTrain, t0).kind == Step::Kind::kCreate);
  See(book, "tessel-podgroup-train-1", {{"Failed", "True"}}, t0 + absl::Minutes(1));
  Step failed = book.Shortfall(TrainAsk(), kTrain, t0 + absl::Minutes(2));
  CHECK(failed.kind == Step::Kind::kFailed);
  CHECK(failed.message ==
        "ProvisioningRequest team-a/tessel-podgroup-train-1 (class queued-provisioning.gke.io) failed: FailedReason: "
        "Failed message; asking again at 2023-11-14T22:24:20Z");
  // The same Failed seen again does not move the retry.
  See(book, "tessel-podgroup-train-1", {{"Failed", "True"}}, t0 + absl::Minutes(5));
  CHECK(book.Shortfall(TrainAsk(), kTrain, t0 + absl::Minutes(10)).kind == Step::Kind::kFailed);
  Step retry = book.Shortfall(TrainAsk(), kTrain, t0 + absl::Minutes(11));
  REQUIRE(retry.kind == Step::Kind::kCreate);
  CHECK(retry.create.name == "tessel-podgroup-train-2");
  CHECK(retry.remove == std::vector<RequestRef>{{"team-a", "tessel-podgroup-train-1"}});
}

TEST_CASE("a request that could not be created counts as Failed", "[provisioning]") {
  RequestBook book({.failed_retry = absl::Minutes(1)});
  REQUIRE(book.Shortfall(TrainAsk(), kTrain, t0).kind == Step::Kind::kCreate);
  book.CreateFailed("podgroup:team-a/train", {"team-a", "tessel-podgroup-train-1"}, "the server could not find it", t0);
  Step failed = book.Shortfall(TrainAsk(), kTrain, t0);
  CHECK(failed.kind == Step::Kind::kFailed);
  CHECK_THAT(failed.message, Catch::Contains("failed: CreateFailed: the server could not find it"));
  CHECK(book.Shortfall(TrainAsk(), kTrain, t0 + absl::Minutes(1)).kind == Step::Kind::kCreate);
}

TEST_CASE("a request deleted by someone else: the gang asks again", "[provisioning]") {
  RequestBook book;
  REQUIRE(book.Shortfall(TrainAsk(), kTrain, t0).kind == Step::Kind::kCreate);
  book.Removed({"team-a", "tessel-podgroup-train-1"});
  Step again = book.Shortfall(TrainAsk(), kTrain, t0);
  REQUIRE(again.kind == Step::Kind::kCreate);
  CHECK(again.create.name == "tessel-podgroup-train-2");
  CHECK(again.remove.empty());
}

TEST_CASE("after a restart the requests found are adopted: the latest is current", "[provisioning]") {
  RequestBook book;
  See(book, "tessel-podgroup-train-2", {{"Provisioned", "True"}});
  See(book, "tessel-podgroup-train-1", {{"Failed", "True"}});
  CHECK_FALSE(DecodeRequest(Request("someone-else", {})).ok());  // a name Tessel never gives the gang
  book.Observe(*DecodeRequest(Request("foreign", {}, "")), t0);
  Step s = book.Shortfall(TrainAsk(), kTrain, t0);
  CHECK(s.kind == Step::Kind::kWait);
  CHECK_THAT(s.message, Catch::Contains("tessel-podgroup-train-2"));
  CHECK(s.remove == std::vector<RequestRef>{{"team-a", "tessel-podgroup-train-1"}});
}

TEST_CASE("a request in another namespace, or not Tessel's, never stands for a gang", "[provisioning]") {
  // Issue 37, defect 7: mallory's request annotated with the victim's gang.
  json hijack = Request("tessel-podgroup-train-99", {{"Provisioned", "True"}});
  hijack["metadata"]["namespace"] = "mallory";
  CHECK(DecodeRequest(hijack).status().message() ==
        "ProvisioningRequest mallory/tessel-podgroup-train-99: metadata.annotations[tessel.io/gang] "
        "\"podgroup:team-a/train\" names a gang of namespace \"team-a\"; Tessel adopts only requests in their "
        "gang's own namespace");
  json unlabelled = Request("tessel-podgroup-train-3", {});
  unlabelled["metadata"].erase("labels");
  CHECK_THAT(std::string(DecodeRequest(unlabelled).status().message()),
             Catch::Contains("is not labelled app.kubernetes.io/managed-by=tessel"));
  CHECK_THAT(std::string(DecodeRequest(Request("hijack-99", {})).status().message()),
             Catch::Contains("Tessel names that gang's requests tessel-podgroup-train-1"));
  CHECK(GangNamespace("podgroup:team-a/train") == "team-a");
  CHECK(GangNamespace("pod:team-a/p") == "team-a");
  CHECK(GangNamespace("workload:ns/w/workers/0") == "ns");
  CHECK(GangNamespace("nonsense").empty());

  // The book holds the same line for any caller: the gang keeps its own request.
  RequestBook book;
  REQUIRE(book.Shortfall(TrainAsk(), kTrain, t0).kind == Step::Kind::kCreate);
  book.Observe(ObservedRequest{.namespace_ = "mallory", .name = "tessel-podgroup-train-99",
                               .gang_key = "podgroup:team-a/train", .phase = RequestPhase::kProvisioned},
               t0);
  CHECK(book.Current("podgroup:team-a/train") == RequestRef{"team-a", "tessel-podgroup-train-1"});
  CHECK(book.Release("podgroup:team-a/train") == std::vector<RequestRef>{{"team-a", "tessel-podgroup-train-1"}});
}

// --- The core's hooks. ---

class FakeProvisioner final : public Provisioner {
 public:
  Outcome GangShort(const GangShortage& s) override {
    asks.push_back(s);
    return outcome;
  }
  void GangPlaced(const std::string& key) override { placed.push_back(key); }
  void GangGone(const std::string& key) override { gone.push_back(key); }
  Outcome outcome{.message = "waiting for ProvisioningRequest team-a/x"};
  std::vector<GangShortage> asks;
  std::vector<std::string> placed, gone;
};

class StatusRecorder final : public gang::GangStatusSink, public SchedulingObserver {
 public:
  void GangStatusChanged(const gang::GangId& id, const gang::GangStatusUpdate& u) override { status[id.Key()] = u; }
  void PodScheduled(const Pod&, const std::string&) override {}
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override {
    messages[pod.Key()] = message;
    kinds[pod.Key()] = kind;
  }
  std::map<std::string, gang::GangStatusUpdate> status;
  std::map<std::string, std::string> messages;
  std::map<std::string, FailureKind> kinds;
};

struct Core {
  FakeProvisioner prov;
  StatusRecorder rec;
  testing::CoreHarness h{{.parallelism = 1, .observer = &rec, .gang_status = &rec, .provisioner = &prov}};

  void Group(std::string name, int min, StringMap annotations = {}) {
    json pg = {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
               {"kind", "PodGroup"},
               {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", "uid-" + name}}},
               {"spec", {{"minMember", min}}}};
    for (const auto& [k, v] : annotations) pg["metadata"]["annotations"][k] = v;
    REQUIRE(h.ApplyGangObject(pg).value());
  }
  void Members(std::string group, int n, int gpus, StringMap annotations = {}) {
    for (int i = 0; i < n; ++i) {
      PodBuilder b(StrCat(group, "-", i), "team-a");
      b.Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus)).Created(1'700'000'000 + i);
      for (const auto& [k, v] : annotations) b.Annotation(k, v);
      Pod p = b.Build();
      p.meta.labels["scheduling.x-k8s.io/pod-group"] = group;
      h.AddPod(std::move(p));
    }
  }
  // Queue team-a: `nominal` GPUs, and capacity asked for with check-capacity.
  void ProvisioningQueue(std::string nominal) {
    REQUIRE(h.ApplyQueueObject({{"apiVersion", "tessel.io/v1alpha1"},
                                {"kind", "Queue"},
                                {"metadata", {{"name", "team-a"}}},
                                {"spec",
                                 {{"namespaces", {"team-a"}},
                                  {"nominalQuota", {{"nvidia.com/gpu", nominal}}},
                                  {"provisioning", {{"className", "check-capacity.autoscaling.x-k8s.io"}}}}}})
                .ok());
  }
  void Nodes(int n, int gpus, std::string prefix) {
    for (int i = 0; i < n; ++i) {
      h.AddNode(NodeBuilder(StrCat(prefix, i)).Allocatable(StrCat("cpu:64,memory:512Gi,nvidia.com/gpu:", gpus)).Build());
    }
  }
  int Bound(std::string_view prefix) const {
    int n = 0;
    for (const auto& [pod, node] : h.binds()) n += node.starts_with(prefix);
    return n;
  }
};

const StringMap kMarked = {{std::string(kClassAnnotation), "queued-provisioning.gke.io"}};

TEST_CASE("core: a marked gang short of capacity asks, says so, and binds whole once nodes come", "[provisioning][core]") {
  Core c;
  c.Nodes(2, 4, "small-");  // 4-GPU nodes cannot take 8-GPU members
  c.Group("train", 4, kMarked);
  c.Members("train", 4, 8);
  c.h.ScheduleAll();
  REQUIRE_FALSE(c.prov.asks.empty());
  const GangShortage& ask = c.prov.asks.front();
  CHECK(ask.ask.gang_key == "podgroup:team-a/train");
  CHECK(ask.ask.namespace_ == "team-a");
  CHECK(ask.ask.marking.class_name == "queued-provisioning.gke.io");
  CHECK(ask.ask.owner.kind == "PodGroup");
  CHECK(ask.ask.owner.uid == "uid-train");
  CHECK(ask.member_keys.size() == 4);
  CHECK(c.h.binds().empty());
  const gang::GangStatusUpdate& u = c.rec.status.at("podgroup:team-a/train");
  CHECK(u.reason == gang::GangReason::kWaitingForProvisioning);
  CHECK_THAT(u.message, Catch::EndsWith("; waiting for ProvisioningRequest team-a/x"));
  CHECK_THAT(c.rec.messages.at("team-a/train-0"), Catch::Contains("waiting for ProvisioningRequest team-a/x"));
  // Not Unschedulable: no autoscaler adds nodes for these pods besides the request.
  CHECK(c.rec.kinds.at("team-a/train-0") == FailureKind::kWaitingForProvisioning);

  // The provisioner's nodes arrive: the gang binds whole on them and lets go of its request.
  c.Nodes(4, 8, "new-");
  c.h.clock.Advance(absl::Seconds(30));
  c.h.ScheduleAll();
  CHECK(c.Bound("new-") == 4);
  CHECK(c.h.binds().size() == 4);
  CHECK(std::count(c.prov.placed.begin(), c.prov.placed.end(), "podgroup:team-a/train") == 1);
}

TEST_CASE("core: a failed request leaves the gang pending with the reason", "[provisioning][core]") {
  Core c;
  c.prov.outcome = {.failed = true, .message = "ProvisioningRequest team-a/x failed: NoCapacity"};
  c.Group("train", 2);
  c.Members("train", 2, 8, kMarked);  // marked on the pods
  c.h.ScheduleAll();
  REQUIRE_FALSE(c.prov.asks.empty());
  CHECK(c.rec.status.at("podgroup:team-a/train").reason == gang::GangReason::kProvisioningFailed);
  CHECK_THAT(c.rec.messages.at("team-a/train-1"), Catch::Contains("failed: NoCapacity"));
  CHECK(c.h.binds().empty());
}

TEST_CASE("core: unmarked gangs, and gangs short of quota, do not ask", "[provisioning][core]") {
  Core c;
  c.Group("plain", 2);
  c.Members("plain", 2, 8);
  c.h.ScheduleAll();
  CHECK(c.prov.asks.empty());
  CHECK(c.rec.status.at("podgroup:team-a/plain").reason == gang::GangReason::kUnschedulable);

  // A queue that provisions, but whose quota is short: the quota's message, no request.
  c.ProvisioningQueue("4");
  c.Nodes(4, 8, "big-");
  c.Group("over", 2);
  c.Members("over", 2, 8);
  c.h.ScheduleAll();
  CHECK(c.prov.asks.empty());
  CHECK(c.rec.kinds.at("team-a/over-0") == FailureKind::kQuotaExceeded);
}

// The whole gang's quota comes before capacity (issue 38, defect 5): a flat queue of nominal 6
// never admits 4 x 2 GPUs together, however the nodes are cut, and no nodes are asked for it.
TEST_CASE("core: a gang over its flat queue's quota is over quota on any nodes, and does not ask",
          "[provisioning][core][quota]") {
  Core c;
  c.ProvisioningQueue("6");
  SECTION("two empty 4-GPU nodes (room for 4 members, quota for 3)") { c.Nodes(2, 4, "small-"); }
  SECTION("two 2-GPU nodes: the nodes are short too") { c.Nodes(2, 2, "tiny-"); }
  c.Group("over", 4);
  c.Members("over", 4, 2);
  c.h.ScheduleAll();
  CHECK(c.prov.asks.empty());
  CHECK(c.h.binds().empty());
  for (int i = 0; i < 4; ++i) {
    const std::string key = StrCat("team-a/over-", i);
    CHECK(c.rec.kinds.at(key) == FailureKind::kQuotaExceeded);
    CHECK_THAT(c.rec.messages.at(key), Catch::Contains("queue team-a: nvidia.com/gpu 8 of nominal 6"));
  }
  CHECK_THAT(c.rec.status.at("podgroup:team-a/over").message, Catch::Contains("its quota does not admit it"));
}

TEST_CASE("core: a single marked pod asks too; bound, it lets go; deleted, too", "[provisioning][core]") {
  Core c;
  c.Nodes(1, 4, "small-");
  c.h.AddPod(PodBuilder("solo", "team-a").Requests("cpu:1,nvidia.com/gpu:8").Annotation(std::string(kClassAnnotation), "queued-provisioning.gke.io").Build());
  c.h.AddPod(PodBuilder("plain", "team-a").Requests("cpu:1,nvidia.com/gpu:16").Build());  // fits nowhere
  c.h.ScheduleAll();
  REQUIRE(c.prov.asks.size() == 1);
  CHECK(c.prov.asks[0].ask.gang_key == "pod:team-a/solo");
  CHECK(c.prov.asks[0].ask.owner.kind == "Pod");
  CHECK(c.prov.asks[0].member_keys == std::vector<std::string>{"team-a/solo"});
  CHECK(c.rec.kinds.at("team-a/solo") == FailureKind::kWaitingForProvisioning);
  CHECK_THAT(c.rec.messages.at("team-a/solo"), Catch::EndsWith("; waiting for ProvisioningRequest team-a/x"));
  CHECK(c.rec.kinds.at("team-a/plain") == FailureKind::kUnschedulable);

  c.Nodes(1, 8, "new-");
  c.h.clock.Advance(absl::Seconds(30));
  c.h.ScheduleAll();
  CHECK(c.Bound("new-") == 1);
  CHECK(std::count(c.prov.placed.begin(), c.prov.placed.end(), "pod:team-a/solo") == 1);
  c.h.s->OnPodDelete("team-a/plain");
  CHECK(std::count(c.prov.gone.begin(), c.prov.gone.end(), "pod:team-a/plain") == 1);
}

TEST_CASE("core: a queue's provisioning class marks its gangs; a deleted gang lets go", "[provisioning][core]") {
  Core c;
  REQUIRE(c.h.ApplyQueueObject({{"apiVersion", "tessel.io/v1alpha1"},
                                {"kind", "Queue"},
                                {"metadata", {{"name", "team-a"}}},
                                {"spec",
                                 {{"namespaces", {"team-a"}},
                                  {"provisioning",
                                   {{"className", "check-capacity.autoscaling.x-k8s.io"},
                                    {"parameters", {{"k", "v"}}}}}}}})
              .ok());
  c.Group("train", 2);
  c.Members("train", 2, 8);
  c.h.ScheduleAll();
  REQUIRE_FALSE(c.prov.asks.empty());
  CHECK(c.prov.asks.back().ask.marking == Marking{.class_name = "check-capacity.autoscaling.x-k8s.io", .parameters = {{"k", "v"}}});
  c.h.s->OnGangObjectDelete(gang::GangKind::kPodGroup, "team-a/train");
  CHECK(c.prov.gone == std::vector<std::string>{"podgroup:team-a/train"});
}


// --- Flavors: the class, and where the nodes must be. ---

json FlavorJson(std::string name, json spec) {
  return {{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "ResourceFlavor"}, {"metadata", {{"name", name}}}, {"spec", spec}};
}

TEST_CASE("ResourceFlavor spec.provisioning decodes; bad input names the flavor and the field", "[provisioning]") {
  absl::StatusOr<ResourceFlavor> f = DecodeResourceFlavor(FlavorJson(
      "spot", {{"nodeLabels", {{"pool", "spot"}}},
               {"provisioning", {{"className", "queued-provisioning.gke.io"}, {"parameters", {{"maxRunDurationSeconds", "600"}}}}}}));
  REQUIRE(f.ok());
  REQUIRE(f->provisioning.has_value());
  CHECK(*f->provisioning == ProvisioningClass{.class_name = "queued-provisioning.gke.io",
                                              .parameters = {{"maxRunDurationSeconds", "600"}}});
  CHECK_FALSE(DecodeResourceFlavor(FlavorJson("plain", {{"nodeLabels", {{"pool", "a"}}}}))->provisioning.has_value());

  auto message = [](json spec) { return std::string(DecodeResourceFlavor(FlavorJson("spot", spec)).status().message()); };
  CHECK_THAT(message({{"provisioning", json::object()}}),
             Catch::Contains("ResourceFlavor spot") && Catch::Contains("spec.provisioning.className: must be set"));
  CHECK_THAT(message({{"provisioning", {{"className", ""}}}}), Catch::Contains("spec.provisioning.className: must be set"));
  CHECK_THAT(message({{"provisioning", "dws"}}), Catch::Contains("spec.provisioning: expected an object"));
  CHECK_THAT(message({{"provisioning", {{"className", 3}}}}), Catch::Contains("spec.provisioning.className"));
  CHECK_THAT(message({{"provisioning", {{"className", "c"}, {"parameters", {{"k", 1}}}}}}),
             Catch::Contains("spec.provisioning.parameters.k: expected a string"));
}

TEST_CASE("the marking: a flavor's class comes after the annotations and before the queue's", "[provisioning]") {
  ResourceFlavor reserved{.meta = {.name = "reserved"}};
  ResourceFlavor spot{.meta = {.name = "spot"}, .provisioning = ProvisioningClass{.class_name = "from-flavor", .parameters = {{"p", "1"}}}};
  Queue q;
  q.provisioning = ProvisioningClass{.class_name = "from-queue"};
  const StringMap pod = {{std::string(kClassAnnotation), "from-pod"}};
  const StringMap group = {{std::string(kClassAnnotation), "from-group"}};
  CHECK(MarkingFor(pod, group, {&spot}, &q)->class_name == "from-pod");
  CHECK(MarkingFor({}, group, {&spot}, &q)->class_name == "from-group");
  CHECK(*MarkingFor({}, {}, {&spot}, &q) == Marking{.class_name = "from-flavor", .parameters = {{"p", "1"}}});
  CHECK(*MarkingFor({}, {}, {&reserved, &spot}, nullptr) == Marking{.class_name = "from-flavor", .parameters = {{"p", "1"}}});
  // The flavor the gang would use has none: the queue's.
  CHECK(MarkingFor({}, {}, {&reserved}, &q)->class_name == "from-queue");
  CHECK_FALSE(MarkingFor({}, {}, {&reserved}, nullptr).has_value());
}

TEST_CASE("templates for a flavor carry its node labels and tolerations", "[provisioning]") {
  ResourceFlavor spot{.meta = {.name = "spot"},
                      .node_labels = {{"pool", "spot"}, {"cloud.example.com/spot", "true"}},
                      .tolerations = {Toleration{.key = "cloud.example.com/spot", .value = "true", .effect = TaintEffect::kNoSchedule}}};
  const FlavorNodes nodes = FlavorNodesOf({&spot});
  CHECK(nodes.flavors == std::vector<std::string>{"spot"});
  const json own_toleration = {{"key", "gpu"}, {"operator", "Exists"}};
  const std::vector<PodSetTemplate> sets = PodSets(
      {PodJson("w-0", "8", {{"nodeSelector", {{"zone", "a"}, {"pool", "mine"}}}, {"tolerations", {own_toleration}}}),
       PodJson("w-1", "8", {{"nodeSelector", {{"zone", "a"}, {"pool", "mine"}}}, {"tolerations", {own_toleration}}})},
      nodes);
  REQUIRE(sets.size() == 1);
  CHECK(sets[0].count == 2);
  const json& spec = sets[0].template_spec;
  // The flavor's labels are set over the pod's; the pod's others stay.
  CHECK(spec["nodeSelector"] == json{{"zone", "a"}, {"pool", "spot"}, {"cloud.example.com/spot", "true"}});
  CHECK(spec["tolerations"] == json::array({own_toleration,
                                            {{"key", "cloud.example.com/spot"}, {"operator", "Equal"},
                                             {"value", "true"}, {"effect", "NoSchedule"}}}));
  // Without a flavor the template is the pod's.
  CHECK(PodSets({PodJson("w-0", "8")})[0].template_spec == TemplateSpecOf(PodJson("w-0", "8")));
}

// A queue with reserved then spot GPU quota (no cohort), and the flavors.
QueueDirectory ReservedThenSpot(std::string reserved_quota, std::string spot_quota, bool borrow_last = false) {
  json flavors = json::array();
  for (const auto& [name, quota] : {std::pair{"reserved", reserved_quota}, std::pair{"spot", spot_quota}}) {
    json resource = {{"name", "nvidia.com/gpu"}, {"nominalQuota", quota}};
    flavors.push_back({{"name", name}, {"resources", json::array({resource})}});
  }
  json spec = {{"namespaces", {"team-a"}},
               {"resourceGroups", {{{"coveredResources", {"nvidia.com/gpu"}}, {"flavors", flavors}}}}};
  if (borrow_last) spec["flavorFungibility"] = {{"whenCanBorrow", "TryNextFlavor"}};
  absl::StatusOr<Queue> q = DecodeQueue({{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"},
                                         {"metadata", {{"name", "team-a"}}}, {"spec", spec}});
  REQUIRE(q.ok());
  FlavorMap map;
  for (const char* name : {"reserved", "spot"}) {
    map[name] = ResourceFlavor{.meta = {.name = name}, .node_labels = {{"pool", name}}};
  }
  QueueDirectory dir;
  REQUIRE(dir.Set({*q}, {}, map).ok());
  return dir;
}

std::vector<std::string> Names(const std::optional<std::vector<const ResourceFlavor*>>& flavors) {
  std::vector<std::string> out;
  for (const ResourceFlavor* f : flavors.value()) out.push_back(f->name());
  return out;
}

TEST_CASE("the flavor a gang would use on new nodes: the first whose quota takes all of it", "[provisioning]") {
  Resources gang;
  gang.Set("cpu", 2000);
  gang.Set("nvidia.com/gpu", 8000);  // two members of 4 GPUs
  const QueueDirectory dir = ReservedThenSpot("8", "16");
  const Queue& q = *dir.Find("team-a");
  QuotaTracker usage(&dir);
  CHECK(Names(FlavorsWithQuota(dir, q, usage, gang)) == std::vector<std::string>{"reserved"});
  // Reserved has 4 GPUs left: each member would fit, the gang does not; spot takes it.
  Resources used;
  used.Set(FlavoredResource("nvidia.com/gpu", "reserved"), 4000);
  usage.AddUsage("team-a", used);
  CHECK(Names(FlavorsWithQuota(dir, q, usage, gang)) == std::vector<std::string>{"spot"});
  // More than any flavor's quota: the quota is short, not the nodes.
  Resources huge;
  huge.Set("nvidia.com/gpu", 32000);
  CHECK_FALSE(FlavorsWithQuota(dir, q, usage, huge).has_value());
  // A charge no group covers uses no flavor.
  Resources cpu_only;
  cpu_only.Set("cpu", 1000);
  CHECK(FlavorsWithQuota(dir, q, usage, cpu_only)->empty());
}

TEST_CASE("members that come after the request are annotated at the next shortfall, once", "[provisioning]") {
  RequestBook book;
  Step first = book.Shortfall(TrainAsk(), kTrain, t0);
  REQUIRE(first.kind == Step::Kind::kCreate);
  CHECK(first.consume.pods.empty());  // the create annotates the members it read
  CHECK(book.Shortfall(TrainAsk(), kTrain, t0).consume.pods.empty());
  // A third member was created since.
  Step later = book.Shortfall(TrainAsk(), {"team-a/train-0", "team-a/train-1", "team-a/train-2"}, t0);
  CHECK(later.kind == Step::Kind::kWait);
  CHECK(later.consume.request == "tessel-podgroup-train-1");
  CHECK(later.consume.class_name == "queued-provisioning.gke.io");
  CHECK(later.consume.pods == std::vector<std::string>{"team-a/train-2"});
  CHECK(book.Shortfall(TrainAsk(), {"team-a/train-0", "team-a/train-1", "team-a/train-2"}, t0).consume.pods.empty());
  // A new attempt annotates everyone afresh (with its own name) when it is created.
  See(book, "tessel-podgroup-train-1", {{"Provisioned", "True"}, {"BookingExpired", "True"}});
  Step again = book.Shortfall(TrainAsk(), {"team-a/train-0", "team-a/train-3"}, t0);
  REQUIRE(again.kind == Step::Kind::kCreate);
  CHECK(again.consume.pods.empty());
  CHECK(book.Shortfall(TrainAsk(), {"team-a/train-0", "team-a/train-3"}, t0).consume.pods.empty());
}

Ask AskFor(std::string gang) {
  return Ask{.gang_key = "podgroup:team-a/" + gang, .namespace_ = "team-a", .marking = {.class_name = "c"}};
}

TEST_CASE("at most max_open requests are open; a gang over the cap waits and asks when one closes", "[provisioning]") {
  RequestBook book({.max_open = 2});
  REQUIRE(book.Shortfall(AskFor("a"), {"team-a/a-0"}, t0).kind == Step::Kind::kCreate);
  REQUIRE(book.Shortfall(AskFor("b"), {"team-a/b-0"}, t0).kind == Step::Kind::kCreate);
  CHECK(book.open() == 2);
  Step capped = book.Shortfall(AskFor("c"), {"team-a/c-0"}, t0);
  CHECK(capped.kind == Step::Kind::kCapped);
  CHECK(capped.message ==
        "not asking for capacity yet: 2 ProvisioningRequests are open, the most "
        "--max-open-provisioning-requests allows; waiting for one to close");
  CHECK_FALSE(book.Current("podgroup:team-a/c").has_value());
  CHECK(book.AnyCapped());
  // A gang already holding a request still waits on it.
  CHECK(book.Shortfall(AskFor("a"), {"team-a/a-0"}, t0).kind == Step::Kind::kWait);

  // A failed request is not open: it frees a slot.
  book.Observe(*DecodeRequest(Request("tessel-podgroup-b-1", {{"Failed", "True"}}, "podgroup:team-a/b")), t0);
  CHECK(book.open() == 1);
  Step created = book.Shortfall(AskFor("c"), {"team-a/c-0"}, t0);
  CHECK(created.kind == Step::Kind::kCreate);
  CHECK(created.create.name == "tessel-podgroup-c-1");
  CHECK_FALSE(book.AnyCapped());

  // Placed: a's request is released, and a waiting gang takes its slot.
  CHECK(book.Shortfall(AskFor("d"), {"team-a/d-0"}, t0).kind == Step::Kind::kCapped);
  book.Release("podgroup:team-a/a");
  CHECK(book.Shortfall(AskFor("d"), {"team-a/d-0"}, t0).kind == Step::Kind::kCreate);

  // 0: no limit.
  RequestBook unlimited({.max_open = 0});
  for (int i = 0; i < 5; ++i) {
    CHECK(unlimited.Shortfall(AskFor(StrCat("g", i)), {}, t0).kind == Step::Kind::kCreate);
  }
}

TEST_CASE("an expired request over the cap is deleted, and the next attempt waits for a slot", "[provisioning]") {
  RequestBook book({.max_open = 1});
  REQUIRE(book.Shortfall(AskFor("a"), {}, t0).kind == Step::Kind::kCreate);
  book.Observe(*DecodeRequest(Request("tessel-podgroup-a-1", {{"Provisioned", "True"}, {"BookingExpired", "True"}},
                                      "podgroup:team-a/a")), t0);
  REQUIRE(book.Shortfall(AskFor("b"), {}, t0).kind == Step::Kind::kCreate);  // a's is not open
  Step a = book.Shortfall(AskFor("a"), {}, t0);
  CHECK(a.kind == Step::Kind::kCapped);
  CHECK(a.remove == std::vector<RequestRef>{{"team-a", "tessel-podgroup-a-1"}});
  CHECK_THAT(a.message, Catch::StartsWith("ProvisioningRequest team-a/tessel-podgroup-a-1 (class c) expired before"));
  book.Release("podgroup:team-a/b");
  Step next = book.Shortfall(AskFor("a"), {}, t0);
  REQUIRE(next.kind == Step::Kind::kCreate);
  CHECK(next.create.name == "tessel-podgroup-a-2");
}

TEST_CASE("the retry delay after Failed is the book's option", "[provisioning]") {
  RequestBook book({.failed_retry = absl::Minutes(1)});
  REQUIRE(book.Shortfall(TrainAsk(), kTrain, t0).kind == Step::Kind::kCreate);
  See(book, "tessel-podgroup-train-1", {{"Failed", "True"}}, t0);
  Step failed = book.Shortfall(TrainAsk(), kTrain, t0 + absl::Seconds(30));
  CHECK(failed.kind == Step::Kind::kFailed);
  CHECK_THAT(failed.message, Catch::EndsWith("asking again at 2023-11-14T22:14:20Z"));
  CHECK(book.Shortfall(TrainAsk(), kTrain, t0 + absl::Minutes(1)).kind == Step::Kind::kCreate);
}

// A flavored team-a: reserved (4 GPUs) then spot (16, class dws, a toleration); `nodes`
// reserved nodes of 4 GPUs and a node of no flavor.
void FlavoredQueue(Core& c) {
  REQUIRE(c.h.ApplyQueueObject(FlavorJson("reserved", {{"nodeLabels", {{"pool", "reserved"}}}})).ok());
  REQUIRE(c.h.ApplyQueueObject(FlavorJson(
      "spot", {{"nodeLabels", {{"pool", "spot"}}},
               {"tolerations", {{{"key", "spot"}, {"operator", "Exists"}}}},
               {"provisioning", {{"className", "queued-provisioning.gke.io"}, {"parameters", {{"k", "v"}}}}}})).ok());
  json flavors = json::array();
  for (const auto& [name, quota] : {std::pair{"reserved", "4"}, std::pair{"spot", "16"}}) {
    json resource = {{"name", "nvidia.com/gpu"}, {"nominalQuota", quota}};
    flavors.push_back({{"name", name}, {"resources", json::array({resource})}});
  }
  REQUIRE(c.h.ApplyQueueObject({{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"}, {"metadata", {{"name", "team-a"}}},
                                {"spec", {{"namespaces", {"team-a"}},
                                          {"resourceGroups", {{{"coveredResources", {"nvidia.com/gpu"}}, {"flavors", flavors}}}}}}})
              .ok());
}

TEST_CASE("core: a flavored gang asks for nodes of the flavor its quota admits, with that flavor's class", "[provisioning][core]") {
  Core c;
  FlavoredQueue(c);
  c.h.AddNode(NodeBuilder("reserved-0").Label("pool", "reserved").Allocatable("cpu:64,memory:512Gi,nvidia.com/gpu:4").Build());
  c.h.AddNode(NodeBuilder("cpu-0").Allocatable("cpu:64,memory:512Gi").Build());  // in no flavor
  // Two members of 4 GPUs: each fits the reserved quota and node, the gang (8) fits only spot's
  // quota, and there is no spot node.
  c.Group("train", 2);
  c.Members("train", 2, 4);
  c.h.ScheduleAll();
  REQUIRE_FALSE(c.prov.asks.empty());
  const GangShortage& ask = c.prov.asks.back();
  CHECK(ask.ask.marking == Marking{.class_name = "queued-provisioning.gke.io", .parameters = {{"k", "v"}}});
  CHECK(ask.ask.nodes.flavors == std::vector<std::string>{"spot"});
  CHECK(ask.ask.nodes.node_selector == StringMap{{"pool", "spot"}});
  REQUIRE(ask.ask.nodes.tolerations.size() == 1);
  CHECK(ask.ask.nodes.tolerations[0].key == "spot");
  CHECK(c.rec.kinds.at("team-a/train-0") == FailureKind::kWaitingForProvisioning);
  CHECK(c.rec.status.at("podgroup:team-a/train").reason == gang::GangReason::kWaitingForProvisioning);

  // The spot nodes come: the gang binds on them.
  for (int i = 0; i < 2; ++i) {
    c.h.AddNode(NodeBuilder(StrCat("spot-", i)).Label("pool", "spot").Allocatable("cpu:64,memory:512Gi,nvidia.com/gpu:4").Build());
  }
  c.h.clock.Advance(absl::Seconds(30));
  c.h.ScheduleAll();
  CHECK(c.Bound("spot-") == 2);
}

TEST_CASE("core: a flavored gang whose pool has no node at all asks; one over every flavor's quota does not", "[provisioning][core]") {
  Core c;
  FlavoredQueue(c);
  c.h.AddNode(NodeBuilder("cpu-0").Allocatable("cpu:64,memory:512Gi").Build());  // every node refused by QueueQuota
  c.Group("train", 2);
  c.Members("train", 2, 4);
  c.Group("huge", 4);
  c.Members("huge", 4, 8);  // 32 GPUs: no flavor's quota
  c.h.ScheduleAll();
  REQUIRE(c.prov.asks.size() >= 1);
  for (const GangShortage& s : c.prov.asks) CHECK(s.ask.gang_key == "podgroup:team-a/train");
  CHECK(c.prov.asks.front().ask.nodes.flavors == std::vector<std::string>{"spot"});
  CHECK(c.rec.kinds.at("team-a/train-0") == FailureKind::kWaitingForProvisioning);
  CHECK(c.rec.kinds.at("team-a/huge-0") != FailureKind::kWaitingForProvisioning);
}

TEST_CASE("Provisioned for long and the gang still does not fit: the message says the nodes may not fit it", "[provisioning]") {
  RequestBook book({.nodes_grace = absl::Minutes(5)});
  REQUIRE(book.Shortfall(TrainAsk(), kTrain, t0).kind == Step::Kind::kCreate);
  See(book, "tessel-podgroup-train-1", {{"Provisioned", "True"}}, t0 + absl::Minutes(1));
  See(book, "tessel-podgroup-train-1", {{"Provisioned", "True"}}, t0 + absl::Minutes(3));  // a resync
  CHECK_THAT(book.Shortfall(TrainAsk(), kTrain, t0 + absl::Minutes(5)).message,
             Catch::EndsWith("is Provisioned; waiting for its nodes"));
  Step late = book.Shortfall(TrainAsk(), kTrain, t0 + absl::Minutes(6));
  CHECK(late.kind == Step::Kind::kWait);
  CHECK_THAT(late.message, Catch::EndsWith("is Provisioned since 2023-11-14T22:14:20Z but the gang does not fit yet: its "
                                           "nodes may not have come, or may not fit the gang (the shortfall above says "
                                           "why); waiting until its booking expires"));
  // The booking expires: asked again, and the next request starts its own clock.
  See(book, "tessel-podgroup-train-1", {{"Provisioned", "True"}, {"BookingExpired", "True"}}, t0 + absl::Minutes(7));
  REQUIRE(book.Shortfall(TrainAsk(), kTrain, t0 + absl::Minutes(7)).kind == Step::Kind::kCreate);
  See(book, "tessel-podgroup-train-2", {{"Provisioned", "True"}}, t0 + absl::Minutes(8));
  CHECK_THAT(book.Shortfall(TrainAsk(), kTrain, t0 + absl::Minutes(9)).message,
             Catch::EndsWith("is Provisioned; waiting for its nodes"));
}

}  // namespace provisioning_test
}  // namespace tessel::provisioning
