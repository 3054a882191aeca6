// Consolidation (plugins/consolidation) with GPUs that come through Dynamic Resource Allocation:
// a waiting pod whose devices are its own ResourceClaims, or an nvidia.com/gpu request a
// DeviceClass serves on nodes without the device plugin, gets room made by moving movable pods;
// a moved pod comes back with its own claims unallocated (its plan must find it devices
// elsewhere, and the dry run leaves its real claim alone); a pod whose claim is shared, or named
// and not its own, frees nothing and is not moved.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "harness/core_harness.h"
#include "nlohmann/json.hpp"
#include "scheduler/core/scheduler.h"
#include "scheduler/preemption/disruption.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace consolidation_dra_test {

using nlohmann::json;
using testing::NodeBuilder;
using testing::PodBuilder;

constexpr int64_t kStart = 1'700'000'000;
constexpr char kDriver[] = "gpu.nvidia.com";

constexpr char kConfig[] = R"(
profiles:
- schedulerName: tessel
  pluginConfig:
  - name: Consolidation
    args: {minRunSeconds: 0, maxMovesPerPod: 1, moveWindowSeconds: 3600}
)";

// A cluster of nodes whose GPUs are DRA devices only (no nvidia.com/gpu in allocatable).
struct DraLab {
  testing::CoreHarness h{{.config_yaml = kConfig, .start = absl::FromUnixSeconds(kStart + 3600)}};

