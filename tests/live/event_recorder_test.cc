// EventRecorder and StatusReporter against a fake API server, and the KeyedQueue under them.
//   - Identical events within the window are one Event whose count ends equal to the number of
//     records (over seeded random bursts); distinct events are distinct Events; none is lost
//     to a flaky server; a server that refuses for good is counted as dropped.
//   - A pod's condition is written once per distinct wish, with the reason from the typed
//     FailureKind; failed writes are retried; a write the server refused is not recorded as
//     written (and counted dropped); a bound or deleted pod is not written.
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "fake_api_server.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/event_recorder.h"
#include "scheduler/kube/keyed_queue.h"
#include "scheduler/kube/status_reporter.h"

namespace tessel::kube {
namespace event_recorder_test {

using nlohmann::json;
using testing::FakeApiServer;
using testing::WaitUntil;

Pod MakePod(const std::string& name) {
  Pod p;
  p.meta.namespace_ = "ns";
  p.meta.name = name;
  p.meta.uid = "uid-" + name;
  return p;
}

const KeyedQueueOptions kFastRetries = {.initial_backoff = absl::Milliseconds(1),
                                        .max_backoff = absl::Milliseconds(4)};

// A server that fails the first `failures` writes with `failure_code`, then accepts.
struct FlakyServer {
  absl::Mutex mu;
  int failures = 0;
  int failure_code = 500;
  // Count written per event name (the last POST or PATCH).
  std::map<std::string, int64_t> counts;
  std::map<std::string, std::string> messages;
  FakeApiServer api{[this](const FakeApiServer::Call& call, httplib::Response& res) {
    absl::MutexLock lock(&mu);
    if (failures != 0) {
      if (failures > 0) --failures;
      res.status = failure_code;
      return;
    }
    if (call.method == "POST") {
      json e = json::parse(call.body);
      counts[e["metadata"]["name"]] = e["count"];
      messages[e["metadata"]["name"]] = e["message"];
      res.status = 201;
    } else if (call.method == "PATCH" && call.path.find("/events/") != std::string::npos) {
      const std::string name = call.path.substr(call.path.rfind('/') + 1);
      counts[name] = json::parse(call.body)["count"];
      res.status = 200;
    } else {
      res.status = 200;  // pods/status
    }
    res.set_content("{}", "application/json");
  }};
  std::unique_ptr<KubeClient> client = api.Client();
};

// A StatusReporter and its EventRecorder on a FlakyServer with fast retries.
struct StatusHarness {
  FlakyServer server;
  EventRecorder events{server.client.get(), {.queue = kFastRetries}};
  StatusReporter reporter{server.client.get(), &events, {.queue = kFastRetries}};
  // Waits until every wanted condition and Event was written (or given up).
  void Drain() {
    WaitUntil([&] { return reporter.pending() == 0 && events.pending() == 0; });
  }
  // The bodies of the status patches sent for pod ns/NAME, in order.
  std::vector<json> StatusPatches(const std::string& name) const {
    std::vector<json> out;
    for (const auto& call : server.api.calls()) {
      if (call.method == "PATCH" && call.path == "/api/v1/namespaces/ns/pods/" + name + "/status") {
        out.push_back(json::parse(call.body));
      }
    }
    return out;
  }
};

TEST_CASE("keyed queue: a burst of one key is one write; a key added while written is written again") {
  absl::Mutex mu;
  int runs = 0;
  absl::Notification release;
  KeyedQueue q("t", {}, [&](const std::string&) {
    {
      absl::MutexLock lock(&mu);
      ++runs;
    }
    release.WaitForNotification();
    return KeyedQueue::Outcome::kDone;
  });
  q.Add("a");
  WaitUntil([&] {
    absl::MutexLock lock(&mu);
    return runs == 1;
  });
  for (int i = 0; i < 100; ++i) q.Add("a");  // while "a" is being processed
  release.Notify();
  WaitUntil([&] { return q.pending() == 0; });
  absl::MutexLock lock(&mu);
  CHECK(runs == 2);
}

TEST_CASE("keyed queue: retries with backoff, gives up after max_attempts and counts it") {
  for (int max_attempts : {1, 2, 5}) {
    std::atomic<int> runs{0};
    KeyedQueue q("t", {.max_attempts = max_attempts, .initial_backoff = absl::Milliseconds(1)},
                 [&](const std::string&) {
                   runs.fetch_add(1);
                   return KeyedQueue::Outcome::kRetry;
                 });
    q.Add("a");
    WaitUntil([&] { return q.dropped() == 1; });
    CHECK(runs.load() == max_attempts);
    CHECK(q.retries() == max_attempts - 1);
  }
}

TEST_CASE("events: identical records in a burst are one Event with the full count") {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    FlakyServer server;
    {
      absl::MutexLock lock(&server.mu);
      server.failures = static_cast<int>(rng() % 4);  // a few 500s on the way
    }
    EventRecorder events(server.client.get(), {.queue = kFastRetries});
    std::map<std::pair<std::string, std::string>, int64_t> want;  // (pod, message) -> records
    const int records = 1 + static_cast<int>(rng() % 60);
    for (int i = 0; i < records; ++i) {
      const std::string pod = "p" + std::to_string(rng() % 3);
      const std::string message = "0/" + std::to_string(rng() % 2) + " nodes are available";
      events.Record(MakePod(pod), "Warning", "FailedScheduling", message);
      ++want[{pod, message}];
    }
    WaitUntil([&] { return events.pending() == 0; });
    CHECK(events.dropped() == 0);
    CHECK(events.created() == static_cast<int64_t>(want.size()));  // one Event per distinct one
    for (const auto& [k, n] : want) {
      CAPTURE(k.first, k.second);
      CHECK(events.WrittenCount("ns/" + k.first, "FailedScheduling", k.second) == n);
    }
    absl::MutexLock lock(&server.mu);
    REQUIRE(server.counts.size() == want.size());
    int64_t total = 0;
    for (const auto& [name, count] : server.counts) total += count;
    CHECK(total == records);  // the server's counts add up to every record
  }
}

TEST_CASE("events: many pods' FailedScheduling all arrive through a flaky server") {
  FlakyServer server;
  {
    absl::MutexLock lock(&server.mu);
    server.failures = 25;
  }
  EventRecorder events(server.client.get(), {.queue = kFastRetries});
  for (int i = 0; i < 300; ++i) {
    events.Record(MakePod("p" + std::to_string(i)), "Warning", "FailedScheduling", "no fit");
  }
  WaitUntil([&] { return events.pending() == 0; });
  CHECK(events.created() == 300);
  CHECK(events.dropped() == 0);
}

TEST_CASE("events: about a cluster-scoped object, in namespace default, correlated like a pod's") {
  FlakyServer server;
  EventRecorder events(server.client.get(), {.queue = kFastRetries});
  const ObjectReference queue{.api_version = "tessel.io/v1alpha1", .kind = "Queue", .name = "new-team",
                              .uid = "uid-q"};
  for (int i = 0; i < 3; ++i) events.Record(queue, "Warning", "NamespaceConflict", "namespace \"b\" ...");
  // A pod of the same name is another object.
  events.Record(MakePod("new-team"), "Warning", "NamespaceConflict", "namespace \"b\" ...");
  WaitUntil([&] { return events.pending() == 0; });
  CHECK(events.created() == 2);
  json posted;
  for (const auto& call : server.api.calls()) {
    if (call.method == "POST" && call.path == "/api/v1/namespaces/default/events") posted = json::parse(call.body);
  }
  REQUIRE(posted.is_object());
  CHECK(posted["metadata"]["namespace"] == "default");
  CHECK(posted["involvedObject"] == json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"},
                                         {"name", "new-team"}, {"uid", "uid-q"}});
  CHECK(posted["type"] == "Warning");
  CHECK(posted["reason"] == "NamespaceConflict");
  absl::MutexLock lock(&server.mu);
  int64_t total = 0;
  for (const auto& [name, count] : server.counts) total += count;
  CHECK(total == 4);  // 3 on the Queue's Event, 1 on the pod's
}

