// Extended resources backed by DRA (DRAExtendedResource): the claim's requests and mappings as
// kube-scheduler 1.37 builds them (the expected values are worked out by hand from its rules:
// pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go), and the whole
// path through the default profile: an ordinary nvidia.com/gpu pod on a node without the device
// plugin gets a device of the class that names the resource, its claim created, allocated and
// mapped on the pod, and nothing else lets it through or gives a device twice.
#include <catch2/catch.hpp>

#include "harness/core_harness.h"
#include "scheduler/core/explain.h"
#include <map>
#include <set>
#include "nlohmann/json.hpp"
#include "plugins/dynamic_resources/dynamic_resources.h"
#include "scheduler/dra/extended_resources.h"
#include "scheduler/framework/dra_extended.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/strings.h"
#include "fake_handle.h"

namespace tessel {
namespace dra_extended_test {

using nlohmann::json;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::Res;

using Served = std::map<std::string, std::string, std::less<>>;
const Served kGpuClass = {{"nvidia.com/gpu", "gpu.nvidia.com"}};

Container Named(std::string name, std::string_view requests, bool sidecar = false) {
  return Container{.name = std::move(name), .requests = Res(requests), .restart_always = sidecar};
}

// "name:count" per request, in order.
std::vector<std::string> Requests(const dra::ExtendedResourceClaim& c) {
  std::vector<std::string> out;
  for (const dra::DeviceRequest& r : c.requests) {
    out.push_back(StrCat(r.name, ":", r.exactly->count, ":", r.exactly->device_class_name));
  }
  return out;
}
std::vector<std::string> Mappings(const dra::ExtendedResourceClaim& c) {
  std::vector<std::string> out;
  for (const dra::ExtendedResourceMapping& m : c.mappings) {
    out.push_back(StrCat(m.container_name, "/", m.resource_name, "->", m.request_name));
  }
  return out;
}

TEST_CASE("the extended-resource claim has kube-scheduler's requests and mappings", "[dra][extended]") {
  Pod pod;
  pod.meta = {.name = "train", .namespace_ = "team-a"};
  SECTION("one container: its index and the resource's index among its sorted request names") {
    pod.containers = {Named("main", "cpu:1,memory:1Gi,nvidia.com/gpu:2")};
    const dra::ExtendedResourceClaim c = dra::ExtendedResourceRequests(pod, kGpuClass);
    CHECK(Requests(c) == std::vector<std::string>{"container-0-request-2:2:gpu.nvidia.com"});
    CHECK(Mappings(c) == std::vector<std::string>{"main/nvidia.com/gpu->container-0-request-2"});
  }
  SECTION("an init container reuses a later container's devices when they cover it") {
    pod.init_containers = {Named("fetch", "nvidia.com/gpu:1")};
    pod.containers = {Named("main", "cpu:1,nvidia.com/gpu:2")};
    const dra::ExtendedResourceClaim c = dra::ExtendedResourceRequests(pod, kGpuClass);
    CHECK(Requests(c) == std::vector<std::string>{"container-1-request-1:2:gpu.nvidia.com"});
    CHECK(Mappings(c) == std::vector<std::string>{"main/nvidia.com/gpu->container-1-request-1",
                                                  "fetch/nvidia.com/gpu->container-1-request-1"});
  }
  SECTION("an init container asks only for what the later containers do not cover") {
    pod.init_containers = {Named("warm", "nvidia.com/gpu:3")};
    pod.containers = {Named("main", "nvidia.com/gpu:1")};
    const dra::ExtendedResourceClaim c = dra::ExtendedResourceRequests(pod, kGpuClass);
    CHECK(Requests(c) == std::vector<std::string>{"container-0-request-0:2:gpu.nvidia.com",
                                                  "container-1-request-0:1:gpu.nvidia.com"});
    CHECK(Mappings(c) == std::vector<std::string>{"main/nvidia.com/gpu->container-1-request-0",
                                                  "warm/nvidia.com/gpu->container-1-request-0",
                                                  "warm/nvidia.com/gpu->container-0-request-0"});
  }
  SECTION("of the plain init containers' own requests only the largest is made; all map to it") {
    pod.init_containers = {Named("a", "nvidia.com/gpu:1"), Named("b", "nvidia.com/gpu:3")};
    pod.containers = {Named("main", "cpu:1")};
    const dra::ExtendedResourceClaim c = dra::ExtendedResourceRequests(pod, kGpuClass);
    CHECK(Requests(c) == std::vector<std::string>{"container-1-request-0:3:gpu.nvidia.com"});
    CHECK(Mappings(c) == std::vector<std::string>{"a/nvidia.com/gpu->container-1-request-0",
                                                  "b/nvidia.com/gpu->container-1-request-0"});
  }
  SECTION("a sidecar runs beside the containers: it has its own request") {
    pod.init_containers = {Named("proxy", "nvidia.com/gpu:1", /*sidecar=*/true)};
    pod.containers = {Named("main", "nvidia.com/gpu:1")};
    const dra::ExtendedResourceClaim c = dra::ExtendedResourceRequests(pod, kGpuClass);
    CHECK(Requests(c) == std::vector<std::string>{"container-0-request-0:1:gpu.nvidia.com",
                                                  "container-1-request-0:1:gpu.nvidia.com"});
  }
  SECTION("two resources, each with its class; resources not served and amounts not whole ask nothing") {
    pod.containers = {Named("main", "example.com/fpga:1,nvidia.com/gpu:1,example.com/nic:1500m")};
    const Served served = {{"example.com/fpga", "fpga"}, {"nvidia.com/gpu", "gpu.nvidia.com"}, {"example.com/nic", "nic"}};
    const dra::ExtendedResourceClaim c = dra::ExtendedResourceRequests(pod, served);
    CHECK(Requests(c) == std::vector<std::string>{"container-0-request-0:1:fpga", "container-0-request-2:1:gpu.nvidia.com"});
  }
  SECTION("the claim to create and the pod's status") {
    pod.meta.uid = "pod-uid";
    pod.containers = {Named("main", "nvidia.com/gpu:1")};
    const dra::ExtendedResourceClaim c = dra::ExtendedResourceRequests(pod, kGpuClass);
    const json claim = dra::EncodeExtendedResourceClaim(pod, c);
    CHECK(claim["metadata"]["generateName"] == "train-extended-resources-");
    CHECK(claim["metadata"]["annotations"] == json{{"resource.kubernetes.io/extended-resource-claim", "true"}});
    CHECK(claim["metadata"]["ownerReferences"] == json::parse(R"([{"apiVersion": "v1", "kind": "Pod",
        "name": "train", "uid": "pod-uid", "controller": true}])"));
    CHECK(claim["spec"]["devices"]["requests"] == json::parse(R"([{"name": "container-0-request-0",
        "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}}])"));
    CHECK(dra::EncodeExtendedResourceClaimStatus(c, "train-extended-resources-x1") == json::parse(R"({
        "requestMappings": [{"containerName": "main", "resourceName": "nvidia.com/gpu",
                             "requestName": "container-0-request-0"}],
        "resourceClaimName": "train-extended-resources-x1"})"));
  }
}

TEST_CASE("which resource names may be served by DRA", "[dra][extended]") {
  CHECK(MayBeDraExtendedResource("nvidia.com/gpu"));
  CHECK(MayBeDraExtendedResource("deviceclass.resource.kubernetes.io/gpu"));
  CHECK_FALSE(MayBeDraExtendedResource("cpu"));
  CHECK_FALSE(MayBeDraExtendedResource("hugepages-2Mi"));
  CHECK_FALSE(MayBeDraExtendedResource("example.kubernetes.io/thing"));
  CHECK_FALSE(MayBeDraExtendedResource("deviceclass.resource.kubernetes.io/"));
}

json GpuSlice(const std::string& node, int gpus) {
  json devices = json::array();
  for (int i = 0; i < gpus; ++i) devices.push_back({{"name", StrCat("gpu-", i)}});
  return {{"metadata", {{"name", StrCat(node, "-gpus")}, {"resourceVersion", "1"}}},
          {"spec", {{"driver", "gpu.nvidia.com"}, {"nodeName", node},
                    {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
                    {"devices", devices}}}};
}

json GpuClass(const std::string& name, const std::string& resource, const std::string& created) {
  json c = json::parse(R"({"spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.nvidia.com\""}}]}})");
  c["metadata"] = {{"name", name}, {"creationTimestamp", created}};
  if (!resource.empty()) c["spec"]["extendedResourceName"] = resource;
  return c;
}

