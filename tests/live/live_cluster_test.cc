// LiveCluster against a fake API server: a bind is one POST carrying the pod's UID and the
// binding annotations; the answer is typed (ClusterApi::Bind's contract): 201 OK; 404 or a 409
// on a pod that is gone, being deleted or replaced (new UID) NotFound; a 409 on a pod bound
// elsewhere AlreadyExists; a 409 on a pod bound to the chosen node OK (a lost answer); lasting
// 5xx Unavailable; a replica that may not write sends nothing (FailedPrecondition); and a
// request's timeout is cut to the time this replica may still write.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "fake_api_server.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/live_cluster.h"

namespace tessel::kube {
namespace live_cluster_test {

using nlohmann::json;
using testing::FakeApiServer;

Pod TestPod() {
  Pod p;
  p.meta.namespace_ = "ns";
  p.meta.name = "p";
  p.meta.uid = "uid-1";
  p.scheduler_name = "tessel";
  return p;
}

constexpr char kBindPath[] = "POST /api/v1/namespaces/ns/pods/p/binding";

// The pod ns/p as the server holds it.
struct PodOnServer {
  bool exists = true;
  std::string uid = "uid-1";
  std::string node;      // spec.nodeName
  bool deleting = false;
  int bind_answer = 0;   // forced HTTP code for binds (0: behave like the apiserver)
  bool lose_first_answer = false;  // the first bind lands but answers 503
  int evict_answer = 201;          // HTTP code for evictions
};

struct Fixture {
  absl::Mutex mu;
  PodOnServer pod;
  FakeApiServer api{[this](const FakeApiServer::Call& call, httplib::Response& res) {
    absl::MutexLock lock(&mu);
    if (call.line() == kBindPath) {
      if (pod.bind_answer != 0) {
        res.status = pod.bind_answer;
        return;
      }
      json b = json::parse(call.body);
      if (!pod.exists) {
        res.status = 404;
      } else if (b["metadata"].contains("uid") && b["metadata"]["uid"] != pod.uid) {
        res.status = 409;  // "Precondition failed: UID in precondition ..."
      } else if (!pod.node.empty() || pod.deleting) {
        res.status = 409;
      } else {
        pod.node = b["target"]["name"];
        res.status = pod.lose_first_answer ? 503 : 201;
        pod.lose_first_answer = false;
      }
      return;
    }
    if (call.line() == "POST /api/v1/namespaces/ns/pods/p/eviction") {
      res.status = pod.evict_answer;
      if (pod.evict_answer == 429) {
        res.set_header("Retry-After", "1");
        res.set_content(R"({"kind":"Status","status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","code":429})",
                        "application/json");
      }
      return;
    }
    if (call.line() == "GET /api/v1/namespaces/ns/pods/p") {
      if (!pod.exists) {
        res.status = 404;
        return;
      }
      json meta = {{"name", "p"}, {"namespace", "ns"}, {"uid", pod.uid}};
      if (pod.deleting) meta["deletionTimestamp"] = "2026-01-01T00:00:00Z";
      res.set_content(json{{"metadata", meta}, {"spec", {{"nodeName", pod.node}}}}.dump(),
                      "application/json");
      return;
    }
    if (call.line() == "GET /apis/policy") {
      res.set_content(R"({"kind":"APIGroup","name":"policy","versions":[{"groupVersion":"policy/v1beta1","version":"v1beta1"}]})",
                      "application/json");
      return;
    }
    res.status = 404;
  }};
  std::unique_ptr<KubeClient> client = api.Client();
  EventRecorder events{client.get(), {}};
  std::optional<absl::Duration> budget = absl::InfiniteDuration();
  // What the informers know at the moment a bind is sent.
  std::atomic<bool> informer_has_pod{true};
  std::atomic<bool> informer_has_node{true};
  LiveCluster cluster{client.get(), &events,
                      LiveClusterOptions{.write_budget = [this] {
                                           absl::MutexLock lock(&mu);
                                           return budget;
                                         },
                                         .node_exists = [this](std::string_view) {
                                           return informer_has_node.load();
                                         },
                                         .pod_exists = [this](const Pod& p) {
                                           return p.meta.uid == "uid-1" && informer_has_pod.load();
                                         }}};
};

TEST_CASE("bind: one POST with the pod's UID and the binding annotations") {
  Fixture f;
  REQUIRE(f.cluster.Bind(TestPod(), "node-1", {{"tessel.io/gpu-devices", "0,3"}}).ok());
  std::vector<FakeApiServer::Call> calls = f.api.calls();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].line() == kBindPath);
  json body = json::parse(calls[0].body);
  CHECK(body["metadata"]["uid"] == "uid-1");
  CHECK(body["metadata"]["annotations"] == json{{"tessel.io/gpu-devices", "0,3"}});
  CHECK(body["target"]["name"] == "node-1");
  CHECK(f.cluster.binds() == 1);
}

TEST_CASE("bind: no annotations, no annotations field") {
  Fixture f;
  REQUIRE(f.cluster.Bind(TestPod(), "node-1", {}).ok());
  json body = json::parse(f.api.calls().at(0).body);
  CHECK_FALSE(body["metadata"].contains("annotations"));
}