TEST_CASE("events: refused for good is dropped and counted; a forgotten pod is not written") {
  SECTION("403") {
    FlakyServer server;
    {
      absl::MutexLock lock(&server.mu);
      server.failures = -1;  // forever
      server.failure_code = 403;
    }
    EventRecorder events(server.client.get(), {.queue = kFastRetries});
    events.Record(MakePod("p"), "Warning", "FailedScheduling", "no fit");
    WaitUntil([&] { return events.pending() == 0; });
    CHECK(events.dropped() == 1);
    CHECK(events.created() == 0);
  }
  SECTION("not the leader") {
    FlakyServer server;
    EventRecorder events(server.client.get(),
                         {.write_budget = [] { return std::optional<absl::Duration>(); },
                          .queue = kFastRetries});
    events.Record(MakePod("p"), "Warning", "FailedScheduling", "no fit");
    WaitUntil([&] { return events.pending() == 0; });
    CHECK(server.api.calls().empty());
  }
}

TEST_CASE("events: an event recorded just before its pod's deletion is still written") {
  FlakyServer server;
  {
    absl::MutexLock lock(&server.mu);
    server.failures = 3;  // the write is retried: the deletion arrives before it succeeds
    server.failure_code = 500;
  }
  EventRecorder events(server.client.get(), {.queue = kFastRetries});
  events.Record(MakePod("evicted"), "Normal", "GangRolledBack", "rolled back");
  events.ForgetPod("ns/evicted");
  WaitUntil([&] { return events.pending() == 0; });
  CHECK(events.created() == 1);
  CHECK(events.dropped() == 0);
}

