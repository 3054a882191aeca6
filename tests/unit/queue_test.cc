// The scheduling queue: order, backoff, parking unschedulable pods until a helpful event.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <thread>

#include "scheduler/testing/builders.h"
#include "plugins/priority_sort/priority_sort.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/queue/scheduling_queue.h"

namespace tessel {
namespace queue_test {

using testing::PodBuilder;

SchedulingQueue::Less PrioritySortLess() {
  static priority_sort::PrioritySort sort;
  return [](const QueuedPodInfo& a, const QueuedPodInfo& b) { return sort.Less(a, b); };
}

PodRef P(std::string name, int32_t prio, int64_t created, std::string ns = "default") {
  return std::make_shared<const Pod>(PodBuilder(std::move(name), std::move(ns)).Priority(prio).Created(created).Build());
}

std::vector<std::string> Drain(SchedulingQueue& q) {
  std::vector<std::string> out;
  while (auto p = q.Pop()) out.push_back(p->info.pod->Key());
  return out;
}

TEST_CASE("pods pop by priority, then creation time, then namespace/name", "[queue]") {
  ManualClock clock;
  SchedulingQueue q(&clock, PrioritySortLess());
  q.Add(P("old-low", 0, 1));
  q.Add(P("new-high", 100, 50));
  q.Add(P("old-high", 100, 10));
  q.Add(P("b", 0, 5, "ns2"));
  q.Add(P("a", 0, 5, "ns2"));
  q.Add(P("z", 0, 5, "ns1"));
  q.Add(P("negative", -5, 0));
  CHECK(Drain(q) == std::vector<std::string>{"default/old-high", "default/new-high", "default/old-low",
                                             "ns1/z", "ns2/a", "ns2/b", "default/negative"});
}

TEST_CASE("a chooser picks among the heads of groups; each group keeps the QueueSort order", "[queue]") {
  ManualClock clock;
  std::vector<std::vector<std::string>> offered;  // the heads each pop was offered
  NextPodChoice next{
      .group_of =
          [](const Pod& pod) {
            auto label = pod.meta.labels.find("group");
            return label != pod.meta.labels.end() ? label->second : pod.meta.namespace_;
          },
      .choose =
          [&offered](std::span<const QueuedPodInfo* const> heads) {
            offered.emplace_back();
            size_t pick = 0;  // namespace "vip" first, else the QueueSort order
            for (size_t i = 0; i < heads.size(); ++i) {
              offered.back().push_back(heads[i]->pod->Key());
              if (heads[i]->pod->meta.namespace_ == "vip" && heads[pick]->pod->meta.namespace_ != "vip") pick = i;
            }
            return pick;
          }};
  SchedulingQueue q(&clock, PrioritySortLess(), QueueOptions{}, next);
  q.Add(P("a1", 0, 1, "a"));
  q.Add(P("a0", 10, 5, "a"));
  q.Add(P("v1", 0, 9, "vip"));
  q.Add(P("v0", 0, 8, "vip"));
  q.Add(P("b0", 0, 2, "b"));
  CHECK(q.Stats().active == 5);
  CHECK(Drain(q) == std::vector<std::string>{"vip/v0", "vip/v1", "a/a0", "a/a1", "b/b0"});
  // Heads in the QueueSort order; a group leaves when it is empty; one group left: no choice asked.
  REQUIRE(offered.size() == 4);
  CHECK(offered[0] == std::vector<std::string>{"a/a0", "b/b0", "vip/v0"});
  CHECK(offered[1] == std::vector<std::string>{"a/a0", "b/b0", "vip/v1"});
  CHECK(offered[2] == std::vector<std::string>{"a/a0", "b/b0"});
  CHECK(offered[3] == std::vector<std::string>{"a/a1", "b/b0"});
  CHECK(q.Stats().active == 0);

  // A pod whose update moves it to another group is found there (and counted once).
  q.Add(P("m", 0, 1, "a"));
  q.Add(P("n", 0, 2, "a"));
  q.Update(std::make_shared<const Pod>(PodBuilder("m", "a").Priority(0).Created(1).Label("group", "vip").Build()));
  CHECK(q.Stats().active == 2);
  offered.clear();
  CHECK(q.Pop()->info.pod->Key() == "a/m");
  CHECK(offered == std::vector<std::vector<std::string>>{{"a/m", "a/n"}});  // two groups now
  q.Delete("a/n");
  CHECK(q.Stats().active == 0);
  CHECK_FALSE(q.Pop().has_value());
}

TEST_CASE("unschedulable pods wait for an event they registered for", "[queue]") {
  ManualClock clock;
  SchedulingQueue q(&clock, PrioritySortLess(),
                    QueueOptions{.initial_backoff = absl::Seconds(1), .max_backoff = absl::Seconds(10)});
  q.Add(P("p", 0, 0));
  auto popped = q.Pop();
  REQUIRE(popped.has_value());
  q.AddUnschedulable(popped->info, popped->cycle, kNodeAdd);
  CHECK(q.Stats().unschedulable == 1);
  CHECK_FALSE(q.Pop().has_value());

  q.OnClusterEvent(kAssignedPodAdd);  // cannot help this pod
  CHECK(q.Stats().unschedulable == 1);

  q.OnClusterEvent(kNodeAdd);  // can: the pod backs off first (1 attempt -> 1 s)
  CHECK(q.Stats().unschedulable == 0);
  CHECK(q.Stats().backoff == 1);
  CHECK_FALSE(q.Pop().has_value());
  clock.Advance(absl::Seconds(1));
  auto again = q.Pop();
  REQUIRE(again.has_value());
  CHECK(again->info.attempts == 2);
}

TEST_CASE("an event during the attempt sends the pod to backoff, not to the parking lot", "[queue]") {
  ManualClock clock;
  SchedulingQueue q(&clock, PrioritySortLess());
  q.Add(P("p", 0, 0));
  auto popped = q.Pop();
  q.OnClusterEvent(kNodeAdd);  // arrives while the pod is being scheduled
  q.AddUnschedulable(popped->info, popped->cycle, kNodeAdd);
  CHECK(q.Stats().unschedulable == 0);
  CHECK(q.Stats().backoff == 1);
}

TEST_CASE("backoff doubles per attempt up to the maximum", "[queue]") {
  ManualClock clock;
  SchedulingQueue q(&clock, PrioritySortLess(),
                    QueueOptions{.initial_backoff = absl::Seconds(1), .max_backoff = absl::Seconds(4)});
  q.Add(P("p", 0, 0));
  const absl::Duration want[] = {absl::Seconds(1), absl::Seconds(2), absl::Seconds(4), absl::Seconds(4)};
  for (absl::Duration d : want) {
    auto popped = q.Pop();
    REQUIRE(popped.has_value());
    const absl::Time start = clock.Now();
    q.AddBackoff(popped->info);
    REQUIRE(q.NextBackoffExpiry().has_value());
    CHECK(*q.NextBackoffExpiry() - start == d);
    clock.Advance(d);
  }
}

TEST_CASE("unschedulable pods are retried after the maximum wait", "[queue]") {
  ManualClock clock;
  SchedulingQueue q(&clock, PrioritySortLess(), QueueOptions{.max_unschedulable_wait = absl::Minutes(5)});
  q.Add(P("p", 0, 0));
  auto popped = q.Pop();
  const absl::Time parked = clock.Now();
  q.AddUnschedulable(popped->info, popped->cycle, kNodeAdd);
  // A time the bench's clock can advance to, as to a backoff's end.
  REQUIRE(q.NextUnschedulableRetry().has_value());
  CHECK(*q.NextUnschedulableRetry() - parked == absl::Minutes(5));
  CHECK_FALSE(q.NextBackoffExpiry().has_value());
  clock.Advance(absl::Minutes(4));
  CHECK_FALSE(q.Pop().has_value());
  clock.Advance(absl::Minutes(1));
  CHECK(q.Pop().has_value());
  CHECK_FALSE(q.NextUnschedulableRetry().has_value());
}

TEST_CASE("updates and deletes", "[queue]") {
  ManualClock clock;
  SchedulingQueue q(&clock, PrioritySortLess());
  q.Add(P("a", 0, 0));
  q.Add(P("b", 0, 1));
  q.Update(P("b", 10, 1));  // raised priority reorders the active queue
  q.Delete("default/a");
  CHECK(Drain(q) == std::vector<std::string>{"default/b"});

  q.Add(P("c", 0, 0));
  auto popped = q.Pop();
  q.AddUnschedulable(popped->info, popped->cycle, kNodeAdd);
  Pod status_write = *P("c", 0, 0);
  status_write.meta.resource_version = "2";
  q.Update(std::make_shared<const Pod>(status_write));  // its own status write: stays parked
  CHECK(q.Stats().unschedulable == 1);
  q.Add(std::make_shared<const Pod>(status_write));  // a relist of the same object: the same
  CHECK(q.Stats().unschedulable == 1);
  q.Update(P("c", 5, 0));  // the spec changed: worth another try
  CHECK(q.Stats().unschedulable == 0);
}

TEST_CASE("a new UID under a queued name is a new pod", "[queue]") {
  ManualClock clock;
  SchedulingQueue q(&clock, PrioritySortLess());
  Pod old_pod = *P("a", 0, 0);
  old_pod.meta.uid = "u1";
  q.Add(std::make_shared<const Pod>(old_pod));
  auto popped = q.Pop();
  REQUIRE(popped.has_value());
  SECTION("in flight: the old pod's requeue is dropped, the new pod is queued") {
    Pod new_pod = old_pod;
    new_pod.meta.uid = "u2";
    CHECK(q.Add(std::make_shared<const Pod>(new_pod)) == SchedulingQueue::AddResult::kQueued);
    CHECK(q.Ended("default/a", "u1"));
    q.AddBackoff(popped->info);  // the old pod's cycle failed
    auto next = q.Pop();
    REQUIRE(next.has_value());
    CHECK(next->info.pod->meta.uid == "u2");
    CHECK(next->info.attempts == 1);
  }
  SECTION("in flight: its own update is kept for the requeue, not queued") {
    Pod newer = old_pod;
    newer.meta.labels["x"] = "y";
    CHECK(q.Add(std::make_shared<const Pod>(newer)) == SchedulingQueue::AddResult::kInFlight);
    CHECK_FALSE(q.Contains("default/a"));
    q.AddUnschedulable(popped->info, popped->cycle, kNodeAdd);
    CHECK(q.Contains("default/a"));
    q.OnClusterEvent(kNodeAdd);
    clock.Advance(absl::Seconds(10));
    auto next = q.Pop();
    REQUIRE(next.has_value());
    CHECK(next->info.pod->meta.labels.at("x") == "y");
  }
  SECTION("in flight: an update of what scheduling reads sends it back with no cluster event") {
    // (Before, a label written while the pod was being tried was kept, but the pod stayed parked
    // until its retry period.)
    Pod newer = old_pod;
    newer.meta.labels["x"] = "y";
    CHECK(q.Add(std::make_shared<const Pod>(newer)) == SchedulingQueue::AddResult::kInFlight);
    q.AddUnschedulable(popped->info, popped->cycle, kNodeAdd);
    clock.Advance(absl::Seconds(10));
    auto next = q.Pop();
    REQUIRE(next.has_value());
    CHECK(next->info.pod->meta.labels.at("x") == "y");
  }
  SECTION("in flight: a copy that changes nothing scheduling reads leaves it parked") {
    Pod newer = old_pod;
    newer.meta.resource_version = "2";
    CHECK(q.Add(std::make_shared<const Pod>(newer)) == SchedulingQueue::AddResult::kInFlight);
    q.AddUnschedulable(popped->info, popped->cycle, kNodeAdd);
    clock.Advance(absl::Seconds(10));
    CHECK_FALSE(q.Pop().has_value());
  }
  SECTION("deleted in flight: the requeue is dropped") {
    q.Delete("default/a", "u1");
    q.AddUnschedulable(popped->info, popped->cycle, kNodeAdd);
    CHECK_FALSE(q.Contains("default/a"));
    CHECK(q.InFlightCount() == 0);
  }
}

TEST_CASE("cluster events move exactly the parked pods that registered them", "[queue]") {
  // A model: pods parked with random masks; after each random event, the parked set is the
  // model's. Seeded families, so that the index can never drift from a full scan.
  constexpr uint32_t kEvents[] = {kNodeAdd, kNodeUpdate, kAssignedPodDelete, kAssignedPodAdd,
                                  kUnassignedPodAdd, kCustomObjectChange};
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    auto roll = [&](uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng); };
    ManualClock clock;
    SchedulingQueue q(&clock, PrioritySortLess(), QueueOptions{.max_unschedulable_wait = absl::Hours(24)});
    std::map<std::string, uint32_t> parked;  // the model
    for (int step = 0; step < 60; ++step) {
      if (roll(2) == 0) {
        const std::string name = "p" + std::to_string(roll(20));
        if (q.Contains("default/" + name)) continue;
        q.Add(P(name, 0, 0));
        auto popped = q.Pop();
        REQUIRE(popped.has_value());
        uint32_t mask = roll(8) == 0 ? uint32_t{kAllEvents} : 0u;
        for (uint32_t e : kEvents) mask |= roll(3) == 0 ? e : 0u;
        if (mask == 0) mask = kNodeAdd;
        // A cycle number no event follows: the pod parks.
        q.AddUnschedulable(popped->info, popped->cycle + 1'000'000, mask);
        parked[popped->info.pod->Key()] = mask;
      } else {
        const uint32_t event = kEvents[roll(6)];
        q.OnClusterEvent(event);
        for (auto it = parked.begin(); it != parked.end();) {
          it = (it->second & event) != 0 ? parked.erase(it) : std::next(it);
        }
        // Moved pods go to backoff; pop them all (they are retried, then dropped here).
        clock.Advance(absl::Seconds(10));
        while (auto p = q.Pop()) q.Done(p->info.pod->Key(), p->info.pod->meta.uid);
      }
      std::vector<std::string> want;
      for (const auto& [key, mask] : parked) want.push_back(key);
      REQUIRE(q.UnschedulableKeys() == want);
      REQUIRE(q.Stats().unschedulable == want.size());
    }
  }
}

