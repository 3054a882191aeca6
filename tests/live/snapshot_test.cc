// `tesselctl snapshot` (tools/tesselctl/snapshot.h) against a fake API server: the Dynamic Resource
// Allocation lists (ResourceSlices, DeviceClasses, ResourceClaims) are written with their
// apiVersion and kind, a server that does not serve resource.k8s.io/v1 gives a snapshot without
// them and no error, and an anonymized snapshot renames nodes, pools, pods and claims everywhere
// the DRA objects name them, so that replay still reads it the same way.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>

#include "bench/sim/sim_world.h"
#include "fake_api_server.h"
#include "nlohmann/json.hpp"
#include "scheduler/api/decode.h"
#include "tools/tesselctl/snapshot.h"

namespace tessel::ctl {
namespace snapshot_test {

using kube::testing::FakeApiServer;
using nlohmann::json;

// UIDs are opaque (and stay in an anonymized snapshot): "uid-0" for train-0.
std::string UidOf(const std::string& pod) { return "uid-" + pod.substr(pod.size() - 1); }

json PodWithClaim(const std::string& name, const std::string& node) {
  json pod = {{"metadata", {{"name", name}, {"namespace", "team-x"}, {"uid", UidOf(name)},
                            {"creationTimestamp", "2025-06-01T10:00:00Z"}}},
              {"spec", {{"schedulerName", "tessel"},
                        {"containers", {{{"name", "main"}, {"image", "busybox"},
                                         {"resources", {{"claims", {{{"name", "gpu"}}}}}}}}},
                        {"resourceClaims", {{{"name", "gpu"}, {"resourceClaimTemplateName", "one-gpu"}}}}}},
              {"status", {{"phase", node.empty() ? "Pending" : "Running"},
                          {"resourceClaimStatuses", {{{"name", "gpu"}, {"resourceClaimName", name + "-gpu-x1"}}}}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

json ClaimOf(const std::string& pod) {
  return {{"metadata", {{"name", pod + "-gpu-x1"}, {"namespace", "team-x"}, {"uid", "claim-" + UidOf(pod)},
                        {"resourceVersion", "7"},
                        {"ownerReferences", {{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", pod},
                                              {"uid", UidOf(pod)}, {"controller", true}}}}}},
          {"spec", {{"devices", {{"requests", {{{"name", "gpu"},
                                                {"exactly", {{"deviceClassName", "gpu.example.com"}}}}}}}}}}};
}

// The cluster's lists, by path (items without apiVersion and kind, as the API server lists them):
// node gpu-node-7 with a slice of two GPUs (its pool named after it, as node-local drivers do);
// train-0 runs there holding gpu-0 through its generated claim; train-1 and train-2 wait.
std::map<std::string, json> ClusterLists() {
  json held = ClaimOf("train-0");
  held["status"] = json::parse(R"({
      "allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                              "pool": "gpu-node-7", "device": "gpu-0"}]},
                     "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                         {"key": "metadata.name", "operator": "In", "values": ["gpu-node-7"]}]}]}},
      "reservedFor": [{"resource": "pods", "name": "train-0", "uid": "uid-0"}]})");
  auto list = [](json items) { return json{{"kind", "List"}, {"metadata", json::object()}, {"items", items}}; };
  return {
      {"/api/v1/nodes", list(json::array({json::parse(R"({
          "metadata": {"name": "gpu-node-7", "labels": {"kubernetes.io/hostname": "gpu-node-7"}},
          "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                     "conditions": [{"type": "Ready", "status": "True"}]}})")}))},
      {"/api/v1/pods", list({PodWithClaim("train-0", "gpu-node-7"), PodWithClaim("train-1", ""),
                             PodWithClaim("train-2", "")})},
      {"/apis/resource.k8s.io/v1/resourceslices", list(json::array({json::parse(R"({
          "metadata": {"name": "gpu-node-7-gpu.example.com"},
          "spec": {"driver": "gpu.example.com", "nodeName": "gpu-node-7",
                   "pool": {"name": "gpu-node-7", "generation": 1, "resourceSliceCount": 1},
                   "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}})")}))},
      {"/apis/resource.k8s.io/v1/deviceclasses", list(json::array({json::parse(R"({
          "metadata": {"name": "gpu.example.com"},
          "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}})")}))},
      {"/apis/resource.k8s.io/v1/resourceclaims", list({held, ClaimOf("train-1"), ClaimOf("train-2")})},
  };
}

// A server with those lists; every other path is not served (404), and with `dra` false neither
// is resource.k8s.io/v1.
struct Server {
  std::map<std::string, json> lists = ClusterLists();
  std::atomic<bool> dra = true;
  FakeApiServer api{[this](const FakeApiServer::Call& call, httplib::Response& res) {
    auto it = lists.find(call.path);
    if (call.method != "GET" || it == lists.end() || (!dra && call.path.starts_with("/apis/resource.k8s.io/"))) {
      res.status = 404;
      res.set_content(R"({"kind": "Status", "code": 404, "reason": "NotFound"})", "application/json");
      return;
    }
    res.status = 200;
    res.set_content(it->second.dump(), "application/json");
  }};
};

std::map<std::string, int> KindsOf(const json& list) {
  std::map<std::string, int> out;
  for (const json& item : list["items"]) ++out[item["apiVersion"].get<std::string>() + " " + item["kind"].get<std::string>()];
  return out;
}

// Replays the snapshot: each pending pod's node ("" when not placed).
std::map<std::string, std::string> Replay(const json& list) {
  absl::StatusOr<ObjectList> objects = DecodeList(list.dump());
  REQUIRE(objects.ok());
  SchedulerConfig config;
  auto world = bench::SimWorld::New({.config = &config});
  REQUIRE(world.ok());
  CHECK((*world)->sim.Load(*objects).empty());  // every object read
  (*world)->sim.RunUntilIdle();
  return (*world)->sim.placements();
}

TEST_CASE("tesselctl snapshot writes the DRA objects, or none where the server has no DRA", "[tesselctl][dra]") {
  Server server;
  std::unique_ptr<kube::KubeClient> client = server.api.Client();
  REQUIRE(client != nullptr);
  SECTION("served: every list, each item with its apiVersion and kind; replay reads it") {
    absl::StatusOr<json> list = TakeSnapshot(*client);
    REQUIRE(list.ok());
    CHECK(KindsOf(*list) == std::map<std::string, int>{{"v1 Node", 1},
                                                       {"v1 Pod", 3},
                                                       {"resource.k8s.io/v1 ResourceSlice", 1},
                                                       {"resource.k8s.io/v1 DeviceClass", 1},
                                                       {"resource.k8s.io/v1 ResourceClaim", 3}});
    CHECK(server.api.Count("GET /apis/resource.k8s.io/v1/resourceclaims") == 1);
    // gpu-0 is held by train-0's claim: one of the two waiting pods gets gpu-1.
    const std::map<std::string, std::string> placed = Replay(*list);
    CHECK(placed.size() == 2);
    CHECK(placed.at("team-x/train-1") == "gpu-node-7");
    CHECK(placed.at("team-x/train-2").empty());
  }
  SECTION("not served (before Kubernetes 1.34): no DRA objects, no error") {
    server.dra = false;
    absl::StatusOr<json> list = TakeSnapshot(*client);
    REQUIRE(list.ok());
    CHECK(KindsOf(*list) == std::map<std::string, int>{{"v1 Node", 1}, {"v1 Pod", 3}});
    CHECK(server.api.Count("GET /apis/resource.k8s.io/v1/resourceslices") == 1);  // asked, and answered 404
  }
}

TEST_CASE("an anonymized snapshot renames what the DRA objects name, consistently", "[tesselctl][dra]") {
  Server server;
  std::unique_ptr<kube::KubeClient> client = server.api.Client();
  REQUIRE(client != nullptr);
  absl::StatusOr<json> list = TakeSnapshot(*client);
  REQUIRE(list.ok());
  Anonymize(*list);
  const std::string text = list->dump();
  for (const char* name : {"gpu-node-7", "train-", "team-x"}) {
    CAPTURE(name);
    CHECK(text.find(name) == std::string::npos);
  }
  const json* node = nullptr;
  const json* slice = nullptr;
  const json* held_claim = nullptr;
  const json* running_pod = nullptr;
  for (const json& item : (*list)["items"]) {
    const std::string kind = item["kind"];
    if (kind == "Node") node = &item;
    if (kind == "ResourceSlice") slice = &item;
    if (kind == "ResourceClaim" && item.contains("status")) held_claim = &item;
    if (kind == "Pod" && item["spec"].contains("nodeName")) running_pod = &item;
  }
  REQUIRE(node != nullptr);
  REQUIRE(slice != nullptr);
  REQUIRE(held_claim != nullptr);
  REQUIRE(running_pod != nullptr);
  const json& node_name = (*node)["metadata"]["name"];
  const json& pod_name = (*running_pod)["metadata"]["name"];
  const json& allocation = (*held_claim)["status"]["allocation"];
  CHECK((*slice)["spec"]["nodeName"] == node_name);
  CHECK(allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0] == node_name);
  CHECK((*slice)["spec"]["pool"]["name"] == allocation["devices"]["results"][0]["pool"]);
  CHECK((*slice)["spec"]["pool"]["name"].get<std::string>().starts_with("pool-"));
  CHECK((*held_claim)["status"]["reservedFor"][0]["name"] == pod_name);
  CHECK((*held_claim)["metadata"]["ownerReferences"][0]["name"] == pod_name);
  CHECK((*running_pod)["status"]["resourceClaimStatuses"][0]["resourceClaimName"] == (*held_claim)["metadata"]["name"]);
  CHECK((*held_claim)["metadata"]["name"].get<std::string>().starts_with("claim-"));
  // Replay reads it as it read the original: one waiting pod gets the free GPU, the other waits.
  const std::map<std::string, std::string> placed = Replay(*list);
  CHECK(placed.size() == 2);
  int on_node = 0;
  for (const auto& [key, where] : placed) on_node += where == node_name.get<std::string>();
  CHECK(on_node == 1);
}

}  // namespace snapshot_test
}  // namespace tessel::ctl