  // A node with `devices` devices gpu-0.. in its own pool (named as the node).
  void Node(const std::string& name, int devices) {
    h.AddNode(NodeBuilder(name).Allocatable("cpu:32,memory:128Gi,pods:110").Label("kubernetes.io/hostname", name).Build());
    json list = json::array();
    for (int i = 0; i < devices; ++i) list.push_back({{"name", StrCat("gpu-", i)}});
    REQUIRE(h.s->OnRawObject(RawKind::kResourceSlice,
                             {{"metadata", {{"name", StrCat(name, "-gpus")}, {"resourceVersion", "1"}}},
                              {"spec", {{"driver", kDriver}, {"nodeName", name},
                                        {"pool", {{"name", name}, {"generation", 1}, {"resourceSliceCount", 1}}},
                                        {"devices", list}}}})
                .ok());
  }
  // The class every claim asks for; `resource`: the extended resource it serves ("": none).
  void Class(const std::string& resource = "") {
    json c = {{"metadata", {{"name", kDriver}, {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
              {"spec", {{"selectors", json::array({{{"cel", {{"expression", "device.driver == \"gpu.nvidia.com\""}}}}})}}}};
    if (!resource.empty()) c["spec"]["extendedResourceName"] = resource;
    REQUIRE(h.s->OnRawObject(RawKind::kDeviceClass, c).ok());
  }

  // A claim of `count` devices. `owner`: the pod it was made for from a template ("" for a named
  // claim); `node`/`devices`: where it is allocated (none: unallocated); `reserved`: reservedFor;
  // `node_selector`: the allocation names the node (else any node may use it).
  void Claim(const std::string& name, int count, const std::string& owner, const std::string& node = "",
             const std::vector<int>& devices = {}, const std::vector<std::string>& reserved = {},
             bool node_selector = true) {
    json c = {{"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", "c-" + name}, {"resourceVersion", "1"}}},
              {"spec", {{"devices", {{"requests", json::array({{{"name", "gpu"}, {"exactly", {
                  {"deviceClassName", kDriver}, {"count", count}}}}})}}}}}};
    if (!owner.empty()) {
      c["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", owner},
                                                       {"uid", "uid-" + owner}, {"controller", true}}});
    }
    if (!devices.empty()) {
      json results = json::array();
      for (int d : devices) {
        results.push_back({{"request", "gpu"}, {"driver", kDriver}, {"pool", node}, {"device", StrCat("gpu-", d)}});
      }
      json reserved_for = json::array();
      for (const std::string& p : reserved) reserved_for.push_back({{"resource", "pods"}, {"name", p}, {"uid", "uid-" + p}});
      c["status"] = {{"allocation", {{"devices", {{"results", results}}},
                                     {"nodeSelector", {{"nodeSelectorTerms", json::array({{{"matchFields", json::array({
                                         {{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}}})}}})}}}}},
                     {"reservedFor", reserved_for}};
      if (!node_selector) c["status"]["allocation"].erase("nodeSelector");
    }
    REQUIRE(h.s->OnRawObject(RawKind::kResourceClaim, c).ok());
  }
  // A claim made for `pod`'s nvidia.com/gpu (the scheduler's extended-resource claim), allocated.
  void ExtendedClaim(const std::string& pod, const std::string& node, const std::vector<int>& devices) {
    json results = json::array();
    for (int d : devices) {
      results.push_back({{"request", "container-0-request-1"}, {"driver", kDriver}, {"pool", node},
                         {"device", StrCat("gpu-", d)}});
    }
    const std::string name = pod + "-extended-resources-x";
    REQUIRE(h.s->OnRawObject(RawKind::kResourceClaim, {
        {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", "c-" + name}, {"resourceVersion", "1"},
                      {"annotations", {{"resource.kubernetes.io/extended-resource-claim", "true"}}},
                      {"ownerReferences", json::array({{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", pod},
                                                        {"uid", "uid-" + pod}, {"controller", true}}})}}},
        {"spec", {{"devices", {{"requests", json::array({{{"name", "container-0-request-1"}, {"exactly", {
            {"deviceClassName", kDriver}, {"allocationMode", "ExactCount"}, {"count", devices.size()}}}}})}}}}},
        {"status", {{"allocation", {{"devices", {{"results", results}}}}},
                    {"reservedFor", json::array({{{"resource", "pods"}, {"name", pod}, {"uid", "uid-" + pod}}})}}}}).ok());
  }

  // A pod; `node` set: running there since kStart; `movable`: opted in to moves. Its claims:
  // `own` a template's claim made for it, `named` a ResourceClaim it names.
  Pod MakePod(const std::string& name, const std::string& node, bool movable, const std::string& own = "",
              const std::string& named = "", const std::string& requests = "cpu:1,memory:1Gi") {
    PodBuilder b(name, "team-a");
    b.Requests(requests).Created(kStart);
    if (!node.empty()) b.Node(node);
    Pod p = b.Build();
    p.meta.uid = "uid-" + name;
    if (!node.empty()) {
      p.phase = PodPhase::kRunning;
      p.start_time = absl::FromUnixSeconds(kStart);
    }
    p.meta.owner_references.push_back({.api_version = "batch/v1", .kind = "Job", .name = name,
                                       .uid = StrCat("job-", name), .controller = true});
    if (movable) p.meta.annotations[std::string(preemption::kMovableAnnotation)] = "true";
    if (!own.empty()) {
      p.resource_claims.push_back({.name = "gpu", .resource_claim_template_name = "gpu-template", .generated_claim_name = own});
    }
    if (!named.empty()) p.resource_claims.push_back({.name = "shared", .resource_claim_name = named});
    return p;
  }
  void Run() {
    h.RunUntilIdle();
    h.clock.Advance(absl::Seconds(20));
    h.RunUntilIdle();
  }
};