TEST_CASE("queueing hints by room: a pod leaving helps only the parked pods its room holds",
          "[queue]") {
  ManualClock clock;
  SchedulingQueue q(&clock, PrioritySortLess(), QueueOptions{.max_unschedulable_wait = absl::Hours(24)});
  auto park = [&](const std::string& name, const std::string& requests, uint32_t events, uint32_t hinted) {
    q.Add(std::make_shared<const Pod>(PodBuilder(name).Requests(requests).Build()));
    auto popped = q.Pop();
    REQUIRE(popped.has_value());
    q.AddUnschedulable(popped->info, popped->cycle + 1'000'000, events, hinted);
  };
  const uint32_t fit = kNodeAdd | kNodeUpdate | kAssignedPodDelete;
  park("eight", "cpu:1,nvidia.com/gpu:8", fit, kAssignedPodDelete);
  park("two", "cpu:1,nvidia.com/gpu:2", fit, kAssignedPodDelete);
  park("quota", "cpu:1,nvidia.com/gpu:8", fit | kCustomObjectChange, 0);  // also a quota rejection
  park("cpu", "cpu:40", fit, kAssignedPodDelete);
  Resources room;
  room.milli_cpu = 8000;
  room.memory = int64_t{64} << 30;
  room.pods = 10;
  room.Set(kNvidiaGpu, 4000);
  q.OnClusterEvent(kAssignedPodDelete, &room);
  CHECK(q.UnschedulableKeys() == std::vector<std::string>{"default/cpu", "default/eight"});
  CHECK(q.hint_skips() == 2);
  // Another kind of event, or one whose room is unknown, moves them all.
  q.OnClusterEvent(kAssignedPodDelete);
  CHECK(q.UnschedulableKeys().empty());
}