TEST_CASE("events: a forgotten pod's event that was never written is pruned after its window") {
  FlakyServer server;
  {
    absl::MutexLock lock(&server.mu);
    server.failures = -1;  // refused for good: the write is given up
    server.failure_code = 403;
  }
  EventRecorder events(server.client.get(), {.window = absl::Milliseconds(1), .queue = kFastRetries});
  events.Record(MakePod("gone"), "Normal", "GangRolledBack", "rolled back");
  WaitUntil([&] { return events.pending() == 0; });
  events.ForgetPod("ns/gone");
  CHECK(events.remembered() == 1);  // unwritten: kept until its window passes
  absl::SleepFor(absl::Milliseconds(5));
  // Records of a live pod until a prune runs (every 1,024 records).
  for (int i = 0; i < 1024; ++i) events.Record(MakePod("live"), "Warning", "FailedScheduling", "no fit");
  CHECK(events.remembered() == 1);  // the live pod's; the forgotten pod's is gone
}

TEST_CASE("status: one condition per distinct wish, reason from the failure kind") {
  StatusHarness h;
  const Pod pod = MakePod("p");
  for (int i = 0; i < 5; ++i) {
    h.reporter.PodUnschedulable(pod, FailureKind::kUnschedulable, "0/2 nodes are available");
  }
  h.Drain();
  CHECK(h.reporter.WrittenCondition("ns/p") == PodCondition{"Unschedulable", "0/2 nodes are available"});
  h.reporter.PodUnschedulable(pod, FailureKind::kBindFailed, "binding rejected: timeout");
  h.Drain();
  CHECK(h.reporter.WrittenCondition("ns/p") == PodCondition{"SchedulerError", "binding rejected: timeout"});
  CHECK(h.server.api.Count("PATCH /api/v1/namespaces/ns/pods/p/status") == 2);
  CHECK(h.events.created() == 2);
  for (const json& patch : h.StatusPatches("p")) {
    CHECK(patch["metadata"]["uid"] == "uid-p");
    CHECK(patch["status"]["conditions"][0]["type"] == "PodScheduled");
    CHECK(patch["status"]["conditions"][0]["status"] == "False");
  }
  CHECK(ConditionReason(FailureKind::kError) == "SchedulerError");
  CHECK(ConditionReason(FailureKind::kQuotaExceeded) == "QuotaExceeded");
}

TEST_CASE("status: the nominated node travels in the same patch, and is cleared with null") {
  StatusHarness h;
  Pod pod = MakePod("p");
  pod.nominated_node_name = "gpu-7";
  h.reporter.PodUnschedulable(pod, FailureKind::kUnschedulable, "0/2 nodes are available. Preempting pods on node gpu-7.");
  h.Drain();
  pod.nominated_node_name.clear();
  h.reporter.PodUnschedulable(pod, FailureKind::kUnschedulable, "0/2 nodes are available");
  h.Drain();
  const std::vector<json> patches = h.StatusPatches("p");
  REQUIRE(patches.size() == 2);
  CHECK(patches[0]["status"]["nominatedNodeName"] == "gpu-7");
  CHECK(patches[1]["status"]["nominatedNodeName"].is_null());
  CHECK(patches[1]["status"].contains("nominatedNodeName"));
}

TEST_CASE("status: a cleared nomination keeps the pod's condition; without one, only the field goes") {
  StatusHarness h;
  Pod reported = MakePod("reported");
  reported.nominated_node_name = "gpu-7";
  h.reporter.PodUnschedulable(reported, FailureKind::kUnschedulable, "0/2 nodes are available. Preempting pods on node gpu-7.");
  h.Drain();
  h.reporter.NominationCleared(reported);
  Pod inherited = MakePod("inherited");  // nominated by an earlier leader: no condition wanted here
  inherited.nominated_node_name = "gpu-3";
  h.reporter.NominationCleared(inherited);
  h.Drain();
  const std::vector<json> r = h.StatusPatches("reported");
  REQUIRE(r.size() == 2);
  CHECK(r[1]["status"]["nominatedNodeName"].is_null());
  CHECK(r[1]["status"]["conditions"][0]["reason"] == "Unschedulable");
  CHECK(r[1]["status"]["conditions"][0]["message"] == r[0]["status"]["conditions"][0]["message"]);
  const std::vector<json> i = h.StatusPatches("inherited");
  REQUIRE(i.size() == 1);
  CHECK(i[0]["status"].contains("nominatedNodeName"));
  CHECK(i[0]["status"]["nominatedNodeName"].is_null());
  CHECK_FALSE(i[0]["status"].contains("conditions"));
  CHECK(i[0]["metadata"]["uid"] == "uid-inherited");
  CHECK(h.events.created() == 1);  // clearing a nomination records no Event
}