Pod GpuPod(const std::string& name, int gpus) {
  Pod pod = PodBuilder(name, "team-a").Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus)).Build();
  pod.meta.uid = "uid-" + name;
  return pod;
}

// A node without device-plugin GPUs whose ResourceSlice publishes `gpus` devices.
void AddDraNode(testing::CoreHarness& h, const std::string& name, int gpus) {
  h.AddNode(NodeBuilder(name).Allocatable("cpu:32,memory:128Gi,pods:110").Build());
  REQUIRE(h.s->OnRawObject(RawKind::kResourceSlice, GpuSlice(name, gpus)).ok());
}

// A team-a pod asking only GPUs: no CPU or memory for NodeResourcesFit to tell nodes apart by.
Pod GpusOnlyPod(const std::string& name, int gpus) {
  Pod pod = PodBuilder(name, "team-a").Requests(StrCat("nvidia.com/gpu:", gpus)).Build();
  pod.meta.uid = "uid-" + name;
  return pod;
}

// The node team-a's pod is bound to ("" when it is not).
std::string BoundNodeOf(const testing::CoreHarness& h, const std::string& pod) {
  for (const auto& [key, node] : h.binds()) {
    if (key == "team-a/" + pod) return node;
  }
  return "";
}

// A scheduler-plugins PodGroup "train" of team-a (minMember 2).
void ApplyTrainGroup(testing::CoreHarness& h) {
  REQUIRE(h.ApplyGangObject({{"apiVersion", "scheduling.x-k8s.io/v1alpha1"}, {"kind", "PodGroup"},
                             {"metadata", {{"name", "train"}, {"namespace", "team-a"}, {"uid", "uid-train"}}},
                             {"spec", {{"minMember", 2}}}})
              .value());
}