TEST_CASE("queueing hints by room: what the rejecting plugins need, not the requests, is asked of the room",
          "[queue]") {
  // GpuShare's need is in GPU room units (scheduler/gpu/gpu_devices.h: AddGpuNeed), while the
  // pod's request is nvidia.com/gpu, which NodeResourcesFit ignores in the default profile.
  ManualClock clock;
  SchedulingQueue q(&clock, PrioritySortLess(), QueueOptions{.max_unschedulable_wait = absl::Hours(24)});
  q.Add(std::make_shared<const Pod>(PodBuilder("two").Requests("cpu:1,nvidia.com/gpu:2").Build()));
  auto popped = q.Pop();
  REQUIRE(popped.has_value());
  Resources need;
  need.Set(gpu::kRoomGpuUnits, 2000);
  q.AddUnschedulable(popped->info, popped->cycle + 1'000'000, kNodeAdd | kAssignedPodDelete, kAssignedPodDelete, need);
  Resources room;
  room.milli_cpu = 8000;
  room.Set(kNvidiaGpu, 8000);  // the count says 8 free: not what is asked
  room.Set(gpu::kRoomGpuUnits, 1000);
  q.OnClusterEvent(kAssignedPodDelete, &room);
  CHECK(q.Stats().unschedulable == 1);
  room.Set(gpu::kRoomGpuUnits, 2000);
  q.OnClusterEvent(kAssignedPodDelete, &room);
  CHECK(q.Stats().unschedulable == 0);
}

