// PodGroupStatusWriter against a fake API server: before each status PATCH it counts the
// group's pods by phase with one LIST by label (finished pods included, which the scheduler's
// informer never sees), derives the phase from the counts, and patches the status subresource.
#include <catch2/catch.hpp>

#include "absl/synchronization/mutex.h"
#include "fake_api_server.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/podgroup_status.h"

namespace tessel::kube {
namespace podgroup_status_test {

using nlohmann::json;
using testing::FakeApiServer;

struct Fixture {
  absl::Mutex mu;
  std::vector<std::string> phases;  // of the group's pods, as the server holds them
  std::vector<json> patches;
  FakeApiServer api{[this](const FakeApiServer::Call& call, httplib::Response& res) {
    absl::MutexLock lock(&mu);
    if (call.line() == "GET /api/v1/namespaces/ns/pods") {
      REQUIRE(call.params.at("labelSelector") == "scheduling.x-k8s.io/pod-group=train");
      // Pages of `limit` pods, the continue token being the offset of the next page.
      const size_t limit = call.params.contains("limit") ? std::stoul(call.params.at("limit")) : phases.size();
      const size_t from = call.params.contains("continue") ? std::stoul(call.params.at("continue")) : 0;
      json items = json::array();
      for (size_t i = from; i < phases.size() && i < from + limit; ++i) {
        items.push_back({{"status", {{"phase", phases[i]}}}});
      }
      json list{{"kind", "PodList"}, {"metadata", json::object()}, {"items", items}};
      if (from + limit < phases.size()) list["metadata"]["continue"] = std::to_string(from + limit);
      res.set_content(list.dump(), "application/json");
      return;
    }
    if (call.line() == "PATCH /apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups/train/status") {
      patches.push_back(json::parse(call.body));
      res.set_content("{}", "application/json");
      return;
    }
    res.status = 404;
  }};
  std::unique_ptr<KubeClient> client = api.Client();

  json WriteAndWait(const gang::GangStatusUpdate& update) {
    size_t before;
    {
      absl::MutexLock lock(&mu);
      before = patches.size();
    }
    PodGroupStatusWriter writer(client.get());
    writer.GangStatusChanged({.kind = gang::GangKind::kPodGroup, .namespace_ = "ns", .name = "train"},
                             update);
    absl::MutexLock lock(&mu);
    auto sent = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return patches.size() > before; };
    REQUIRE(mu.AwaitWithTimeout(absl::Condition(&sent), absl::Seconds(10)));
    return patches.back()["status"];
  }
};

gang::GangStatusUpdate Scheduled() {
  return {.phase = gang::GangPhase::kScheduled, .scheduled = 4, .members = 4, .min_member = 3,
          .condition = true, .reason = gang::GangReason::kScheduled, .message = "4 members placed on 1 node"};
}

TEST_CASE("PodGroup status: counts from the pods' phases, the phase derived from them") {
  struct Case {
    std::vector<std::string> phases;
    std::string phase;
    int running, succeeded, failed;
  };
  const std::vector<Case> cases = {
      {{"Pending", "Pending", "Running", "Running"}, "Scheduled", 2, 0, 0},
      {{"Running", "Running", "Running", "Pending"}, "Running", 3, 0, 0},
      {{"Succeeded", "Running", "Running", "Running"}, "Running", 3, 1, 0},
      {{"Succeeded", "Succeeded", "Succeeded", "Running"}, "Finished", 1, 3, 0},
      {{"Failed", "Running", "Running", "Running"}, "Failed", 3, 0, 1},
  };
  for (const Case& c : cases) {
    Fixture f;
    {
      absl::MutexLock lock(&f.mu);
      f.phases = c.phases;
    }
    const json status = f.WriteAndWait(Scheduled());
    INFO(status.dump());
    CHECK(status["phase"] == c.phase);
    CHECK(status["scheduled"] == 4);
    CHECK(status["running"] == c.running);
    CHECK(status["succeeded"] == c.succeeded);
    CHECK(status["failed"] == c.failed);
    CHECK(status["conditions"][0]["reason"] == "Scheduled");
  }
}

// Waits (real time, up to 5 s) for `pred`.
template <typename Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 500 && !pred(); ++i) absl::SleepFor(absl::Milliseconds(10));
  return pred();
}

