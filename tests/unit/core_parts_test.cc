// The pieces the core was taken apart into, each on its own: the in-flight token, the Permit
// waiting map, the PriorityClass and budget stores, the gang tracker's heads, and the kind table.
#include <catch2/catch.hpp>

#include "nlohmann/json.hpp"
#include "scheduler/framework/waiting_pods.h"
#include "scheduler/gang/gang_tracker.h"
#include "scheduler/queue/in_flight_pod.h"
#include "scheduler/state/priority_classes.h"
#include "scheduler/testing/builders.h"

namespace tessel {
namespace core_parts_test {

using testing::PodBuilder;

// The order does not matter here: one pod at a time.
bool ByKey(const QueuedPodInfo& a, const QueuedPodInfo& b) { return a.pod->Key() < b.pod->Key(); }

PodRef P(std::string name, int64_t created, std::string uid = "") {
  Pod pod = PodBuilder(std::move(name)).Created(created).Build();
  pod.meta.uid = std::move(uid);
  return std::make_shared<const Pod>(std::move(pod));
}

TEST_CASE("InFlightPod: dropped means done, handed back means queued, ended means gone", "[core_parts]") {
  ManualClock clock;
  SchedulingQueue q(&clock, ByKey);
  q.Add(P("a", 1));
  SECTION("dropping the token ends the pod's flight") {
    {
      InFlightPod pod(q, *q.Pop());
      CHECK(q.InFlightCount() == 1);
      CHECK_FALSE(pod.ended());
    }
    CHECK(q.InFlightCount() == 0);
    CHECK(q.PendingPods().empty());
  }
  SECTION("handed back, it waits for its events; the token is spent") {
    InFlightPod pod(q, *q.Pop());
    pod.Unschedulable(kNodeAdd);
    CHECK(q.InFlightCount() == 0);
    CHECK(q.Stats().unschedulable == 1);
    pod.Done();  // spent: nothing happens
    CHECK(q.Stats().unschedulable == 1);
  }
  SECTION("a moved token is the one that counts") {
    InFlightPod first(q, *q.Pop());
    InFlightPod second = std::move(first);
    second.Backoff();
    CHECK(q.Stats().backoff + q.Stats().active == 1);
  }
  SECTION("deleted in flight: ended, and its hand-back is dropped") {
    InFlightPod pod(q, *q.Pop());
    q.Delete("default/a");
    CHECK(pod.ended());
    pod.Unschedulable(kNodeAdd);
    CHECK(q.PendingPods().empty());
    CHECK(q.InFlightCount() == 0);
  }
}

struct HeldPod {
  PodRef ref;
  const Pod& pod() const { return *ref; }
};

TEST_CASE("WaitingPods: taken once, by UID, expired in key order", "[core_parts]") {
  WaitingPods<HeldPod> waiting;
  const absl::Time t0 = absl::UnixEpoch();
  waiting.Add("default/b", {.held = {P("b", 1, "uid-b")}, .node = "n1", .deadline = t0 + absl::Seconds(5)});
  waiting.Add("default/a", {.held = {P("a", 1, "uid-a")}, .node = "n2", .deadline = t0 + absl::Seconds(5)});
  waiting.Add("default/c", {.held = {P("c", 1, "uid-c")}, .node = "n3", .deadline = t0 + absl::Seconds(9)});
  CHECK(waiting.Keys() == std::vector<std::string>{"default/a", "default/b", "default/c"});
  CHECK(waiting.EarliestDeadline() == t0 + absl::Seconds(5));
  CHECK(waiting.Expired(t0 + absl::Seconds(4)).empty());
  CHECK(waiting.Expired(t0 + absl::Seconds(5)) == std::vector<std::string>{"default/a", "default/b"});
  CHECK_FALSE(waiting.Take("default/a", "another-uid").has_value());  // a newer pod of that name
  std::optional<WaitingPods<HeldPod>::Entry> a = waiting.Take("default/a", "uid-a");
  REQUIRE(a.has_value());
  CHECK(a->node == "n2");
  CHECK_FALSE(waiting.Take("default/a").has_value());  // once
  CHECK(waiting.Take("default/b").has_value());         // no UID: any
  CHECK(waiting.Keys() == std::vector<std::string>{"default/c"});
}

TEST_CASE("PriorityClassStore resolves as admission would; budgets come sorted", "[core_parts]") {
  PriorityClassStore classes;
  Pod pod = PodBuilder("p").Build();
  pod.priority.reset();
  CHECK(classes.PriorityOf(pod) == 0);
  PriorityClass low{.value = -10};
  low.meta.name = "low";
  PriorityClass normal{.value = 100, .global_default = true, .preemption_policy = PreemptionPolicy::kNever};
  normal.meta.name = "normal";
  classes.Put(low);
  classes.Put(normal);
  CHECK(classes.Floor() == -10);
  CHECK(classes.Value("low") == -10);
  CHECK_FALSE(classes.Value("missing").has_value());
  CHECK(classes.PriorityOf(pod) == 100);  // the global default
  pod.priority_class_name = "low";
  classes.Resolve(pod);
  CHECK(pod.priority == -10);
  Pod unknown = PodBuilder("q").Build();
  unknown.priority.reset();
  unknown.priority_class_name = "gone";  // admission would refuse it; it gets the default
  classes.Resolve(unknown);
  CHECK(unknown.priority == 100);
  CHECK(unknown.preemption_policy == PreemptionPolicy::kNever);
  classes.Delete("normal");
  CHECK(classes.Floor() == -10);

  DisruptionBudgetStore budgets;
  for (auto [ns, name] : {std::pair{"b", "x"}, std::pair{"a", "z"}, std::pair{"a", "y"}}) {
    PodDisruptionBudget pdb;
    pdb.meta.namespace_ = ns;
    pdb.meta.name = name;
    budgets.Put(pdb);
  }
  budgets.Delete("b/x");
  std::vector<std::string> keys;
  for (const PodDisruptionBudget& b : budgets.All()) keys.push_back(b.meta.namespace_ + "/" + b.meta.name);
  CHECK(keys == std::vector<std::string>{"a/y", "a/z"});
}

// The queue as the tracker sees it: what it was told, in order.
class RecordingQueue final : public gang::GangQueue {
 public:
  void Add(PodRef head) override { calls.push_back("add " + head->meta.name); queued.insert(head->Key()); }
  void Update(PodRef head) override { calls.push_back("update " + head->meta.name); }
  void Delete(const std::string& key) override { calls.push_back("delete " + key); queued.erase(key); }
  bool Contains(const std::string& key) const override { return queued.contains(key); }
  void AddBackoff(QueuedPodInfo info) override { calls.push_back("backoff " + info.pod->meta.name); }
  std::vector<std::string> calls;
  StringSet queued;
};

PodRef Member(std::string name, int64_t created) {
  Pod pod = PodBuilder(std::move(name)).Created(created).Build();
  pod.meta.labels[std::string(gang::kPodGroupLabel)] = "train";
  return std::make_shared<const Pod>(std::move(pod));
}

TEST_CASE("GangTracker: one head per gang, the earliest member; a changed member supersedes a plan",
          "[core_parts][gang]") {
  gang::GangBook book;
  gang::PodGroup pg{.min_member = 2};
  pg.meta.namespace_ = "default";
  pg.meta.name = "train";
  book.Put(pg);
  RecordingQueue queue;
  gang::GangTracker tracker(&book, &queue);
  CHECK_FALSE(tracker.Admit(std::make_shared<const Pod>(PodBuilder("loner").Build())));
  PodRef late = Member("w-1", 20);
  REQUIRE(tracker.Admit(late));
  PodRef early = Member("w-0", 10);
  REQUIRE(tracker.Admit(early));  // arrived later but created first: it heads the gang now
  CHECK(queue.calls == std::vector<std::string>{"add w-1", "delete default/w-1", "add w-0"});
  CHECK(tracker.IsHead(*early));
  CHECK_FALSE(tracker.IsHead(*late));
  CHECK(tracker.PendingMembers().size() == 2);

  gang::GangTracker::Cycle c = tracker.BeginCycle(*early, book.Resolve(*early));
  REQUIRE(c.kind == gang::GangTracker::Cycle::Kind::kReady);
  CHECK(c.members == std::vector<PodRef>{early, late});
  std::vector<gang::MemberPlacement> plan{{.pod = early, .node = "n1"}, {.pod = late, .node = "n2"}};
  const std::string gang_key = book.Resolve(*early).spec.id.Key();
  SECTION("a member updated during the cycle: nothing is committed") {
    tracker.ReplacePending(Member("w-1", 20));
    CHECK_FALSE(tracker.Commit(gang_key, early->Key(), plan).has_value());
    CHECK(tracker.PendingMembers().size() == 2);
  }
  SECTION("committed: both placed, nothing left to head") {
    CHECK(tracker.Commit(gang_key, early->Key(), plan) == 2);
    CHECK(tracker.PendingMembers().empty());
    CHECK_FALSE(tracker.IsHead(*early));
  }
  SECTION("a pod that no longer heads its gang finds its cycle superseded") {
    CHECK(tracker.BeginCycle(*late, book.Resolve(*late)).kind == gang::GangTracker::Cycle::Kind::kSuperseded);
  }
}

}  // namespace core_parts_test
}  // namespace tessel