TEST_CASE("status: a gated pod shows PodScheduled=False SchedulingGated, without an Event") {
  StatusHarness h;
  const Pod pod = MakePod("p");
  h.reporter.PodSchedulingGated(pod);
  h.reporter.PodSchedulingGated(pod);
  h.Drain();
  CHECK(h.reporter.WrittenCondition("ns/p") ==
        PodCondition{"SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates"});
  CHECK(h.server.api.Count("PATCH /api/v1/namespaces/ns/pods/p/status") == 1);
  CHECK(h.events.created() == 0);
  // Once the gates are gone and it fits nowhere, the reason changes to Unschedulable.
  h.reporter.PodUnschedulable(pod, FailureKind::kUnschedulable, "0/2 nodes are available");
  h.Drain();
  CHECK(h.reporter.WrittenCondition("ns/p") == PodCondition{"Unschedulable", "0/2 nodes are available"});
}

TEST_CASE("status: failed writes are retried; a refused one is not claimed as written") {
  SECTION("500s, then accepted") {
    FlakyServer server;
    {
      absl::MutexLock lock(&server.mu);
      server.failures = 12;  // more than the client's own retries
    }
    EventRecorder events(server.client.get(), {.write_budget = [] { return std::optional<absl::Duration>(); }});
    StatusReporter reporter(server.client.get(), &events, {.queue = kFastRetries});
    reporter.PodUnschedulable(MakePod("p"), FailureKind::kUnschedulable, "no fit");
    WaitUntil([&] { return reporter.pending() == 0; });
    CHECK(reporter.WrittenCondition("ns/p").has_value());
    CHECK(reporter.condition_retries() >= 1);
    CHECK(reporter.conditions_dropped() == 0);
  }
  SECTION("422 forever") {
    FlakyServer server;
    {
      absl::MutexLock lock(&server.mu);
      server.failures = -1;
      server.failure_code = 422;
    }
    EventRecorder events(server.client.get(), {.write_budget = [] { return std::optional<absl::Duration>(); }});
    StatusReporter reporter(server.client.get(), &events, {.queue = kFastRetries});
    reporter.PodUnschedulable(MakePod("p"), FailureKind::kUnschedulable, "no fit");
    WaitUntil([&] { return reporter.pending() == 0; });
    CHECK_FALSE(reporter.WrittenCondition("ns/p").has_value());
    CHECK(reporter.conditions_dropped() == 1);
    // Not claimed: the same wish is tried again on the next attempt of the pod.
    reporter.PodUnschedulable(MakePod("p"), FailureKind::kUnschedulable, "no fit");
    WaitUntil([&] { return reporter.pending() == 0; });
    CHECK(server.api.Count("PATCH /api/v1/namespaces/ns/pods/p/status") == 2);
  }
  SECTION("bound or deleted before the write: nothing written") {
    FlakyServer server;
    EventRecorder events(server.client.get(), {.write_budget = [] { return std::optional<absl::Duration>(); }});
    // Not the leader yet: the wish waits in the record, the write is refused (not claimed).
    std::atomic<bool> leading{false};
    StatusReporter reporter(server.client.get(), &events,
                            {.write_budget = [&]() -> std::optional<absl::Duration> {
                               if (!leading.load()) return std::nullopt;
                               return absl::InfiniteDuration();
                             },
                             .queue = kFastRetries});
    reporter.PodUnschedulable(MakePod("p"), FailureKind::kUnschedulable, "no fit");
    reporter.PodUnschedulable(MakePod("q"), FailureKind::kUnschedulable, "no fit");
    WaitUntil([&] { return reporter.pending() == 0; });
    CHECK_FALSE(reporter.WrittenCondition("ns/p").has_value());
    reporter.Bound("ns/p");
    reporter.Forget("ns/q");
    leading = true;
    reporter.PodUnschedulable(MakePod("r"), FailureKind::kUnschedulable, "no fit");
    WaitUntil([&] { return reporter.pending() == 0; });
    CHECK(server.api.Count("PATCH /api/v1/namespaces/ns/pods/p/status") == 0);
    CHECK(server.api.Count("PATCH /api/v1/namespaces/ns/pods/q/status") == 0);
    CHECK(server.api.Count("PATCH /api/v1/namespaces/ns/pods/r/status") == 1);
  }
}

}  // namespace event_recorder_test
}  // namespace tessel::kube
