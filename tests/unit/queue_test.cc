// The scheduling queue: order, backoff, parking unschedulable pods until a helpful event.
#include <catch2/catch.hpp>

#include <thread>

#include "builders.h"
#include "plugins/priority_sort/priority_sort.h"
#include "scheduler/queue/scheduling_queue.h"

namespace tessel {
namespace {

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
  q.AddUnschedulable(popped->info, popped->cycle, kNodeAdd);
  clock.Advance(absl::Minutes(4));
  CHECK_FALSE(q.Pop().has_value());
  clock.Advance(absl::Minutes(1));
  CHECK(q.Pop().has_value());
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
  q.Update(P("c", 0, 0));  // the spec changed: worth another try
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

}  // namespace
}  // namespace tessel