TEST_CASE("PodGroup status: paged counts, fenced writes, no write after Stop, deleted groups forgotten") {
  Fixture f;
  {
    absl::MutexLock lock(&f.mu);
    f.phases = {"Running", "Running", "Running", "Running", "Running", "Running", "Succeeded"};
  }
  std::atomic<bool> leading{false};
  PodGroupStatusWriter writer(f.client.get(),
                              {.write_budget = [&]() -> std::optional<absl::Duration> {
                                 if (!leading.load()) return std::nullopt;
                                 return absl::Seconds(10);
                               },
                               .page_size = 3});
  const gang::GangId id{.kind = gang::GangKind::kPodGroup, .namespace_ = "ns", .name = "train"};
  auto patches = [&] {
    absl::MutexLock lock(&f.mu);
    return f.patches.size();
  };

  // Not the leader: nothing is read or written.
  writer.GangStatusChanged(id, Scheduled());
  absl::SleepFor(absl::Milliseconds(300));
  CHECK(patches() == 0);
  CHECK(f.api.calls().empty());

  // The leader: every page is read (7 pods, 3 a page), and the status counts them all.
  leading = true;
  writer.GangStatusChanged(id, Scheduled());
  REQUIRE(Eventually([&] { return patches() == 1; }));
  CHECK(f.api.Count("GET /api/v1/namespaces/ns/pods") == 3);
  {
    absl::MutexLock lock(&f.mu);
    CHECK(f.patches[0]["status"]["running"] == 6);
    CHECK(f.patches[0]["status"]["succeeded"] == 1);
  }
  CHECK(Eventually([&] { return writer.remembered() == 1; }));  // once the PATCH is answered

  // The same status is not written twice, until the group is deleted and made again.
  writer.GangStatusChanged(id, Scheduled());
  absl::SleepFor(absl::Milliseconds(300));
  CHECK(patches() == 1);
  writer.GangForgotten(id);
  CHECK(writer.remembered() == 0);
  writer.GangStatusChanged(id, Scheduled());
  REQUIRE(Eventually([&] { return patches() == 2; }));

  // Stopped (SIGTERM): nothing more is written.
  writer.Stop();
  gang::GangStatusUpdate changed = Scheduled();
  changed.message = "a change after the stop";
  writer.GangStatusChanged(id, changed);
  absl::SleepFor(absl::Milliseconds(300));
  CHECK(patches() == 2);
}

TEST_CASE("PodGroup status: a failed count leaves the core's phase and is still written") {
  FakeApiServer api([](const FakeApiServer::Call& call, httplib::Response& res) {
    res.status = call.method == "GET" ? 403 : 200;
    if (call.method == "PATCH") res.set_content("{}", "application/json");
  });
  auto client = api.Client();
  {
    PodGroupStatusWriter writer(client.get());
    writer.GangStatusChanged({.kind = gang::GangKind::kPodGroup, .namespace_ = "ns", .name = "train"},
                             Scheduled());
    for (int i = 0; i < 100 && api.CountMethod("PATCH") == 0; ++i) absl::SleepFor(absl::Milliseconds(50));
  }
  REQUIRE(api.CountMethod("PATCH") == 1);
  json status;
  for (const auto& call : api.calls()) {
    if (call.method == "PATCH") status = json::parse(call.body)["status"];
  }
  CHECK(status["phase"] == "Scheduled");
}

// The upstream PodGroup (scheduling.k8s.io v1beta1): kube-scheduler's condition.
gang::GangStatusUpdate Short() {
  return {.phase = gang::GangPhase::kPending, .members = 3, .min_member = 3, .condition = false,
          .reason = gang::GangReason::kUnschedulable, .message = "0/2 nodes can host 3 members",
          .time = absl::FromUnixSeconds(1800000000)};
}