TEST_CASE("consolidation makes room for a pod whose GPUs are its own DRA claims", "[consolidation][dra]") {
  DraLab lab;
  lab.Class();
  lab.Node("n1", 2);
  lab.Node("n2", 2);
  // One device free on each node; the waiting pod's claim asks for two on one node.
  lab.Claim("m1-gpu", 1, "m1", "n1", {0}, {"m1"});
  lab.Claim("m2-gpu", 1, "m2", "n2", {0}, {"m2"});
  lab.h.AddPod(lab.MakePod("m1", "n1", /*movable=*/true, "m1-gpu"));
  lab.h.AddPod(lab.MakePod("m2", "n2", /*movable=*/true, "m2-gpu"));
  lab.Claim("big-gpu", 2, "big");
  lab.h.AddPod(lab.MakePod("big", "", false, "big-gpu"));
  lab.Run();
  // One move: m1 (the first node by name) to n2's free device; big waits for n1.
  REQUIRE(lab.h.api.evictions == std::vector<std::string>{"team-a/m1"});
  CHECK(lab.h.s->NominatedNodeOf("team-a/big") == "n1");
  CHECK(lab.h.api.claims_deleted.empty());  // the dry run leaves the moved pod's claim alone
  // m1 goes, the resourceclaim controller deletes its claim: big gets n1's two devices.
  lab.h.s->OnPodDelete("team-a/m1");
  lab.h.s->OnRawObjectDelete(RawKind::kResourceClaim, "team-a/m1-gpu");
  lab.Run();
  REQUIRE(lab.h.binds().size() == 1);
  CHECK(lab.h.binds()[0] == std::pair<std::string, std::string>{"team-a/big", "n1"});
}

TEST_CASE("consolidation: a moved DRA pod comes back with its claim unallocated and must find "
          "devices on another node", "[consolidation][dra]") {
  DraLab lab;
  lab.Class();
  lab.Node("n1", 3);
  lab.Node("n3", 1);
  // n1: m1 holds two of three devices. The waiting pod asks for three, on one node.
  lab.Claim("m1-gpu", 2, "m1", "n1", {0, 1}, {"m1"});
  lab.h.AddPod(lab.MakePod("m1", "n1", /*movable=*/true, "m1-gpu"));
  lab.Claim("big-gpu", 3, "big");
  SECTION("another node has two devices free: m1 moves there") {
    lab.Node("n2", 2);
    lab.h.AddPod(lab.MakePod("big", "", false, "big-gpu"));
    lab.Run();
    CHECK(lab.h.api.evictions == std::vector<std::string>{"team-a/m1"});
    CHECK(lab.h.s->NominatedNodeOf("team-a/big") == "n1");
  }
  SECTION("two devices free, but on two nodes: m1's claim would fit nowhere, nothing moves") {
    lab.Node("n2", 2);
    lab.Claim("u-gpu", 1, "u", "n2", {0}, {"u"});
    lab.h.AddPod(lab.MakePod("u", "n2", /*movable=*/false, "u-gpu"));
    lab.h.AddPod(lab.MakePod("big", "", false, "big-gpu"));
    lab.Run();
    CHECK(lab.h.api.evictions.empty());
    CHECK(lab.h.binds().empty());
  }
}

TEST_CASE("consolidation does not move a pod whose DRA claim is shared or not its own",
          "[consolidation][dra]") {
  DraLab lab;
  lab.Class();
  lab.Node("n1", 2);
  lab.Node("n2", 2);
  // n2: m holds one device through its own claim. n1: x holds one through a claim it does not
  // own. Each node has one device free; big asks for two.
  lab.Claim("m-gpu", 1, "m", "n2", {0}, {"m"});
  lab.h.AddPod(lab.MakePod("m", "n2", /*movable=*/true, "m-gpu"));
  SECTION("the claim is shared with a pod that stays") {
    lab.Claim("shared", 1, "", "n1", {0}, {"x", "keeper"});
    lab.h.AddPod(lab.MakePod("x", "n1", /*movable=*/true, "", "shared"));
    lab.h.AddPod(lab.MakePod("keeper", "n1", /*movable=*/false, "", "shared"));
  }
  SECTION("a named claim reserved for the pod alone: its replacement would need the same devices") {
    lab.Claim("named", 1, "", "n1", {0}, {"x"});
    lab.h.AddPod(lab.MakePod("x", "n1", /*movable=*/true, "", "named"));
  }
  SECTION("a named claim whose allocation any node may use: the replacement would keep its device") {
    lab.Claim("named", 1, "", "n1", {0}, {"x"}, /*node_selector=*/false);
    lab.h.AddPod(lab.MakePod("x", "n1", /*movable=*/true, "", "named"));
  }
  lab.Claim("big-gpu", 2, "big");
  lab.h.AddPod(lab.MakePod("big", "", false, "big-gpu"));
  lab.Run();
  // Moving x (n1 comes first by name) would free nothing that big could use: m moves instead.
  CHECK(lab.h.api.evictions == std::vector<std::string>{"team-a/m"});
  CHECK(lab.h.s->NominatedNodeOf("team-a/big") == "n2");
}

