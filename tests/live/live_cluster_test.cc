// LiveCluster against a fake API server: a bind the server accepted is final; a 409 on a pod
// already bound to the chosen node counts as done (a retried request whose first answer was
// lost), a 409 on a pod bound elsewhere fails and marks the pod so it is not reported
// unschedulable; a replica that may not write sends nothing; events are deduplicated; the
// PodScheduled condition is a strategic merge patch on pods/status.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <atomic>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/live_cluster.h"

namespace tessel::kube {
namespace {

using nlohmann::json;

struct FakeApi {
  httplib::Server server;
  std::thread thread;
  int port = 0;
  absl::Mutex mu;
  std::vector<std::string> requests;  // "METHOD path"
  std::vector<std::string> bodies;
  std::string bound_to;               // spec.nodeName of pod ns/p
  bool lose_first_answer = false;     // answer 503 to a bind that did land

  FakeApi() {
    auto record = [this](const httplib::Request& req) {
      absl::MutexLock lock(&mu);
      requests.push_back(req.method + " " + req.path);
      bodies.push_back(req.body);
    };
    server.Post("/api/v1/namespaces/ns/pods/p/binding", [this, record](const httplib::Request& req, httplib::Response& res) {
      record(req);
      absl::MutexLock lock(&mu);
      if (!bound_to.empty()) {
        res.status = 409;
        res.set_content(R"({"kind":"Status","code":409,"message":"pod p is already assigned to node \")" + bound_to + "\\\"\"}",
                        "application/json");
        return;
      }
      json b = json::parse(req.body);
      bound_to = b["target"]["name"];
      res.status = lose_first_answer ? 503 : 201;
      lose_first_answer = false;
    });
    server.Get("/api/v1/namespaces/ns/pods/p", [this, record](const httplib::Request& req, httplib::Response& res) {
      record(req);
      absl::MutexLock lock(&mu);
      res.set_content(json{{"spec", {{"nodeName", bound_to}}}}.dump(), "application/json");
    });
    server.Post("/api/v1/namespaces/ns/events", [record](const httplib::Request& req, httplib::Response& res) {
      record(req);
      res.status = 201;
    });
    server.Patch("/api/v1/namespaces/ns/pods/p/status", [record](const httplib::Request& req, httplib::Response& res) {
      record(req);
      res.set_content("{}", "application/json");
    });
    server.Get("/apis/policy", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"kind":"APIGroup","name":"policy","versions":[{"groupVersion":"policy/v1beta1","version":"v1beta1"}]})",
                      "application/json");
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    // stop() before the loop runs would be lost (cpp-httplib): wait until it serves.
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeApi() {
    server.stop();
    thread.join();
  }
  int Count(const std::string& request) {
    absl::MutexLock lock(&mu);
    return static_cast<int>(std::count(requests.begin(), requests.end(), request));
  }
};

Pod TestPod() {
  Pod p;
  p.meta.namespace_ = "ns";
  p.meta.name = "p";
  p.meta.uid = "uid-1";
  p.scheduler_name = "tessel";
  return p;
}

struct Fixture {
  FakeApi api;
  std::unique_ptr<KubeClient> client;
  WorkerPool pool{"events", 1};
  std::atomic<bool> leader{true};
  std::unique_ptr<LiveCluster> cluster;
  Fixture() {
    auto c = KubeClient::New({.server = "http://127.0.0.1:" + std::to_string(api.port)},
                             {.qps = 0, .retry_backoff = {.initial = absl::Milliseconds(1),
                                                          .max = absl::Milliseconds(2)}});
    REQUIRE(c.ok());
    client = *std::move(c);
    cluster = std::make_unique<LiveCluster>(client.get(), &pool,
                                            LiveClusterOptions{.identity = "test",
                                                               .may_write = [this] { return leader.load(); }});
  }
};

TEST_CASE("bind: accepted once, with the pod's UID as precondition") {
  Fixture f;
  REQUIRE(f.cluster->Bind(TestPod(), "node-1").ok());
  CHECK(f.api.Count("POST /api/v1/namespaces/ns/pods/p/binding") == 1);
  json body = json::parse(f.api.bodies.front());
  CHECK(body["metadata"]["uid"] == "uid-1");
  CHECK(body["target"]["name"] == "node-1");
  CHECK(f.cluster->binds() == 1);
}

TEST_CASE("bind: a lost answer and a 409 on the same node count as one bind") {
  Fixture f;
  f.api.lose_first_answer = true;  // the first POST lands but answers 503; the retry gets 409
  REQUIRE(f.cluster->Bind(TestPod(), "node-1").ok());
  CHECK(f.api.Count("POST /api/v1/namespaces/ns/pods/p/binding") == 2);
  CHECK(f.api.Count("GET /api/v1/namespaces/ns/pods/p") == 1);
  CHECK(f.cluster->binds() == 1);
  CHECK_FALSE(f.cluster->FoundBoundElsewhere("ns/p"));
}

TEST_CASE("bind: a pod bound elsewhere fails and is not reported unschedulable") {
  Fixture f;
  f.api.bound_to = "other-node";
  absl::Status st = f.cluster->Bind(TestPod(), "node-1");
  CHECK(absl::IsAlreadyExists(st));
  CHECK(f.cluster->FoundBoundElsewhere("ns/p"));
  StatusReporter reporter(f.cluster.get(), &f.pool);
  reporter.PodUnschedulable(TestPod(), FailureKind::kBindFailed, "binding rejected: already bound");
  f.pool.Shutdown();
  CHECK(f.api.Count("POST /api/v1/namespaces/ns/events") == 0);
  CHECK(f.api.Count("PATCH /api/v1/namespaces/ns/pods/p/status") == 0);
}

TEST_CASE("a replica that may not write sends nothing") {
  Fixture f;
  f.leader = false;
  CHECK(absl::IsUnavailable(f.cluster->Bind(TestPod(), "node-1")));
  CHECK(absl::IsUnavailable(f.cluster->Evict(TestPod(), "preempted")));
  StatusReporter reporter(f.cluster.get(), &f.pool);
  reporter.PodUnschedulable(TestPod(), FailureKind::kUnschedulable, "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
  f.pool.Shutdown();
  absl::MutexLock lock(&f.api.mu);
  CHECK(f.api.requests.empty());
}

TEST_CASE("unschedulable: one event and one condition per distinct message") {
  Fixture f;
  StatusReporter reporter(f.cluster.get(), &f.pool);
  const std::string msg = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.";
  for (int i = 0; i < 5; ++i) reporter.PodUnschedulable(TestPod(), FailureKind::kUnschedulable, msg);
  reporter.PodUnschedulable(TestPod(), FailureKind::kUnschedulable, "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
  f.pool.Shutdown();
  CHECK(f.api.Count("POST /api/v1/namespaces/ns/events") == 2);
  CHECK(f.api.Count("PATCH /api/v1/namespaces/ns/pods/p/status") == 2);
  CHECK(f.cluster->events_suppressed() == 4);
  absl::MutexLock lock(&f.api.mu);
  for (size_t i = 0; i < f.api.requests.size(); ++i) {
    if (f.api.requests[i] != "PATCH /api/v1/namespaces/ns/pods/p/status") continue;
    json patch = json::parse(f.api.bodies[i]);
    const json& c = patch["status"]["conditions"][0];
    CHECK(c["type"] == "PodScheduled");
    CHECK(c["status"] == "False");
    CHECK(c["reason"] == "Unschedulable");
  }
}

TEST_CASE("discovery picks the Eviction version the server serves") {
  Fixture f;
  auto api = DiscoverEvictionApi(*f.client);
  REQUIRE(api.ok());
  CHECK(*api == "policy/v1beta1");
}

}  // namespace
}  // namespace tessel::kube