TEST_CASE("queueing hints by room hold for events during the attempt too", "[queue]") {
  // A pod rejected while pods left nodes: retried only if a room it could use was left, or an
  // event came that its hints cannot judge; else it parks (a backlog under churn would spin).
  const uint32_t fit = kNodeAdd | kNodeUpdate | kAssignedPodDelete;
  Resources one_gpu;
  one_gpu.milli_cpu = 8000;
  one_gpu.memory = int64_t{64} << 30;
  one_gpu.pods = 10;
  one_gpu.Set(kNvidiaGpu, 1000);
  Resources two_gpus = one_gpu;
  two_gpus.Set(kNvidiaGpu, 2000);
  struct Case {
    std::string what;
    std::vector<std::pair<uint32_t, const Resources*>> during;
    uint32_t hinted;
    bool parked;
  };
  const std::vector<Case> cases = {
      {"rooms too small", {{kAssignedPodDelete, &one_gpu}, {kAssignedPodDelete, &one_gpu}}, kAssignedPodDelete, true},
      {"a room that holds it", {{kAssignedPodDelete, &one_gpu}, {kAssignedPodDelete, &two_gpus}}, kAssignedPodDelete, false},
      {"a room not kept", {{kAssignedPodDelete, &one_gpu}, {kAssignedPodDelete, nullptr}}, kAssignedPodDelete, false},
      {"not hinted by room", {{kAssignedPodDelete, &one_gpu}}, 0, false},
      {"an event it did not register", {{kAssignedPodAdd, nullptr}}, kAssignedPodDelete, true},
      {"an event it registered, unhinted", {{kAssignedPodDelete, &one_gpu}, {kNodeUpdate, nullptr}}, kAssignedPodDelete, false},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    ManualClock clock;
    SchedulingQueue q(&clock, PrioritySortLess(), QueueOptions{.max_unschedulable_wait = absl::Hours(24)});
    q.Add(std::make_shared<const Pod>(PodBuilder("two").Requests("cpu:1,nvidia.com/gpu:2").Build()));
    auto popped = q.Pop();
    REQUIRE(popped.has_value());
    for (const auto& [event, room] : c.during) q.OnClusterEvent(event, room);
    q.AddUnschedulable(popped->info, popped->cycle, fit, c.hinted);
    CHECK(q.Stats().unschedulable == (c.parked ? 1u : 0u));
  }
  // More rooms than are kept: the next counts as not kept.
  ManualClock clock;
  SchedulingQueue q(&clock, PrioritySortLess(), QueueOptions{.max_unschedulable_wait = absl::Hours(24)});
  q.Add(std::make_shared<const Pod>(PodBuilder("two").Requests("cpu:1,nvidia.com/gpu:2").Build()));
  auto popped = q.Pop();
  REQUIRE(popped.has_value());
  for (int i = 0; i < 65; ++i) q.OnClusterEvent(kAssignedPodDelete, &one_gpu);
  q.AddUnschedulable(popped->info, popped->cycle, fit, kAssignedPodDelete);
  CHECK(q.Stats().unschedulable == 0);
}

TEST_CASE("PopWait returns when a pod arrives or times out", "[queue]") {
  RealClock clock;
  SchedulingQueue q(&clock, PrioritySortLess());
  CHECK_FALSE(q.PopWait(absl::Milliseconds(20)).has_value());
  std::thread producer([&] { q.Add(P("late", 0, 0)); });
  auto got = q.PopWait(absl::Seconds(30));
  producer.join();
  REQUIRE(got.has_value());
  CHECK(got->info.pod->Key() == "default/late");
  q.Close();
  CHECK_FALSE(q.PopWait(absl::Seconds(30)).has_value());
}

}  // namespace queue_test
}  // namespace tessel
