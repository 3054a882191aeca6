// The quota objects' feed against a fake API server: an update of a Queue that changes only its
// status (the scheduler's own QueueStatusWriter writes one per busy queue every interval) is
// not delivered, so it neither rebuilds the quota directory nor wakes the pods parked for
// quota; an update of its spec is.
#include <catch2/catch.hpp>

#include <vector>

#include "absl/synchronization/mutex.h"
#include "fake_api_server.h"
#include "nlohmann/json.hpp"
#include "default_scheduler.h"
#include "scheduler/kube/scheduler_feed.h"

namespace tessel::kube {
namespace quota_feed_test {

using nlohmann::json;

json QueueJson(int resource_version, const std::string& gpus, int admitted) {
  return {{"apiVersion", "tessel.io/v1alpha1"},
          {"kind", "Queue"},
          {"metadata",
           {{"name", "team-a"},
            {"uid", "queue-uid"},
            {"resourceVersion", std::to_string(resource_version)},
            {"creationTimestamp", "2026-01-01T00:00:00Z"},
            {"managedFields", json::array({{{"manager", "tessel-scheduler"}, {"operation", "Update"}}})}}},
          {"spec", {{"namespaces", {"a"}}, {"nominalQuota", {{"nvidia.com/gpu", gpus}}}}},
          {"status", {{"admittedPods", admitted}}}};
}

TEST_CASE("quota feed: a Queue's status update is not delivered, a spec update is") {
  const std::string queues = "/apis/tessel.io/v1alpha1/queues";
  absl::Mutex mu;
  bool watched = false;
  // The list holds the Queue at resourceVersion 1; the first watch brings a status update, a
  // spec update (nominal 4 -> 6), and another status update.
  testing::FakeApiServer api([&](const testing::FakeApiServer::Call& call, httplib::Response& res) {
    if (call.params.contains("watch")) {
      bool first = false;
      if (call.path == queues) {
        absl::MutexLock lock(&mu);
        first = !std::exchange(watched, true);
      }
      if (!first) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        res.set_content("", "application/json");
        return;
      }
      std::string stream;
      for (const json& q : {QueueJson(2, "4", 1), QueueJson(3, "6", 1), QueueJson(4, "6", 2)}) {
        stream += json{{"type", "MODIFIED"}, {"object", q}}.dump() + "\n";
      }
      res.set_content(stream, "application/json");
      return;
    }
    json items = json::array();
    if (call.path == queues) items.push_back(QueueJson(1, "4", 0));
    res.set_content(json{{"kind", "List"}, {"metadata", {{"resourceVersion", "1"}}}, {"items", items}}.dump(),
                    "application/json");
  });
  auto client = api.Client();
  RealClock clock;
  DefaultScheduler made(&clock);
  Scheduler& s = *made.s;
  // Called for every Queue the informer hands over, before it is delivered: the directory seen
  // at the k-th call is the one the (k-1)-th object left.
  std::vector<std::shared_ptr<const QueueDirectory>> seen;
  SchedulerFeed feed(client.get(), &s, {.on_queue_object = [&](const json&) {
                       absl::MutexLock lock(&mu);
                       seen.push_back(s.Queues());
                     }});
  feed.Start();
  REQUIRE(feed.WaitForSync(absl::Seconds(30)));
  testing::WaitUntil([&] {
    absl::MutexLock lock(&mu);
    return seen.size() == 4;
  });
  feed.Stop();
  auto nominal = [](const std::shared_ptr<const QueueDirectory>& d) {
    const Queue* q = d == nullptr ? nullptr : d->Find("team-a");
    return q == nullptr ? int64_t{-1} : q->nominal.Get("nvidia.com/gpu");
  };
  CHECK(nominal(seen[1]) == 4000);     // the listed Queue
  CHECK(seen[2] == seen[1]);           // the status update left the directory as it was
  CHECK(nominal(seen[3]) == 6000);     // the spec update was delivered
  CHECK(nominal(s.Queues()) == 6000);  // and the last status update kept it
}

}  // namespace quota_feed_test
}  // namespace tessel::kube
