// QueueStatusWriter against a fake API server: one merge PATCH of the status subresource per
// queue whose status changed, the counts, quantities and conditions as docs/quota.md lists them,
// transition times kept while a condition stays, the wait rewritten only every `refresh`, an
// Queue that never decoded reported Active=False, one that stopped decoding Active=True with
// reason InvalidSpec, a flavor it lists that does not exist FlavorsReady=False, a resource that
// left removed, nothing while not leading; Cohorts' statuses, and a queue below a cohort that
// breaks the tree reported Active=False with reason CohortInvalid.
#include <catch2/catch.hpp>

#include "absl/synchronization/mutex.h"
#include "fake_api_server.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/queue_status.h"

namespace tessel::kube {
namespace queue_status_test {

using nlohmann::json;
using testing::FakeApiServer;

constexpr std::string_view kPrefix = "PATCH /apis/tessel.io/v1alpha1/queues/";
constexpr std::string_view kCohortPrefix = "PATCH /apis/tessel.io/v1alpha1/cohorts/";

struct Fixture {
  absl::Mutex mu;
  std::map<std::string, std::vector<json>> patches;  // by queue name
  FakeApiServer api{[this](const FakeApiServer::Call& call, httplib::Response& res) {
    const std::string line = call.line();
    if (line.rfind(kPrefix, 0) == 0 && line.ends_with("/status")) {
      const std::string name = line.substr(kPrefix.size(), line.size() - kPrefix.size() - 7);
      if (name == "gone") {
        res.status = 404;
        return;
      }
      absl::MutexLock lock(&mu);
      patches[name].push_back(json::parse(call.body));
      res.set_content("{}", "application/json");
      return;
    }
    if (line.rfind(kCohortPrefix, 0) == 0 && line.ends_with("/status")) {
      const std::string name = line.substr(kCohortPrefix.size(), line.size() - kCohortPrefix.size() - 7);
      absl::MutexLock lock(&mu);
      patches["cohorts/" + name].push_back(json::parse(call.body));
      res.set_content("{}", "application/json");
      return;
    }
    res.status = 404;
  }};
  std::unique_ptr<KubeClient> client = api.Client();
  ManualClock clock{absl::FromUnixSeconds(1'700'000'000)};
  QueueStatusView view;
  bool leading = true;
  QueueStatusWriter writer{client.get(), [this] { return view; },
                           {.write_budget = [this]() -> std::optional<absl::Duration> {
                              if (!leading) return std::nullopt;
                              return absl::InfiniteDuration();
                            },
                            .refresh = absl::Seconds(60),
                            .clock = &clock}};

  json Last(const std::string& name) {
    absl::MutexLock lock(&mu);
    REQUIRE(patches.contains(name));
    return patches[name].back()["status"];
  }
  size_t Count(const std::string& name) {
    absl::MutexLock lock(&mu);
    return patches.contains(name) ? patches[name].size() : 0;
  }
};

Resources Gpus(int64_t milli) {
  Resources r;
  r.Set(kNvidiaGpu, milli);
  return r;
}

json Condition(const json& status, const std::string& type) {
  for (const json& c : status["conditions"]) {
    if (c["type"] == type) return c;
  }
  FAIL("no condition " << type << " in " << status.dump());
  return {};
}

TEST_CASE("Queue status: counts, quantities, wait and conditions, written when they change") {
  Fixture f;
  const absl::Time created = f.clock.Now() - absl::Seconds(90);
  f.view.reports = {QueueReport{.name = "team-a",
                                .cohort = "research",
                                .nominal = Gpus(4000),
                                .usage = Gpus(5500),
                                .borrowed = Gpus(1500),
                                .pending_pods = 2,
                                .admitted_pods = 5,
                                .oldest_pending = created},
                    QueueReport{.name = "team-b", .cohort = "research", .nominal = Gpus(8000),
                                .usage = Gpus(2000), .lent = Gpus(1500), .admitted_pods = 1}};
  REQUIRE(f.writer.WriteOnce() == 2);
  json a = f.Last("team-a");
  CHECK(a["pendingPods"] == 2);
  CHECK(a["admittedPods"] == 5);
  CHECK(a["usage"] == json{{"nvidia.com/gpu", "5500m"}});
  CHECK(a["borrowed"] == json{{"nvidia.com/gpu", "1500m"}});
  CHECK(a["lent"] == json{{"nvidia.com/gpu", "0"}});
  CHECK(a["oldestPendingSince"] == "2023-11-14T22:11:50Z");
  CHECK(a["oldestPendingWaitSeconds"] == 90);
  CHECK(Condition(a, "Active")["status"] == "True");
  CHECK(Condition(a, "Conflict")["status"] == "False");
  json b = f.Last("team-b");
  CHECK(b["lent"] == json{{"nvidia.com/gpu", "1500m"}});
  CHECK(b["oldestPendingSince"].is_null());  // removes an earlier value

  SECTION("unchanged: nothing written until the wait is due for a refresh") {
    f.clock.Advance(absl::Seconds(30));
    CHECK(f.writer.WriteOnce() == 0);
    f.clock.Advance(absl::Seconds(30));
    CHECK(f.writer.WriteOnce() == 1);  // team-a waits; team-b has nothing waiting
    CHECK(f.Last("team-a")["oldestPendingWaitSeconds"] == 150);
    CHECK(f.Count("team-b") == 1);
  }
  SECTION("a conflict: Conflict=True with the message, Active keeps its transition time") {
    const std::string active_since = Condition(a, "Active")["lastTransitionTime"];
    f.clock.Advance(absl::Seconds(5));
    f.view.conflicts = {{.namespace_ = "ml", .kept_by = "team-b", .refused = "team-a"}};
    REQUIRE(f.writer.WriteOnce() == 1);
    json now = f.Last("team-a");
    CHECK(Condition(now, "Conflict")["status"] == "True");
    CHECK(Condition(now, "Conflict")["reason"] == "NamespaceConflict");
    CHECK(Condition(now, "Conflict")["message"] == f.view.conflicts[0].Message());
    CHECK(Condition(now, "Conflict")["lastTransitionTime"] == "2023-11-14T22:13:25Z");
    CHECK(Condition(now, "Active")["lastTransitionTime"] == active_since);
  }
  SECTION("a resource no longer reported is removed") {
    f.view.reports[1].nominal = Resources();
    f.view.reports[1].usage = Resources();
    f.view.reports[1].lent = Resources();
    REQUIRE(f.writer.WriteOnce() == 1);
    json now = f.Last("team-b");
    CHECK(now["usage"] == json{{"nvidia.com/gpu", nullptr}});
    CHECK(now["lent"] == json{{"nvidia.com/gpu", nullptr}});
  }
  SECTION("an ignored Queue: Active=False with the decode error") {
    f.view.invalid = {{"team-c", "Queue team-c: spec.weight: must be positive; its pods wait until it decodes"}};
    REQUIRE(f.writer.WriteOnce() == 1);
    json c = f.Last("team-c");
    CHECK(Condition(c, "Active")["status"] == "False");
    CHECK(Condition(c, "Active")["reason"] == "InvalidSpec");
    CHECK(Condition(c, "Active")["message"] == f.view.invalid["team-c"]);
    CHECK_FALSE(c.contains("pendingPods"));
  }
  SECTION("a Queue that stopped decoding: its last valid version reported, Active=True InvalidSpec") {
    f.view.invalid = {{"team-a", "Queue team-a: spec.weight: must be positive; its last valid version stays in force"}};
    REQUIRE(f.writer.WriteOnce() == 1);
    json a = f.Last("team-a");
    CHECK(a["pendingPods"] == 2);
    CHECK(Condition(a, "Active")["status"] == "True");
    CHECK(Condition(a, "Active")["reason"] == "InvalidSpec");
    CHECK(Condition(a, "Active")["message"] == f.view.invalid["team-a"]);
  }
  SECTION("a flavored Queue naming a flavor that does not exist, or does not decode: FlavorsReady=False") {
    Queue q;
    q.meta.name = "team-a";
    q.resource_groups = {ResourceGroup{.covered = {"nvidia.com/gpu"}, .flavors = {"reserved", "spot", "gone"}}};
    ResourceFlavor reserved;
    reserved.meta.name = "reserved";
    auto directory = std::make_shared<QueueDirectory>();
    REQUIRE(directory->Set({q}, {}, FlavorMap{{"reserved", reserved}}).ok());
    f.view.directory = directory;
    f.view.invalid_flavors = {{"spot", "ResourceFlavor spot: spec.nodeTaints[0].effect: x; no node is in it until it decodes"}};
    REQUIRE(f.writer.WriteOnce() == 1);
    json a = f.Last("team-a");
    CHECK(Condition(a, "FlavorsReady")["status"] == "False");
    CHECK(Condition(a, "FlavorsReady")["reason"] == "FlavorNotFound");
    CHECK(Condition(a, "FlavorsReady")["message"] ==
          "ResourceFlavor gone does not exist: the queue's quota in it cannot be used; ResourceFlavor spot: "
          "spec.nodeTaints[0].effect: x; no node is in it until it decodes");
    f.view.invalid_flavors.clear();
    FlavorMap all{{"reserved", reserved}, {"spot", reserved}, {"gone", reserved}};
    auto fixed = std::make_shared<QueueDirectory>();
    REQUIRE(fixed->Set({q}, {}, all).ok());
    f.view.directory = fixed;
    REQUIRE(f.writer.WriteOnce() == 1);
    CHECK(Condition(f.Last("team-a"), "FlavorsReady")["status"] == "True");
    const json team_b = f.Last("team-b");  // (a range-for over a temporary's member would dangle)
    for (const json& c : team_b["conditions"]) CHECK(c["type"] != "FlavorsReady");  // flat
  }
  SECTION("not leading: nothing is written") {
    f.leading = false;
    f.view.reports[0].pending_pods = 3;
    CHECK(f.writer.WriteOnce() == 0);
    f.leading = true;
    CHECK(f.writer.WriteOnce() == 1);
    CHECK(f.Last("team-a")["pendingPods"] == 3);
  }
  SECTION("a Queue deleted meanwhile (404) is not counted as written") {
    f.view.reports.push_back(QueueReport{.name = "gone"});
    CHECK(f.writer.WriteOnce() == 0);
  }
}

TEST_CASE("Cohort status: the subtree's quota, usage, borrowing and share; a broken tree is reported on "
          "the cohort and on the queues below it") {
  Fixture f;
  Cohort org, dept;
  org.meta.name = "org";
  dept.meta.name = "dept";
  dept.parent = "org";
  dept.nominal = Gpus(4000);
  Queue team;
  team.meta.name = "team";
  team.cohort = "dept";
  team.nominal = Gpus(2000);
  auto directory = std::make_shared<QueueDirectory>();
  REQUIRE(directory->Set({team}, {}, {}, {}, CohortObjects{.cohorts = {org, dept}}).ok());
  f.view.directory = directory;
  QueueUsage usage{{"team", Gpus(7000)}};
  f.view.reports = ReportQueues(*directory, usage, {});
  f.view.cohorts = ReportCohorts(*directory, usage);
  REQUIRE(f.writer.WriteOnce() == 3);  // team, org, dept
  json d = f.Last("cohorts/dept");
  CHECK(d["subtreeQuota"] == json{{"nvidia.com/gpu", "6"}});
  CHECK(d["usage"] == json{{"nvidia.com/gpu", "7"}});
  CHECK(d["borrowed"] == json{{"nvidia.com/gpu", "1"}});
  CHECK(d["path"] == "org/dept");
  CHECK(Condition(d, "Active")["status"] == "True");
  CHECK(Condition(f.Last("team"), "Active")["status"] == "True");

  // org names dept as its parent: a cycle. Both cohorts and the queue say so.
  org.parent = "dept";
  REQUIRE(directory->Set({team}, {}, {}, {}, CohortObjects{.cohorts = {org, dept}}).ok());
  f.view.reports = ReportQueues(*directory, usage, {});
  f.view.cohorts = ReportCohorts(*directory, usage);
  REQUIRE(f.writer.WriteOnce() == 3);
  json broken = Condition(f.Last("cohorts/org"), "Active");
  CHECK(broken["status"] == "False");
  CHECK(broken["reason"] == "InvalidTree");
  CHECK(broken["message"] == "Cohort org: spec.parent: the cohorts' parents form a cycle (org -> dept -> org); "
                             "the queues below it hold their pods");
  json held = Condition(f.Last("team"), "Active");
  CHECK(held["status"] == "False");
  CHECK(held["reason"] == "CohortInvalid");
}

TEST_CASE("Cohort status: with usage decay on, a cohort's decayed usage is its queues' below it, at "
          "every level") {
  Fixture f;
  Cohort org, dept_a, dept_b;
  org.meta.name = "org";
  dept_a.meta.name = "dept-a";
  dept_a.parent = "org";
  dept_b.meta.name = "dept-b";
  dept_b.parent = "org";
  auto queue = [](std::string name, std::string cohort) {
    Queue q;
    q.meta.name = std::move(name);
    q.cohort = std::move(cohort);
    q.nominal = Gpus(4000);
    return q;
  };
  const std::vector<Queue> queues = {queue("a1", "dept-a"), queue("a2", "dept-a"), queue("b1", "dept-b")};
  auto directory = std::make_shared<QueueDirectory>();
  REQUIRE(directory->Set(queues, {}, {}, {}, CohortObjects{.cohorts = {org, dept_a, dept_b}}).ok());
  f.view.directory = directory;
  f.view.reports = ReportQueues(*directory, {}, {});
  f.view.cohorts = ReportCohorts(*directory, {});
  const absl::Time computed = absl::FromUnixSeconds(1'700'000'000);
  f.view.decayed = {{"a1", DecayedUsageRecord{Gpus(1500), computed}},
                    {"a2", DecayedUsageRecord{Gpus(250), computed}},
                    {"b1", DecayedUsageRecord{Gpus(3000), computed}}};
  REQUIRE(f.writer.WriteOnce() == 6);  // 3 queues, 3 cohorts
  auto decayed = [&](const std::string& cohort) { return f.Last("cohorts/" + cohort)["fairSharing"]["decayedUsage"]; };
  CHECK(decayed("dept-a") == json{{"nvidia.com/gpu", "1750m"}});
  CHECK(decayed("dept-b") == json{{"nvidia.com/gpu", "3"}});
  CHECK(decayed("org") == json{{"nvidia.com/gpu", "4750m"}});
  CHECK(f.Last("cohorts/org")["fairSharing"]["decayedUsageComputedAt"] == "2023-11-14T22:13:20Z");
  // Off: no fairSharing on a cohort.
  Fixture off;
  off.view = f.view;
  off.view.decayed.clear();
  REQUIRE(off.writer.WriteOnce() == 6);
  CHECK_FALSE(off.Last("cohorts/org").contains("fairSharing"));
}

}  // namespace queue_status_test
}  // namespace tessel::kube

namespace tessel::kube {
namespace queue_status_test {

TEST_CASE("Queue status: the decayed usage is written when it changes and reads back as it was") {
  Fixture f;
  f.view.reports = {QueueReport{.name = "team-a", .cohort = "research", .nominal = Gpus(4000),
                                .usage = Gpus(6000), .borrowed = Gpus(2000)}};
  const absl::Time computed = f.clock.Now();
  f.view.decayed = {{"team-a", DecayedUsageRecord{Gpus(5625), computed}}};
  REQUIRE(f.writer.WriteOnce() == 1);
  json a = f.Last("team-a");
  CHECK(a["fairSharing"] == json{{"decayedUsage", {{"nvidia.com/gpu", "5625m"}}},
                                 {"decayedUsageComputedAt", "2023-11-14T22:13:20Z"}});
  // A restarted scheduler reads back what was written.
  absl::StatusOr<std::optional<DecayedUsageRecord>> read = ReadDecayedUsageStatus(
      json{{"kind", "Queue"}, {"metadata", {{"name", "team-a"}}}, {"status", a}});
  REQUIRE(read.ok());
  REQUIRE(read->has_value());
  CHECK(**read == f.view.decayed["team-a"]);

  // Only its time changed: not rewritten. The usage changed: rewritten, a resource that left
  // removed.
  f.clock.Advance(absl::Seconds(10));
  f.view.decayed["team-a"].computed_at = f.clock.Now();
  CHECK(f.writer.WriteOnce() == 0);
  Resources more = Gpus(5700);
  more.Set("cpu", 2000);
  f.view.decayed["team-a"].decayed = more;
  REQUIRE(f.writer.WriteOnce() == 1);
  CHECK(f.Last("team-a")["fairSharing"]["decayedUsage"] == json{{"cpu", "2"}, {"nvidia.com/gpu", "5700m"}});
  f.view.decayed["team-a"].decayed = Gpus(5700);
  REQUIRE(f.writer.WriteOnce() == 1);
  CHECK(f.Last("team-a")["fairSharing"]["decayedUsage"] == json{{"cpu", nullptr}, {"nvidia.com/gpu", "5700m"}});
  CHECK(f.Last("team-a")["fairSharing"]["decayedUsageComputedAt"] == "2023-11-14T22:13:30Z");
}

}  // namespace queue_status_test
}  // namespace tessel::kube
