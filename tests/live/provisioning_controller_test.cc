// ProvisioningController against a fake API server: a gang short of capacity gets its
// PodTemplate and ProvisioningRequest (members read from the API server, grouped by shape) and
// its members the consume-provisioning-request annotations; a placed gang's request and
// templates are deleted; a request that cannot be created (no CRD) fails the ask with the API's
// answer; the informer's view of a request's conditions reaches the next ask; a member that
// comes later is annotated at the next ask; a flavored gang's templates carry its flavor.
#include <catch2/catch.hpp>

#include "absl/synchronization/mutex.h"
#include "fake_api_server.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/provisioning_controller.h"

namespace tessel::kube {
namespace provisioning_controller_test {

using nlohmann::json;
using testing::FakeApiServer;
using testing::WaitUntil;

constexpr std::string_view kRequests = "/apis/autoscaling.x-k8s.io/v1/namespaces/ns/provisioningrequests";

struct Fixture {
  bool crd = true;
  absl::Mutex mu;
  std::vector<json> created;  // POST bodies, in order
  FakeApiServer api{[this](const FakeApiServer::Call& call, httplib::Response& res) {
    absl::MutexLock lock(&mu);
    if (call.method == "GET" && call.path.starts_with("/api/v1/namespaces/ns/pods/")) {
      const std::string name = call.path.substr(call.path.rfind('/') + 1);
      json pod = {{"metadata", {{"name", name}, {"namespace", "ns"}}},
                  {"spec",
                   {{"nodeSelector", {{"pool", "a100"}}},
                    {"containers",
                     {{{"name", "main"}, {"image", "i"}, {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}}};
      res.set_content(pod.dump(), "application/json");
      return;
    }
    if (call.method == "POST" && (call.path == "/api/v1/namespaces/ns/podtemplates" || (crd && call.path == kRequests))) {
      created.push_back(json::parse(call.body));
      res.status = 201;
      res.set_content(call.body, "application/json");
      return;
    }
    if (call.method == "GET" && call.path == "/api/v1/namespaces/ns/podtemplates") {
      json list = {{"items", json::array()}};
      for (const json& c : created) {
        if (c["kind"] == "PodTemplate") list["items"].push_back(c);
      }
      res.set_content(list.dump(), "application/json");
      return;
    }
    if (call.method == "PATCH" || call.method == "DELETE") {
      res.set_content("{}", "application/json");
      return;
    }
    res.status = 404;
    res.set_content(R"({"kind":"Status","message":"the server could not find the requested resource"})",
                    "application/json");
  }};
  std::unique_ptr<KubeClient> client = api.Client();
  absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  ProvisioningController controller{client.get(), client.get(), {.now = [this] { return now; }}};

  provisioning::GangShortage Shortage() {
    return {.ask = {.gang_key = "podgroup:ns/train",
                    .namespace_ = "ns",
                    .marking = {.class_name = "queued-provisioning.gke.io"},
                    .owner = {.api_version = "scheduling.x-k8s.io/v1alpha1", .kind = "PodGroup", .name = "train", .uid = "u"}},
            .member_keys = {"ns/train-0", "ns/train-1"}};
  }
};

TEST_CASE("a short gang gets one template and one request, and its members the annotations", "[live][provisioning]") {
  Fixture f;
  provisioning::Outcome o = f.controller.GangShort(f.Shortage());
  CHECK_FALSE(o.failed);
  CHECK_THAT(o.message, Catch::Contains("waiting for ProvisioningRequest ns/tessel-podgroup-train-1"));
  WaitUntil([&] { return f.api.Count("PATCH /api/v1/namespaces/ns/pods/train-1") == 1; });
  CHECK(f.api.Count("PATCH /api/v1/namespaces/ns/pods/train-0") == 1);
  {
    absl::MutexLock lock(&f.mu);
    REQUIRE(f.created.size() == 2);
    CHECK(f.created[0]["kind"] == "PodTemplate");
    CHECK(f.created[0]["template"]["spec"]["nodeSelector"] == json({{"pool", "a100"}}));
    CHECK(f.created[1]["kind"] == "ProvisioningRequest");
    CHECK(f.created[1]["spec"]["podSets"] ==
          json::parse(R"([{"podTemplateRef":{"name":"tessel-podgroup-train-1-0"},"count":2}])"));
  }
  const auto calls = f.api.calls();
  auto patch = std::find_if(calls.begin(), calls.end(), [](const FakeApiServer::Call& c) { return c.method == "PATCH"; });
  REQUIRE(patch != calls.end());
  CHECK(json::parse(patch->body) ==
        json::parse(R"({"metadata":{"annotations":{"autoscaling.x-k8s.io/consume-provisioning-request":"tessel-podgroup-train-1",
                        "autoscaling.x-k8s.io/provisioning-class-name":"queued-provisioning.gke.io"}}})"));
  // Asked again while it is out: nothing more is written.
  CHECK_FALSE(f.controller.GangShort(f.Shortage()).failed);
  CHECK(f.controller.created() == 1);

  // The informer says it is Provisioned; then the gang is placed: request and template go.
  auto request = [](std::string ns, std::string name) {
    return json{{"metadata",
                 {{"name", std::move(name)},
                  {"namespace", std::move(ns)},
                  {"labels", {{"app.kubernetes.io/managed-by", "tessel"}}},
                  {"annotations", {{"tessel.io/gang", "podgroup:ns/train"}}}}},
                {"status", {{"conditions", {{{"type", "Provisioned"}, {"status", "True"}}}}}}};
  };
  // Issue 37, defect 7: a request in another namespace that names this gang is not adopted.
  f.controller.OnUpdate(request("mallory", "tessel-podgroup-train-99"));
  CHECK_THAT(f.controller.GangShort(f.Shortage()).message, Catch::Contains("waiting for ProvisioningRequest ns/tessel-podgroup-train-1"));
  f.controller.OnUpdate(request("ns", "tessel-podgroup-train-1"));
  CHECK_THAT(f.controller.GangShort(f.Shortage()).message, Catch::Contains("is Provisioned"));
  f.controller.GangPlaced("podgroup:ns/train");
  WaitUntil([&] { return f.api.Count("DELETE /api/v1/namespaces/ns/podtemplates/tessel-podgroup-train-1-0") == 1; });
  CHECK(f.api.Count(std::string("DELETE ") + std::string(kRequests) + "/tessel-podgroup-train-1") == 1);
  CHECK(f.api.Count("DELETE /apis/autoscaling.x-k8s.io/v1/namespaces/mallory/provisioningrequests/tessel-podgroup-train-99") == 0);
}

TEST_CASE("without the CRD the ask fails with the API's answer", "[live][provisioning]") {
  Fixture f;
  f.crd = false;
  CHECK_FALSE(f.controller.GangShort(f.Shortage()).failed);
  provisioning::Outcome o;
  WaitUntil([&] {
    o = f.controller.GangShort(f.Shortage());
    return o.failed;
  });
  CHECK_THAT(o.message, Catch::Contains("failed: CreateFailed: "));
  CHECK_THAT(o.message, Catch::Contains("could not find the requested resource"));
  CHECK(f.controller.created() == 0);
}

TEST_CASE("a member created after the request is annotated at the gang's next shortfall", "[live][provisioning]") {
  Fixture f;
  f.controller.GangShort(f.Shortage());
  WaitUntil([&] { return f.api.Count("PATCH /api/v1/namespaces/ns/pods/train-1") == 1; });
  provisioning::GangShortage later = f.Shortage();
  later.member_keys.push_back("ns/train-2");
  CHECK_FALSE(f.controller.GangShort(later).failed);
  WaitUntil([&] { return f.api.Count("PATCH /api/v1/namespaces/ns/pods/train-2") == 1; });
  CHECK(f.controller.created() == 1);
  // Once only; the earlier members are not patched again.
  f.controller.GangShort(later);
  f.controller.GangPlaced("podgroup:ns/train");
  WaitUntil([&] { return f.api.Count(std::string("DELETE ") + std::string(kRequests) + "/tessel-podgroup-train-1") == 1; });
  CHECK(f.api.Count("PATCH /api/v1/namespaces/ns/pods/train-2") == 1);
  CHECK(f.api.Count("PATCH /api/v1/namespaces/ns/pods/train-0") == 1);
  const auto calls = f.api.calls();
  auto patch = std::find_if(calls.begin(), calls.end(), [](const FakeApiServer::Call& c) {
    return c.method == "PATCH" && c.path.ends_with("/train-2");
  });
  REQUIRE(patch != calls.end());
  CHECK(json::parse(patch->body)["metadata"]["annotations"]["autoscaling.x-k8s.io/consume-provisioning-request"] ==
        "tessel-podgroup-train-1");
}

TEST_CASE("a flavored gang's template asks for nodes of its flavor", "[live][provisioning]") {
  Fixture f;
  provisioning::GangShortage s = f.Shortage();
  s.ask.nodes = {.flavors = {"spot"}, .node_selector = {{"pool", "spot"}},
                 .tolerations = {Toleration{.key = "spot", .op = Toleration::Operator::kExists}}};
  CHECK_THAT(f.controller.GangShort(s).message, Catch::Contains("(class queued-provisioning.gke.io, flavor spot)"));
  WaitUntil([&] { return f.controller.created() == 1; });
  absl::MutexLock lock(&f.mu);
  REQUIRE(f.created.size() == 2);
  CHECK(f.created[0]["template"]["spec"]["nodeSelector"] == json({{"pool", "spot"}}));
  CHECK(f.created[0]["template"]["spec"]["tolerations"] == json::parse(R"([{"key":"spot","operator":"Exists"}])"));
}

}  // namespace provisioning_controller_test
}  // namespace tessel::kube