TEST_CASE("upstream PodGroup status: PodGroupInitiallyScheduled, never back to False", "[podgroup]") {
  const json fresh = json::parse(R"({"metadata": {"generation": 2}, "status": {}})");
  std::optional<json> patch = UpstreamPodGroupStatusPatch(Short(), fresh);
  REQUIRE(patch.has_value());
  CHECK(*patch == json::parse(R"({"status": {"conditions": [{"type": "PodGroupInitiallyScheduled",
      "status": "False", "reason": "Unschedulable", "message": "0/2 nodes can host 3 members",
      "lastTransitionTime": "2027-01-15T08:00:00Z", "observedGeneration": 2}]}})"));

  SECTION("the same condition again: no write") {
    json current = fresh;
    current["status"]["conditions"] = (*patch)["status"]["conditions"];
    CHECK_FALSE(UpstreamPodGroupStatusPatch(Short(), current).has_value());
    SECTION("another message keeps the transition time") {
      gang::GangStatusUpdate later = Short();
      later.message = "0/3 nodes can host 3 members";
      later.time += absl::Minutes(1);
      std::optional<json> again = UpstreamPodGroupStatusPatch(later, current);
      REQUIRE(again.has_value());
      CHECK((*again)["status"]["conditions"][0]["lastTransitionTime"] == "2027-01-15T08:00:00Z");
    }
  }
  SECTION("placed: True, reason Scheduled; then never False again") {
    gang::GangStatusUpdate placed = Short();
    placed.condition = true;
    placed.reason = gang::GangReason::kScheduled;
    placed.message = "3 members placed on 3 nodes";
    std::optional<json> p = UpstreamPodGroupStatusPatch(placed, fresh);
    REQUIRE(p.has_value());
    const json& c = (*p)["status"]["conditions"][0];
    CHECK(c["status"] == "True");
    CHECK(c["reason"] == "Scheduled");
    json current = fresh;
    current["status"]["conditions"] = (*p)["status"]["conditions"];
    CHECK_FALSE(UpstreamPodGroupStatusPatch(Short(), current).has_value());
  }
  SECTION("a failed bind is upstream's SchedulerError") {
    gang::GangStatusUpdate failed = Short();
    failed.reason = gang::GangReason::kBindFailed;
    CHECK((*UpstreamPodGroupStatusPatch(failed, fresh))["status"]["conditions"][0]["reason"] == "SchedulerError");
  }
  SECTION("what Tessel does not honour: tessel.io/Unsupported beside it") {
    gang::GangStatusUpdate u = Short();
    u.unsupported = {"spec.a: no", "spec.b: no"};
    std::optional<json> p = UpstreamPodGroupStatusPatch(u, fresh);
    REQUIRE(p.has_value());
    REQUIRE((*p)["status"]["conditions"].size() == 2);
    const json& c = (*p)["status"]["conditions"][1];
    CHECK(c["type"] == "tessel.io/Unsupported");
    CHECK(c["status"] == "True");
    CHECK(c["reason"] == "NotHonoured");
    CHECK(c["message"] == "spec.a: no; spec.b: no");
  }
}

TEST_CASE("upstream PodGroup status: read, then a strategic merge patch of the v1beta1 status", "[podgroup]") {
  absl::Mutex mu;
  std::vector<json> patches;
  const std::string object_path = "/apis/scheduling.k8s.io/v1beta1/namespaces/ns/podgroups/train";
  const std::string path = object_path + "/status";
  FakeApiServer api([&](const FakeApiServer::Call& call, httplib::Response& res) {
    if (call.line() == "GET " + object_path) {
      res.set_content(R"({"metadata": {"generation": 1}, "status": {}})", "application/json");
      return;
    }
    if (call.line() == "PATCH " + path) {
      absl::MutexLock lock(&mu);
      patches.push_back(json::parse(call.body));
      res.set_content("{}", "application/json");
      return;
    }
    res.status = 404;
  });
  auto client = api.Client();
  const gang::GangId id{.kind = gang::GangKind::kSchedulingPodGroup, .namespace_ = "ns", .name = "train"};
  SECTION("v1beta1: written") {
    PodGroupStatusWriter writer(client.get(), {.scheduling_pod_group_api = "scheduling.k8s.io/v1beta1"});
    writer.GangStatusChanged(id, Short());
    REQUIRE(Eventually([&] {
      absl::MutexLock lock(&mu);
      return patches.size() == 1;
    }));
    CHECK(api.Count("GET " + object_path) == 1);
    absl::MutexLock lock(&mu);
    CHECK(patches[0]["status"]["conditions"][0]["type"] == "PodGroupInitiallyScheduled");
  }
  SECTION("a version without the conditions (v1alpha2), or none discovered: nothing") {
    for (const char* api_version : {"scheduling.k8s.io/v1alpha2", ""}) {
      PodGroupStatusWriter writer(client.get(), {.scheduling_pod_group_api = api_version});
      writer.GangStatusChanged(id, Short());
      absl::SleepFor(absl::Milliseconds(300));
    }
    CHECK(api.calls().empty());
  }
}

}  // namespace podgroup_status_test
}  // namespace tessel::kube