TEST_CASE("consolidation makes room for an nvidia.com/gpu pod served by DRA, and leaves the moved "
          "pod's claim to it", "[consolidation][dra][extended]") {
  DraLab lab;
  lab.Class("nvidia.com/gpu");
  lab.Node("n1", 2);
  lab.Node("n2", 2);
  lab.ExtendedClaim("m1", "n1", {0});
  lab.ExtendedClaim("m2", "n2", {0});
  lab.h.AddPod(lab.MakePod("m1", "n1", true, "", "", "cpu:1,memory:1Gi,nvidia.com/gpu:1"));
  lab.h.AddPod(lab.MakePod("m2", "n2", true, "", "", "cpu:1,memory:1Gi,nvidia.com/gpu:1"));
  lab.h.AddPod(lab.MakePod("big", "", false, "", "", "cpu:1,memory:1Gi,nvidia.com/gpu:2"));
  lab.Run();
  // The dry run placed m1's replacement as a new pod: the claim m1 runs with is not taken for
  // one an earlier attempt of the replacement left (and deleted).
  CHECK(lab.h.api.claims_deleted.empty());
  REQUIRE(lab.h.api.evictions == std::vector<std::string>{"team-a/m1"});
  CHECK(lab.h.s->NominatedNodeOf("team-a/big") == "n1");
  lab.h.s->OnPodDelete("team-a/m1");
  lab.h.s->OnRawObjectDelete(RawKind::kResourceClaim, "team-a/m1-extended-resources-x");
  lab.Run();
  REQUIRE(lab.h.binds().size() == 1);
  CHECK(lab.h.binds()[0] == std::pair<std::string, std::string>{"team-a/big", "n1"});
}

TEST_CASE("consolidation moves a device-plugin GPU pod to a node whose GPUs a DeviceClass serves",
          "[consolidation][dra][extended]") {
  DraLab lab;
  lab.Class("nvidia.com/gpu");
  // n1: two device-plugin GPUs, m holds one. d1: two DRA devices, u holds one.
  lab.h.AddNode(NodeBuilder("n1").Allocatable("cpu:32,memory:128Gi,pods:110,nvidia.com/gpu:2").Build());
  lab.h.AddPod(lab.MakePod("m", "n1", /*movable=*/true, "", "", "cpu:1,memory:1Gi,nvidia.com/gpu:1"));
  lab.Node("d1", 2);
  lab.ExtendedClaim("u", "d1", {0});
  lab.h.AddPod(lab.MakePod("u", "d1", /*movable=*/false, "", "", "cpu:1,memory:1Gi,nvidia.com/gpu:1"));
  lab.h.AddPod(lab.MakePod("big", "", false, "", "", "cpu:1,memory:1Gi,nvidia.com/gpu:2"));
  lab.Run();
  // One GPU free on each node: counted together, and m's replacement takes d1's free device.
  CHECK(lab.h.api.evictions == std::vector<std::string>{"team-a/m"});
  CHECK(lab.h.s->NominatedNodeOf("team-a/big") == "n1");
}

}  // namespace consolidation_dra_test
}  // namespace tessel