// The PodGroup "train" and its members w0 and w1, each asking `gpus` nvidia.com/gpu.
void AddTrainGang(testing::CoreHarness& h, int gpus) {
  ApplyTrainGroup(h);
  for (const char* name : {"w0", "w1"}) {
    Pod pod = GpuPod(name, gpus);
    pod.meta.labels["scheduling.x-k8s.io/pod-group"] = "train";
    h.AddPod(pod);
  }
}

struct DraNodes {
  testing::CoreHarness h;
  DraNodes() {
    AddDraNode(h, "dra-1", 2);
  }
  void Serve() {
    REQUIRE(h.s->OnRawObject(RawKind::kDeviceClass, GpuClass("gpu.nvidia.com", "nvidia.com/gpu", "2026-01-01T00:00:00Z")).ok());
  }
  std::string BoundNode(const std::string& pod) const { return BoundNodeOf(h, pod); }
};

TEST_CASE("an ordinary GPU pod runs on a DRA node through the class that names nvidia.com/gpu", "[dra][extended]") {
  DraNodes c;
  SECTION("no class serves the resource: the node has no GPUs for it") {
    c.h.AddPod(GpuPod("a", 1));
    c.h.RunUntilIdle();
    CHECK(c.BoundNode("a").empty());
    CHECK(c.h.api.claims_created.empty());
  }
  SECTION("the class serves it: a claim is created, allocated, reserved for the pod and mapped on it") {
    c.Serve();
    c.h.AddPod(GpuPod("a", 1));
    c.h.RunUntilIdle();
    CHECK(c.BoundNode("a") == "dra-1");
    REQUIRE(c.h.api.claims_created.size() == 1);
    const json created = json::parse(c.h.api.claims_created[0]);
    CHECK(created["metadata"]["namespace"] == "team-a");
    CHECK(created["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.nvidia.com");
    REQUIRE(c.h.api.claim_statuses.size() == 1);
    CHECK(c.h.api.claim_statuses[0].first == "team-a/a-extended-resources-1");
    const json status = json::parse(c.h.api.claim_statuses[0].second);
    CHECK(status["reservedFor"] == json::parse(R"([{"resource": "pods", "name": "a", "uid": "uid-a"}])"));
    CHECK(status["allocation"]["devices"]["results"].size() == 1);
    CHECK(status["allocation"]["devices"]["results"][0]["request"] == "container-0-request-1");
    REQUIRE(c.h.api.pod_claim_statuses.size() == 1);
    CHECK(json::parse(c.h.api.pod_claim_statuses[0].second)["resourceClaimName"] == "a-extended-resources-1");
  }
  SECTION("two pods get the node's two devices, one each; a third waits") {
    c.Serve();
    for (const char* name : {"a", "b", "d"}) c.h.AddPod(GpuPod(name, 1));
    c.h.RunUntilIdle();
    CHECK(c.BoundNode("a") == "dra-1");
    CHECK(c.BoundNode("b") == "dra-1");
    CHECK(c.BoundNode("d").empty());
    REQUIRE(c.h.api.claim_statuses.size() == 2);
    const json first = json::parse(c.h.api.claim_statuses[0].second)["allocation"]["devices"]["results"][0];
    const json second = json::parse(c.h.api.claim_statuses[1].second)["allocation"]["devices"]["results"][0];
    CHECK(first["device"] != second["device"]);
  }
  SECTION("more GPUs than the node's devices: not placed") {
    c.Serve();
    c.h.AddPod(GpuPod("big", 3));
    c.h.RunUntilIdle();
    CHECK(c.BoundNode("big").empty());
    CHECK(c.h.api.claims_created.empty());
  }
  SECTION("the team's quota counts the GPUs a DRA device serves, as any GPU pod's") {
    c.Serve();
    REQUIRE(c.h.ApplyQueueObject(json{{"apiVersion", "tessel.io/v1alpha1"},
                                      {"kind", "Queue"},
                                      {"metadata", {{"name", "team"}}},
                                      {"spec", {{"namespaces", {"team-a"}}, {"nominalQuota", {{"nvidia.com/gpu", "1"}}}}}})
                .ok());
    c.h.AddPod(GpuPod("a", 1));
    c.h.AddPod(GpuPod("b", 1));
    c.h.RunUntilIdle();
    CHECK(c.h.binds().size() == 1);  // the node has a second device, the queue no second GPU
    CHECK(c.h.api.claims_created.size() == 1);
  }
  SECTION("a node with the device plugin serves the pod itself: no claim") {
    c.Serve();
    c.h.AddNode(NodeBuilder("dp-1").Allocatable("cpu:32,memory:128Gi,pods:110,nvidia.com/gpu:8").Build());
    c.h.AddPod(GpuPod("a", 4));  // fits only dp-1
    c.h.RunUntilIdle();
    CHECK(c.BoundNode("a") == "dp-1");
    CHECK(c.h.api.claims_created.empty());
  }
}

TEST_CASE("a claim made for a pod and deleted between two looks frees its device at once", "[dra][extended]") {
  // Found by the composition property (seed 761 of 600 + 300): a pod that ran and ended within a
  // second of its bind held its DRA device for the in-flight record's grace, and a gang that
  // needed the device went to a later flavor.
  DraNodes c;
  c.Serve();
  c.h.AddPod(GpuPod("a", 1));
  c.h.AddPod(GpuPod("b", 1));
  c.h.RunUntilIdle();
  REQUIRE(c.BoundNode("a") == "dra-1");
  REQUIRE(c.BoundNode("b") == "dra-1");
  // The informer shows a's claim made, then deleted with a, before any cycle looked.
  std::optional<json> made;
  for (size_t i = 0; i < c.h.api.claims_created.size(); ++i) {
    json claim = json::parse(c.h.api.claims_created[i]);
    if (claim["metadata"]["generateName"] != "a-extended-resources-") continue;
    claim["metadata"]["name"] = StrCat("a-extended-resources-", i + 1);  // as the fake API names it
    claim["metadata"]["uid"] = StrCat("uid-a-extended-resources-", i + 1);
    claim["metadata"]["resourceVersion"] = StrCat(i + 1);
    made = claim;
  }
  REQUIRE(made.has_value());
  const std::string key = StrCat("team-a/", (*made)["metadata"]["name"].get<std::string>());
  REQUIRE(c.h.s->OnRawObject(RawKind::kResourceClaim, *made).ok());
  c.h.s->OnRawObjectDelete(RawKind::kResourceClaim, key);
  c.h.s->OnPodDelete("team-a/a", "uid-a");
  SECTION("its device serves the next pod at once (no time passes)") {
    c.h.AddPod(GpuPod("d", 1));
    c.h.RunUntilIdle();
    CHECK(c.BoundNode("d") == "dra-1");
  }
  SECTION("b's claim, made and not seen yet, still holds its device") {
    c.h.AddPod(GpuPod("d", 1));
    c.h.AddPod(GpuPod("e", 1));
    c.h.RunUntilIdle();
    CHECK(c.h.binds().size() == 3);  // a's device went to one of them; b's is still b's
  }
}

TEST_CASE("a pod asking a fraction of a GPU takes a whole DRA device: its queue is charged the whole GPU",
          "[dra][extended][quota]") {
  // Found by the composition property (seed 5): the queue was charged the fraction.
  DraNodes c;
  c.Serve();
  REQUIRE(c.h.ApplyQueueObject(json{{"apiVersion", "tessel.io/v1alpha1"},
                                    {"kind", "Queue"},
                                    {"metadata", {{"name", "team"}}},
                                    {"spec", {{"namespaces", {"team-a"}}, {"nominalQuota", {{"nvidia.com/gpu", "1"}}}}}})
              .ok());
  for (const char* name : {"a", "b"}) {
    Pod pod = GpuPod(name, 1);
    pod.meta.annotations["tessel.io/gpu-milli"] = "500";
    c.h.AddPod(pod);
  }
  c.h.RunUntilIdle();
  // A device is not shared: each pod holds one of the node's two GPUs, and the queue has one.
  CHECK(c.h.binds().size() == 1);
  CHECK(c.h.api.claims_created.size() == 1);
}

TEST_CASE("GPU pods served by DRA pack: the tightest node, then a node in use before an idle one",
          "[dra][extended]") {
  testing::CoreHarness h;
  AddDraNode(h, "small", 2);
  for (int i = 0; i < 4; ++i) AddDraNode(h, StrCat("big-", i), 8);
  REQUIRE(h.s->OnRawObject(RawKind::kDeviceClass, GpuClass("gpu.nvidia.com", "nvidia.com/gpu", "2026-01-01T00:00:00Z")).ok());
  auto gpus_only = GpusOnlyPod;
  auto node_of = [&](const std::string& pod) { return BoundNodeOf(h, pod); };
  h.AddPod(gpus_only("two", 2));
  h.RunUntilIdle();
  CHECK(node_of("two") == "small");  // it fills the small node; the big ones stay whole
  h.AddPod(gpus_only("three", 3));
  h.RunUntilIdle();
  const std::string opened = node_of("three");
  REQUIRE(opened.starts_with("big-"));
  h.AddPod(gpus_only("one", 1));
  h.RunUntilIdle();
  CHECK(node_of("one") == opened);  // beside "three", not on an idle big node
}

TEST_CASE("device-plugin nodes and DRA nodes are one cluster to the GPU policy", "[dra][extended]") {
  // The same gradient scores both kinds of node: a pod either could serve goes beside the pods
  // already running and keeps the idle node whole, whichever kind each is.
  testing::CoreHarness h;
  auto gpus_only = GpusOnlyPod;
  auto node_of = [&](const std::string& pod) { return BoundNodeOf(h, pod); };
  REQUIRE(h.s->OnRawObject(RawKind::kDeviceClass, GpuClass("gpu.nvidia.com", "nvidia.com/gpu", "2026-01-01T00:00:00Z")).ok());
  SECTION("the DRA node is in use, the device-plugin node idle") {
    AddDraNode(h, "dra-1", 8);
    h.AddPod(gpus_only("running", 4));
    h.RunUntilIdle();
    REQUIRE(node_of("running") == "dra-1");
    h.AddNode(NodeBuilder("dp-1").Allocatable("cpu:32,memory:128Gi,pods:110,nvidia.com/gpu:8").Build());
    h.AddPod(gpus_only("next", 2));
    h.RunUntilIdle();
    CHECK(node_of("next") == "dra-1");
    h.AddPod(gpus_only("whole-node", 8));
    h.RunUntilIdle();
    CHECK(node_of("whole-node") == "dp-1");
  }
  SECTION("the device-plugin node is in use, the DRA node idle") {
    h.AddNode(NodeBuilder("dp-1").Allocatable("cpu:32,memory:128Gi,pods:110,nvidia.com/gpu:8").Build());
    h.AddPod(gpus_only("running", 4));
    h.RunUntilIdle();
    REQUIRE(node_of("running") == "dp-1");
    AddDraNode(h, "dra-1", 8);
    h.AddPod(gpus_only("next", 2));
    h.RunUntilIdle();
    CHECK(node_of("next") == "dp-1");
    CHECK(h.api.claims_created.empty());
    h.AddPod(gpus_only("whole-node", 8));
    h.RunUntilIdle();
    CHECK(node_of("whole-node") == "dra-1");
  }
}

TEST_CASE("a gang plans its members' DRA devices together: one device per node, one member per node",
          "[dra][extended][gang]") {
  testing::CoreHarness h;
  for (const char* name : {"n1", "n2"}) {
    AddDraNode(h, name, 1);
  }
  SECTION("members with claims of their own") {
    REQUIRE(h.s->OnRawObject(RawKind::kDeviceClass, GpuClass("gpu.nvidia.com", "", "2026-01-01T00:00:00Z")).ok());
    ApplyTrainGroup(h);
    for (const char* name : {"w0", "w1"}) {
      const std::string claim = StrCat(name, "-gpu");
      REQUIRE(h.s->OnRawObject(RawKind::kResourceClaim, {
          {"metadata", {{"name", claim}, {"namespace", "team-a"}, {"uid", "c-" + claim}, {"resourceVersion", "1"}}},
          {"spec", {{"devices", {{"requests", json::array({{{"name", "gpu"}, {"exactly", {
              {"deviceClassName", "gpu.nvidia.com"}, {"count", 1}}}}})}}}}}}).ok());
      Pod pod = PodBuilder(name, "team-a").Requests("cpu:1").Build();
      pod.meta.uid = StrCat("uid-", name);
      pod.meta.labels["scheduling.x-k8s.io/pod-group"] = "train";
      pod.resource_claims.push_back({.name = "gpu", .resource_claim_name = claim});
      h.AddPod(pod);
    }
  }
  SECTION("members asking nvidia.com/gpu served by DRA") {
    REQUIRE(h.s->OnRawObject(RawKind::kDeviceClass, GpuClass("gpu.nvidia.com", "nvidia.com/gpu", "2026-01-01T00:00:00Z")).ok());
    AddTrainGang(h, 1);
  }
  h.RunUntilIdle();
  std::map<std::string, std::string> placed(h.binds().begin(), h.binds().end());
  REQUIRE(placed.size() == 2);
  CHECK(placed.at("team-a/w0") != placed.at("team-a/w1"));
}

TEST_CASE("a gang's members on one DRA node get devices of their own", "[dra][extended][gang]") {
  // Found by the composition property (seed 4): the members' PreFilter runs before any member's
  // Reserve, and Reserve allocated from the devices PreFilter counted in use, so the second
  // member's claim got the first one's devices.
  testing::CoreHarness h;
  AddDraNode(h, "n1", 4);
  REQUIRE(h.s->OnRawObject(RawKind::kDeviceClass, GpuClass("gpu.nvidia.com", "nvidia.com/gpu", "2026-01-01T00:00:00Z")).ok());
  AddTrainGang(h, 2);
  h.RunUntilIdle();
  REQUIRE(h.binds().size() == 2);
  std::set<std::string> devices;
  size_t results = 0;
  for (const auto& [claim, status] : h.api.claim_statuses) {
    const json parsed = json::parse(status);  // kept: the loop reads into it
    for (const json& r : parsed["allocation"]["devices"]["results"]) {
      devices.insert(r["device"].get<std::string>());
      ++results;
    }
  }
  CHECK(results == 4);
  CHECK(devices.size() == 4);  // no device given to both members
}

TEST_CASE("a PodGroup's own claim is allocated once for its members and reserved for the PodGroup",
          "[dra][gang][podgroup]") {
  // Kubernetes 1.37 (DRAWorkloadResourceClaims): a scheduling.k8s.io PodGroup's spec.resourceClaims
  // are shared by its pods, whose spec.resourceClaims entry is the same; the claim is reserved for
  // the PodGroup, not for each pod.
  testing::CoreHarness h;
  for (const char* name : {"n1", "n2"}) {
    AddDraNode(h, name, 2);
  }
  REQUIRE(h.s->OnRawObject(RawKind::kDeviceClass, GpuClass("gpu.nvidia.com", "", "2026-01-01T00:00:00Z")).ok());
  json group = json::parse(R"({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
      "metadata": {"name": "train", "namespace": "team-a", "uid": "uid-train"},
      "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}})");
  json claim = json::parse(R"({"metadata": {"name": "pair", "namespace": "team-a", "uid": "uid-pair",
      "resourceVersion": "3"}, "spec": {"devices": {"requests": [{"name": "gpus",
      "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}]}}})");
  PodResourceClaim entry{.name = "gpus"};
  SECTION("a named claim") {
    group["spec"]["resourceClaims"] = json::parse(R"([{"name": "gpus", "resourceClaimName": "pair"}])");
    entry.resource_claim_name = "pair";
  }
  SECTION("a claim the resourceclaim controller made for the PodGroup from a template") {
    group["spec"]["resourceClaims"] = json::parse(R"([{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}])");
    group["status"]["resourceClaimStatuses"] = json::parse(R"([{"name": "gpus", "resourceClaimName": "pair"}])");
    claim["metadata"]["ownerReferences"] = json::parse(R"([{"apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup", "name": "train", "uid": "uid-train", "controller": true}])");
    entry.resource_claim_template_name = "two-gpus";
    entry.generated_claim_name = "pair";
  }
  REQUIRE(h.ApplyGangObject(group).value());
  REQUIRE(h.s->OnRawObject(RawKind::kResourceClaim, claim).ok());
  for (const char* name : {"w0", "w1"}) {
    Pod pod = PodBuilder(name, "team-a").Requests("cpu:1").Build();
    pod.meta.uid = StrCat("uid-", name);
    pod.scheduling_group = "train";
    pod.resource_claims.push_back(entry);
    h.AddPod(pod);
  }
  h.RunUntilIdle();
  REQUIRE(h.binds().size() == 2);
  std::map<std::string, std::string> placed(h.binds().begin(), h.binds().end());
  // The claim's two devices are on one node: both members go there.
  CHECK(placed.at("team-a/w0") == placed.at("team-a/w1"));
  REQUIRE(h.api.claim_statuses.size() == 1);  // written once, by the first member
  CHECK(h.api.claim_statuses[0].first == "team-a/pair");
  const json status = json::parse(h.api.claim_statuses[0].second);
  CHECK(status["reservedFor"] == json::parse(R"([{"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
      "name": "train", "uid": "uid-train"}])"));
  CHECK(status["allocation"]["devices"]["results"].size() == 2);
  CHECK(status["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0] ==
        placed.at("team-a/w0"));
}

TEST_CASE("a claim made for another PodGroup is not a pod's, though its entry names the template",
          "[dra][gang][podgroup]") {
  testing::CoreHarness h;
  AddDraNode(h, "n1", 2);
  REQUIRE(h.s->OnRawObject(RawKind::kDeviceClass, GpuClass("gpu.nvidia.com", "", "2026-01-01T00:00:00Z")).ok());
  json claim = json::parse(R"({"metadata": {"name": "pair", "namespace": "team-a", "uid": "uid-pair",
      "resourceVersion": "3", "ownerReferences": [{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
      "name": "other", "uid": "uid-other", "controller": true}]},
      "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}})");
  REQUIRE(h.s->OnRawObject(RawKind::kResourceClaim, claim).ok());
  Pod pod = PodBuilder("w0", "team-a").Requests("cpu:1").Build();
  pod.meta.uid = "uid-w0";
  pod.resource_claims.push_back(
      {.name = "gpus", .resource_claim_template_name = "two-gpus", .generated_claim_name = "pair"});
  h.AddPod(pod);
  h.RunUntilIdle();
  CHECK(h.binds().empty());
  CHECK(h.api.claim_statuses.empty());
}

TEST_CASE("preemption frees a victim's DRA devices, not a claim another running pod still holds",
          "[dra][extended][preemption]") {
  testing::CoreHarness h;
  AddDraNode(h, "n1", 1);
  REQUIRE(h.s->OnRawObject(RawKind::kDeviceClass, GpuClass("gpu.nvidia.com", "", "2026-01-01T00:00:00Z")).ok());
  auto claim = [&](const std::string& name, json status) {
    json c = {{"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", "c-" + name}, {"resourceVersion", "1"}}},
              {"spec", {{"devices", {{"requests", json::array({{{"name", "gpu"}, {"exactly", {
                  {"deviceClassName", "gpu.nvidia.com"}, {"count", 1}}}}})}}}}}};
    if (!status.is_null()) c["status"] = std::move(status);
    REQUIRE(h.s->OnRawObject(RawKind::kResourceClaim, c).ok());
  };
  auto pod = [&](const std::string& name, const std::string& claim_name, int32_t priority, std::string node) {
    Pod p = PodBuilder(name, "team-a").Requests("cpu:1").Priority(priority).Node(std::move(node)).Build();
    p.meta.uid = "uid-" + name;
    p.resource_claims.push_back({.name = "gpu", .resource_claim_name = claim_name});
    h.AddPod(p);
  };
  auto held_by = [](std::vector<std::string> pods) {
    json reserved = json::array();
    for (const std::string& p : pods) reserved.push_back({{"resource", "pods"}, {"name", p}, {"uid", "uid-" + p}});
    return json{{"allocation", {{"devices", {{"results", json::array({{{"request", "gpu"}, {"driver", "gpu.nvidia.com"},
                                                                        {"pool", "n1"}, {"device", "gpu-0"}}})}}}}},
                {"reservedFor", reserved}};
  };
  claim("wanted", nullptr);
  SECTION("the low-priority holder of the only device is evicted for the high-priority pod") {
    claim("held", held_by({"low"}));
    pod("low", "held", 0, "n1");
    pod("high", "wanted", 1000, "");
    h.RunUntilIdle();
    CHECK(h.api.evictions == std::vector<std::string>{"team-a/low"});
    CHECK(h.s->NominatedNodeOf("team-a/high") == "n1");
  }
  SECTION("a claim shared with a pod of higher priority stays: nothing is evicted") {
    claim("held", held_by({"low", "keeper"}));
    pod("low", "held", 0, "n1");
    pod("keeper", "held", 2000, "n1");
    pod("high", "wanted", 1000, "");
    h.RunUntilIdle();
    CHECK(h.api.evictions.empty());
  }
}

TEST_CASE("explain names the claim, the request and the selector that failed on each node", "[dra][extended]") {
  DraNodes c;
  REQUIRE(c.h.s->OnRawObject(RawKind::kDeviceClass, GpuClass("gpu.nvidia.com", "", "2026-01-01T00:00:00Z")).ok());
  json claim = {{"metadata", {{"name", "h100"}, {"namespace", "team-a"}, {"uid", "c-1"}}},
                {"spec", {{"devices", {{"requests", json::array({{{"name", "big"}, {"exactly", {
                    {"deviceClassName", "gpu.nvidia.com"}, {"count", 1},
                    {"selectors", json::array({{{"cel", {{"expression", "device.driver == \"h100.example.com\""}}}}})}}}}})}}}}}};
  REQUIRE(c.h.s->OnRawObject(RawKind::kResourceClaim, claim).ok());
  Pod pod = PodBuilder("wants-h100", "team-a").Requests("cpu:1").Build();
  pod.meta.uid = "uid-w";
  pod.resource_claims.push_back({.name = "gpu", .resource_claim_name = "h100"});
  c.h.AddPod(pod);
  c.h.RunUntilIdle();
  const Explanation e = Explain(*c.h.s, "team-a/wants-h100");
  CHECK(e.message == "0/1 nodes are available: 1 cannot allocate all claims.");
  REQUIRE(e.details.size() == 1);
  CHECK_THAT(e.details[0], Catch::StartsWith("on dra-1: claim team-a/h100, request big: 0 free devices of class "
                                             "gpu.nvidia.com match, 1 asked") &&
                               Catch::Contains("rejected by the request's selector #0"));
}

TEST_CASE("DynamicResources: the class for an extended resource, a claim left over, and undoing a claim made",
          "[dra][extended]") {
  testing::FakeHandle h;
  h.AddNode(NodeBuilder("dra-1").Allocatable("cpu:32,memory:128Gi,pods:110").Build());
  REQUIRE(h.objects().PutRaw(RawKind::kResourceSlice, GpuSlice("dra-1", 2)).ok());
  dynamic_resources::DynamicResources plugin(h);
  const Pod pod = GpuPod("a", 1);
  SECTION("of two classes naming the resource the newer serves it; the implicit name names its class") {
    REQUIRE(h.objects().PutRaw(RawKind::kDeviceClass, GpuClass("older", "nvidia.com/gpu", "2026-01-01T00:00:00Z")).ok());
    REQUIRE(h.objects().PutRaw(RawKind::kDeviceClass, GpuClass("newer", "nvidia.com/gpu", "2026-02-01T00:00:00Z")).ok());
    CycleState state;
    REQUIRE(plugin.PreFilter(state, pod).ok());
    REQUIRE(DraExtendedOf(state) != nullptr);
    CHECK(DraExtendedOf(state)->class_of == Served{{"nvidia.com/gpu", "newer"}});
    Pod implicit = PodBuilder("b", "team-a").Requests("deviceclass.resource.kubernetes.io/older:1").Build();
    CycleState other;
    REQUIRE(plugin.PreFilter(other, implicit).ok());
    CHECK(DraExtendedOf(other)->class_of == Served{{"deviceclass.resource.kubernetes.io/older", "older"}});
    CHECK(ServedByDra(other, "deviceclass.resource.kubernetes.io/older", *h.snapshot().Get("dra-1")));
  }
  SECTION("no class: skipped, nothing left to DRA") {
    CycleState state;
    CHECK(plugin.PreFilter(state, pod).IsSkip());
    CHECK(DraExtendedOf(state) == nullptr);
  }
  REQUIRE(h.objects().PutRaw(RawKind::kDeviceClass, GpuClass("gpu.nvidia.com", "nvidia.com/gpu", "2026-01-01T00:00:00Z")).ok());
  testing::FakeClusterApi& api = h.recording_api();
  SECTION("a claim an earlier attempt made for the pod is deleted, and the pod waits for that") {
    json left = dra::EncodeExtendedResourceClaim(pod, dra::ExtendedResourceRequests(pod, kGpuClass));
    left["metadata"]["name"] = "a-extended-resources-old";
    left["metadata"]["uid"] = "claim-uid";
    REQUIRE(h.objects().PutRaw(RawKind::kResourceClaim, left).ok());
    CycleState state;
    Status st = plugin.PreFilter(state, pod);
    CHECK(st.code() == Code::kUnschedulableAndUnresolvable);
    CHECK_THAT(st.reasons().at(0), Catch::Contains("team-a/a-extended-resources-old") &&
                                       Catch::Contains("left from an earlier attempt: deleting it"));
    CHECK(api.claims_deleted == std::vector<std::string>{"team-a/a-extended-resources-old"});
    // Another pod's claim of the same kind is not this pod's.
    Pod other = GpuPod("b", 1);
    CycleState fresh;
    CHECK(plugin.PreFilter(fresh, other).ok());
  }
  SECTION("the claim of a pod that runs is not left over, though a what-if asks about its pending copy") {
    // Found by the composition property: a move plan asks whether a running pod would fit
    // elsewhere by running PreFilter on a pending copy, which deleted the running pod's claim.
    json made = dra::EncodeExtendedResourceClaim(pod, dra::ExtendedResourceRequests(pod, kGpuClass));
    made["metadata"]["name"] = "a-extended-resources-1";
    made["metadata"]["uid"] = "claim-uid";
    REQUIRE(h.objects().PutRaw(RawKind::kResourceClaim, made).ok());
    Pod running = pod;
    running.node_name = "dra-1";
    h.AddPod(running);
    CycleState state;
    CHECK(plugin.PreFilter(state, pod).ok());  // `pod`: the pending copy, same UID
    CHECK(api.claims_deleted.empty());
  }
  SECTION("a failed status write fails PreBind; Unreserve deletes the claim made and frees the device") {
    CycleState state;
    REQUIRE(plugin.PreFilter(state, pod).ok());
    REQUIRE(plugin.Filter(state, pod, *h.snapshot().Get("dra-1")).ok());
    REQUIRE(plugin.Reserve(state, pod, "dra-1").ok());
    CHECK(plugin.InFlight() == 1);
    api.claim_status_answer = absl::UnavailableError("apiserver down");
    Status st = plugin.PreBind(state, pod, "dra-1");
    CHECK(st.code() == Code::kError);
    CHECK_THAT(st.reasons().at(0), Catch::Contains("ResourceClaim team-a/a-extended-resources-1: apiserver down"));
    plugin.Unreserve(state, pod, "dra-1");
    CHECK(api.claims_deleted == std::vector<std::string>{"team-a/a-extended-resources-1"});
    CHECK(plugin.InFlight() == 0);
    CHECK(api.pod_claim_statuses.empty());
  }
  SECTION("a claim made but not seen by the informer yet still holds its device") {
    CycleState first;
    REQUIRE(plugin.PreFilter(first, pod).ok());
    REQUIRE(plugin.Reserve(first, pod, "dra-1").ok());
    REQUIRE(plugin.PreBind(first, pod, "dra-1").ok());
    const Pod two = GpuPod("b", 2);
    CycleState second;
    REQUIRE(plugin.PreFilter(second, two).ok());
    CHECK(plugin.InFlight() == 1);
    CHECK_FALSE(plugin.Filter(second, two, *h.snapshot().Get("dra-1")).ok());
  }
}

}  // namespace dra_extended_test
}  // namespace tessel