TEST_CASE("bind: the answer is typed") {
  struct Case {
    std::string name;
    PodOnServer pod;
    absl::StatusCode want;
    int binds;  // binds() afterwards
  };
  const std::vector<Case> cases = {
      {"accepted", {}, absl::StatusCode::kOk, 1},
      {"a lost answer, then 409 on the chosen node", {.lose_first_answer = true}, absl::StatusCode::kOk, 1},
      {"404: deleted", {.exists = false}, absl::StatusCode::kNotFound, 0},
      {"409: bound elsewhere", {.node = "other-node"}, absl::StatusCode::kAlreadyExists, 0},
      {"409: a new pod holds the name", {.uid = "uid-2"}, absl::StatusCode::kNotFound, 0},
      {"409: being deleted", {.deleting = true}, absl::StatusCode::kNotFound, 0},
      {"503 that lasts", {.bind_answer = 503}, absl::StatusCode::kUnavailable, 0},
      {"429 that lasts", {.bind_answer = 429}, absl::StatusCode::kUnavailable, 0},
      {"403", {.bind_answer = 403}, absl::StatusCode::kPermissionDenied, 0},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      Fixture f;
      {
        absl::MutexLock lock(&f.mu);
        f.pod = c.pod;
      }
      absl::Status st = f.cluster.Bind(TestPod(), "node-1", {});
      CAPTURE(st.ToString());
      CHECK(st.code() == c.want);
      CHECK(f.cluster.binds() == c.binds);
    }
  }
}

TEST_CASE("evict: one POST with the UID precondition; the answer is typed, never retried") {
  struct Case {
    int http;
    absl::StatusCode want;
    int64_t evictions;
  };
  for (const Case& c : std::vector<Case>{
           {201, absl::StatusCode::kOk, 1},
           {404, absl::StatusCode::kNotFound, 0},           // already gone
           {409, absl::StatusCode::kNotFound, 0},           // another pod holds the name
           {429, absl::StatusCode::kResourceExhausted, 0},  // a PodDisruptionBudget says no
       }) {
    CAPTURE(c.http);
    Fixture f;
    f.pod.evict_answer = c.http;
    absl::Status st = f.cluster.Evict(TestPod(), "preempted");
    CAPTURE(st.ToString());
    CHECK(st.code() == c.want);
    CHECK(f.cluster.evictions() == c.evictions);
    std::vector<FakeApiServer::Call> calls = f.api.calls();
    REQUIRE(calls.size() == 1);  // a 429 is a budget's answer, not a reason to wait here
    json body = json::parse(calls[0].body);
    CHECK(body["kind"] == "Eviction");
    CHECK(body["deleteOptions"]["preconditions"]["uid"] == "uid-1");
  }
}

TEST_CASE("a bind is not sent for a pod or a node the informers saw deleted") {
  Fixture f;
  SECTION("the pod was deleted: NotFound, the pod ends") {
    f.informer_has_pod = false;
    CHECK(absl::IsNotFound(f.cluster.Bind(TestPod(), "node-1", {})));
    CHECK(f.cluster.binds_of_gone_pods() == 1);
  }
  SECTION("the node was deleted: Unavailable, the pod is scheduled again") {
    f.informer_has_node = false;
    CHECK(absl::IsUnavailable(f.cluster.Bind(TestPod(), "node-1", {})));
  }
  CHECK(f.api.CountMethod("POST") == 0);
}

TEST_CASE("a replica that may not write sends nothing: FailedPrecondition") {
  SECTION("not the leader") {
    Fixture f;
    {
      absl::MutexLock lock(&f.mu);
      f.budget = std::nullopt;
    }
    CHECK(absl::IsFailedPrecondition(f.cluster.Bind(TestPod(), "node-1", {})));
    CHECK(absl::IsFailedPrecondition(f.cluster.Evict(TestPod(), "preempted")));
    CHECK(f.api.calls().empty());
  }
  SECTION("the lease has run out") {
    Fixture f;
    {
      absl::MutexLock lock(&f.mu);
      f.budget = absl::ZeroDuration();
    }
    CHECK(absl::IsFailedPrecondition(f.cluster.Bind(TestPod(), "node-1", {})));
    CHECK(f.api.calls().empty());
  }
  SECTION("shutting down") {
    Fixture f;
    f.cluster.StopWriting();
    CHECK(absl::IsFailedPrecondition(f.cluster.Bind(TestPod(), "node-1", {})));
    CHECK(f.api.calls().empty());
  }
}

TEST_CASE("leadership is checked before every attempt, retries included") {
  // The server answers 503; leadership ends after the second check: two attempts are sent,
  // the third is refused before it leaves.
  FakeApiServer api([](const FakeApiServer::Call&, httplib::Response& res) { res.status = 503; });
  auto client = api.Client();
  int checks = 0;
  absl::StatusOr<Response> r = client->Do(
      {.method = "POST", .path = "/api/v1/namespaces/ns/pods/p/binding", .body = "{}",
       .write_budget = [&]() -> std::optional<absl::Duration> {
         if (++checks > 2) return std::nullopt;
         return absl::Seconds(10);
       }});
  CHECK(absl::IsFailedPrecondition(r.status()));
  CHECK(api.CountMethod("POST") == 2);
  CHECK(checks == 3);
}

TEST_CASE("a request's timeout is cut to the time left to write") {
  FakeApiServer api([](const FakeApiServer::Call&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    res.status = 201;
  });
  auto client = api.Client({.qps = 0, .max_attempts = 1});
  absl::StatusOr<Response> r =
      client->Do({.method = "POST", .path = "/x", .body = "{}",
                  .write_budget = [] { return std::optional<absl::Duration>(absl::Milliseconds(200)); }});
  CHECK(absl::IsDeadlineExceeded(r.status()));
}

TEST_CASE("discovery picks the Eviction version the server serves") {
  Fixture f;
  auto api = DiscoverEvictionApi(*f.client);
  REQUIRE(api.ok());
  CHECK(*api == "policy/v1beta1");
}

}  // namespace live_cluster_test
}  // namespace tessel::kube
