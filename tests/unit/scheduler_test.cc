// The scheduling core end to end, with the in-tree default profile plus a scripted "Gate" plugin
// at Reserve and Permit, a fake ClusterApi and a manual clock: Permit wait/allow/reject/expiry,
// Reserve failure, Bind failure with rollback, the nominated node, and a pod updated during its
// own cycle (run under ASan in the sanitizer build).
#include <catch2/catch.hpp>

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "harness/core_harness.h"
#include "plugins/registry.h"
#include "scheduler/testing/builders.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace scheduler_test {

using testing::NodeBuilder;
using testing::PodBuilder;

// What the Gate plugin answers; tests set it before each cycle.
struct GateScript {
  Status reserve = Status::Ok();
  PermitResult permit{Status::Ok(), absl::ZeroDuration()};
  std::vector<std::string> reserved;    // "key@node"
  std::vector<std::string> unreserved;  // "key@node"
  std::function<void()> on_permit;      // runs inside Permit (e.g. a delete racing the cycle)
};

class Gate final : public ReservePlugin, public PermitPlugin {
 public:
  explicit Gate(GateScript* script) : script_(script) {}
  std::string_view Name() const override { return "Gate"; }
  Status Reserve(CycleState&, const Pod& pod, const std::string& node) override {
    script_->reserved.push_back(pod.Key() + "@" + node);
    return script_->reserve;
  }
  void Unreserve(CycleState&, const Pod& pod, const std::string& node) override {
    script_->unreserved.push_back(pod.Key() + "@" + node);
  }
  PermitResult Permit(CycleState&, const Pod&, const std::string&) override {
    if (script_->on_permit) std::exchange(script_->on_permit, nullptr)();
    return script_->permit;
  }

 private:
  GateScript* script_;
};

class RecordingObserver final : public SchedulingObserver {
 public:
  void PodScheduled(const Pod& pod, const std::string& node) override {
    scheduled[pod.Key()] = node;
  }
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override {
    failures[pod.Key()] = message;
    kinds[pod.Key()] = kind;
    if (on_unschedulable) on_unschedulable(pod);
  }
  void AttemptFinished(const Pod& pod, AttemptResult result, absl::Duration) override {
    attempts.push_back(pod.Key() + ":" + std::string(AttemptResultName(result)));
  }
  void NominationCleared(const Pod& pod) override { cleared.push_back(pod.Key()); }
  std::function<void(const Pod&)> on_unschedulable;
  std::vector<std::string> cleared;
  std::map<std::string, std::string> scheduled;
  std::map<std::string, std::string> failures;
  std::map<std::string, FailureKind> kinds;
  std::vector<std::string> attempts;
};

constexpr const char* kGateConfig = R"(
profiles:
- schedulerName: tessel
  plugins:
    reserve: {enabled: [{name: Gate}]}
    permit: {enabled: [{name: Gate}]}
)";

// The core harness (tests/harness/core_harness.h) with the Gate plugin at Reserve and Permit and
// a recording observer; binds are confirmed the way an informer would confirm them.
struct Fixture {
  explicit Fixture(int nodes = 3, std::string_view node_size = "cpu:8,memory:32Gi,nvidia.com/gpu:8")
      : harness({.config_yaml = kGateConfig,
                 .plugins = {{"Gate",
                              [this](const YAML::Node&, Handle&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
                                return std::unique_ptr<Plugin>(std::make_unique<Gate>(&script));
                              }}},
                 .observer = &observer}) {
    for (int i = 1; i <= nodes; ++i) {
      harness.AddNode(NodeBuilder("n" + std::to_string(i)).Allocatable(node_size).Build());
    }
  }
  int64_t RunUntilIdle() { return harness.RunUntilIdle(); }
  // Runs until idle `rounds` times, 30 s of the manual clock apart, so backoffs pass.
  void Settle(int rounds) {
    for (int i = 0; i < rounds; ++i) {
      RunUntilIdle();
      clock.Advance(absl::Seconds(30));
    }
  }

  RecordingObserver observer;
  GateScript script;
  testing::CoreHarness harness;
  ManualClock& clock = harness.clock;
  Cache& cache = harness.cache;
  testing::FakeClusterApi& api = harness.api;
  Registry& registry = harness.registry;
  SchedulerConfig& config = harness.config;
  std::unique_ptr<Scheduler>& s = harness.s;
};

Pod GpuPod(std::string name, int gpus = 1) {
  return PodBuilder(std::move(name)).Requests("cpu:1,nvidia.com/gpu:" + std::to_string(gpus)).Build();
}

int64_t GpusOn(const Cache& cache, const std::string& node) {
  return cache.GetNodeInfo(node)->requested().Get("nvidia.com/gpu");
}

TEST_CASE("a pod that fits is reserved, permitted, bound and confirmed", "[scheduler]") {
  Fixture f;
  f.s->OnPodAdd(GpuPod("a", 2));
  CHECK(f.RunUntilIdle() == 1);
  REQUIRE(f.api.binds.size() == 1);
  const std::string node = f.api.binds[0].second;
  CHECK(f.observer.scheduled.at("default/a") == node);
  CHECK(f.cache.NodeOf("default/a") == node);
  CHECK_FALSE(f.cache.IsAssumed("default/a"));  // the informer's update confirmed it
  CHECK(GpusOn(f.cache, node) == 2000);
  CHECK(f.script.unreserved.empty());
  CHECK(f.observer.attempts == std::vector<std::string>{"default/a:scheduled"});
}

TEST_CASE("Permit Wait holds the pod assumed until allowed, rejected or timed out", "[scheduler]") {
  Fixture f;
  f.script.permit = {Status::Wait(), absl::Seconds(30)};
  f.s->OnPodAdd(GpuPod("a", 4));
  f.RunUntilIdle();
  REQUIRE(f.s->WaitingPodKeys() == std::vector<std::string>{"default/a"});
  const std::optional<std::string> node = f.cache.NodeOf("default/a");
  REQUIRE(node.has_value());
  CHECK(f.cache.IsAssumed("default/a"));
  CHECK(GpusOn(f.cache, *node) == 4000);  // held while waiting
  CHECK(f.api.binds.empty());
  CHECK(f.s->NextWakeup() == f.clock.Now() + absl::Seconds(30));

  SECTION("allowed: binds on the node it waited on") {
    REQUIRE(f.s->AllowWaitingPod("default/a"));
    CHECK(f.s->WaitingPodKeys().empty());
    REQUIRE(f.api.binds.size() == 1);
    CHECK(f.api.binds[0].second == *node);
    CHECK(f.observer.scheduled.at("default/a") == *node);
    CHECK_FALSE(f.cache.IsAssumed("default/a"));
    CHECK(f.script.unreserved.empty());
    CHECK_FALSE(f.s->AllowWaitingPod("default/a"));  // no longer waiting
  }
  SECTION("rejected: unreserved, forgotten and retried after backoff") {
    REQUIRE(f.s->RejectWaitingPod("default/a", "gang incomplete"));
    CHECK(f.s->WaitingPodKeys().empty());
    CHECK_FALSE(f.cache.NodeOf("default/a").has_value());
    CHECK(GpusOn(f.cache, *node) == 0);
    CHECK(f.script.unreserved == std::vector<std::string>{"default/a@" + *node});
    CHECK(f.observer.failures.at("default/a") == "gang incomplete");
    CHECK(f.api.binds.empty());
    CHECK(f.s->queue().Stats().backoff == 1);
    // After the backoff it is tried again, and this time allowed at once.
    f.script.permit = {Status::Ok(), absl::ZeroDuration()};
    f.clock.Advance(absl::Seconds(10));
    CHECK(f.RunUntilIdle() == 1);
    CHECK(f.api.binds.size() == 1);
    CHECK(f.observer.scheduled.contains("default/a"));
  }
  SECTION("timed out: rejected by the loop's housekeeping once the deadline passes") {
    f.clock.Advance(absl::Seconds(29));
    f.RunUntilIdle();
    CHECK(f.s->WaitingPodKeys() == std::vector<std::string>{"default/a"});
    f.clock.Advance(absl::Seconds(1));
    f.RunUntilIdle();
    CHECK(f.s->WaitingPodKeys().empty());
    CHECK_FALSE(f.cache.NodeOf("default/a").has_value());
    CHECK(GpusOn(f.cache, *node) == 0);
    CHECK(f.script.unreserved.size() == 1);
    CHECK(f.observer.failures.at("default/a") == "rejected by permit: timed out waiting");
    CHECK(f.api.binds.empty());
  }
  SECTION("deleted while waiting: nothing stays held") {
    f.s->OnPodDelete("default/a");
    CHECK(f.s->WaitingPodKeys().empty());
    CHECK_FALSE(f.cache.NodeOf("default/a").has_value());
    CHECK(GpusOn(f.cache, *node) == 0);
    CHECK_FALSE(f.s->queue().Contains("default/a"));
  }
}

TEST_CASE("Permit rejection unreserves and parks the pod", "[scheduler]") {
  Fixture f;
  f.script.permit = {Status::Unschedulable("not yet"), absl::ZeroDuration()};
  f.s->OnPodAdd(GpuPod("a"));
  f.RunUntilIdle();
  CHECK_FALSE(f.cache.NodeOf("default/a").has_value());
  CHECK(f.script.reserved.size() == 1);
  CHECK(f.script.unreserved == f.script.reserved);
  CHECK(f.observer.failures.at("default/a") == "Unschedulable: not yet");
  CHECK(f.s->queue().UnschedulableKeys() == std::vector<std::string>{"default/a"});
  CHECK(f.api.binds.empty());
}

TEST_CASE("a Reserve failure releases the assumed pod", "[scheduler]") {
  Fixture f;
  const bool error = GENERATE(false, true);
  f.script.reserve = error ? Status::Error("ledger broken") : Status::Unschedulable("reserved elsewhere");
  f.s->OnPodAdd(GpuPod("a", 3));
  f.RunUntilIdle();
  CHECK_FALSE(f.cache.NodeOf("default/a").has_value());
  for (const std::string& n : f.cache.NodeNames()) CHECK(GpusOn(f.cache, n) == 0);
  CHECK(f.script.unreserved == f.script.reserved);  // the failing plugin is unreserved too
  CHECK(f.api.binds.empty());
  CHECK(f.s->queue().Contains("default/a"));
  CHECK(f.observer.kinds.at("default/a") ==
        (error ? FailureKind::kError : FailureKind::kUnschedulable));
  if (error) {
    CHECK(f.s->queue().Stats().backoff == 1);
    CHECK(f.observer.attempts == std::vector<std::string>{"default/a:error"});
  } else {
    CHECK(f.s->queue().UnschedulableKeys() == std::vector<std::string>{"default/a"});
    CHECK(f.observer.attempts == std::vector<std::string>{"default/a:unschedulable"});
  }
}

TEST_CASE("a failed bind rolls back the assumption and retries after backoff", "[scheduler]") {
  Fixture f(1, "cpu:8,memory:32Gi,nvidia.com/gpu:4");
  f.api.next_bind = absl::UnavailableError("apiserver unavailable");
  f.s->OnPodAdd(GpuPod("a", 4));
  f.RunUntilIdle();
  REQUIRE(f.api.binds.size() == 1);
  CHECK_FALSE(f.cache.NodeOf("default/a").has_value());
  CHECK(GpusOn(f.cache, "n1") == 0);
  CHECK(f.script.unreserved == std::vector<std::string>{"default/a@n1"});
  CHECK(f.observer.failures.contains("default/a"));
  CHECK(f.observer.kinds.at("default/a") == FailureKind::kBindFailed);
  CHECK_FALSE(f.observer.scheduled.contains("default/a"));
  CHECK(f.s->queue().Stats().backoff == 1);
  // The node is whole again, and the retry after the backoff takes it.
  f.clock.Advance(absl::Seconds(1));
  f.RunUntilIdle();
  REQUIRE(f.api.binds.size() == 2);
  CHECK(f.observer.scheduled.at("default/a") == "n1");
  CHECK(GpusOn(f.cache, "n1") == 4000);
}

TEST_CASE("a nominated node is tried first and dropped when it no longer fits", "[scheduler]") {
  // Three equal nodes: without a nomination the score ties go to n1.
  Fixture f;
  Pod pod = GpuPod("a", 2);
  SECTION("it fits: the pod goes there") {
    pod.nominated_node_name = "n3";
    f.s->OnPodAdd(pod);
    f.RunUntilIdle();
    CHECK(f.observer.scheduled.at("default/a") == "n3");
  }
  SECTION("it no longer fits: any other node") {
    f.s->OnPodAdd(PodBuilder("big").Requests("cpu:1,nvidia.com/gpu:8").Node("n3").Build());
    pod.nominated_node_name = "n3";
    f.s->OnPodAdd(pod);
    f.RunUntilIdle();
    REQUIRE(f.observer.scheduled.contains("default/a"));
    CHECK(f.observer.scheduled.at("default/a") != "n3");
  }
  SECTION("the nominated node is gone: any other node") {
    pod.nominated_node_name = "n9";
    f.s->OnPodAdd(pod);
    f.RunUntilIdle();
    CHECK(f.observer.scheduled.contains("default/a"));
  }
}

// A nomination read from the API server (status.nominatedNodeName, e.g. after a restart) holds
// its room: pods of lower or equal priority do not take it, more important ones do, and the
// room is free again once the nominated pod is gone.
TEST_CASE("a nominated pod's room is not taken by pods of lower or equal priority", "[scheduler][preemption]") {
  Fixture f(1);
  Pod waiting = PodBuilder("waiting").Requests("cpu:1,nvidia.com/gpu:6").Priority(100).Build();
  waiting.nominated_node_name = "n1";
  // It does not fit yet: a terminating pod it preempted still holds the node.
  Pod leaving = PodBuilder("leaving").Requests("cpu:1,nvidia.com/gpu:8").Priority(1).Node("n1").Build();
  leaving.meta.deletion_timestamp = absl::FromUnixSeconds(1);
  f.s->OnPodAdd(leaving);
  f.s->OnPodAdd(waiting);
  f.Settle(5);
  CHECK_FALSE(f.observer.scheduled.contains("default/waiting"));
  CHECK(f.api.evictions.empty());  // it waits for its victim instead of preempting again
  CHECK(f.s->NominatedNodeOf("default/waiting") == "n1");

  // The victim leaves. Pods of lower and equal priority arrive first, in the same instant.
  f.s->OnPodDelete("default/leaving");
  SECTION("lower and equal priority wait; the nominated pod takes its node") {
    f.s->OnPodAdd(PodBuilder("lower").Requests("cpu:1,nvidia.com/gpu:4").Priority(50).Build());
    f.s->OnPodAdd(PodBuilder("peer").Requests("cpu:1,nvidia.com/gpu:4").Priority(100).Created(0).Build());
    f.Settle(5);
    CHECK(f.observer.scheduled.at("default/waiting") == "n1");
    CHECK_FALSE(f.observer.scheduled.contains("default/lower"));
    CHECK_FALSE(f.observer.scheduled.contains("default/peer"));
    CHECK(f.s->NominatedNodeOf("default/waiting").empty());  // placed: no longer nominated
  }
  SECTION("a more important pod may take the room") {
    f.s->OnPodAdd(PodBuilder("vip").Requests("cpu:1,nvidia.com/gpu:4").Priority(200).Build());
    f.Settle(5);
    CHECK(f.observer.scheduled.at("default/vip") == "n1");
  }
  SECTION("the nominated pod is deleted: its room is free") {
    f.s->OnPodDelete("default/waiting");
    CHECK(f.s->NominatedNodeOf("default/waiting").empty());
    f.s->OnPodAdd(PodBuilder("lower").Requests("cpu:1,nvidia.com/gpu:4").Priority(50).Build());
    f.Settle(5);
    CHECK(f.observer.scheduled.at("default/lower") == "n1");
  }
}

// The decision cache keeps a held node's verdict beside its nominated pods; a nomination that
// goes (the node itself unchanged) must be seen.
TEST_CASE("a node's room frees when a nomination there goes, while others stay", "[scheduler][preemption]") {
  Fixture f(1);
  Pod leaving = PodBuilder("leaving").Requests("cpu:1,nvidia.com/gpu:4").Priority(1).Node("n1").Build();
  leaving.meta.deletion_timestamp = absl::FromUnixSeconds(1);
  f.s->OnPodAdd(leaving);
  // Both wait for `leaving` on n1: `big` ahead of pods of priority 0, `lowly` behind them.
  for (auto [name, priority] : {std::pair{"big", 1000}, std::pair{"lowly", -10}}) {
    Pod p = PodBuilder(name).Requests("cpu:1,nvidia.com/gpu:8").Priority(priority).Build();
    p.nominated_node_name = "n1";
    f.s->OnPodAdd(p);
  }
  // n1 has 4 GPUs free as it is, none beside `big`: a 4-GPU pod of priority 0 waits.
  f.s->OnPodAdd(PodBuilder("first").Requests("cpu:1,nvidia.com/gpu:4").Build());
  f.Settle(3);
  CHECK_FALSE(f.observer.scheduled.contains("default/first"));
  CHECK(f.api.evictions.empty());
  CHECK(f.s->FrameworkFor("tessel")->DecisionCacheStats().held_out > 0);
  // `big` goes; `lowly` stays nominated to n1, which did not change.
  f.s->OnPodDelete("default/big");
  REQUIRE(f.s->NominatedNodeOf("default/lowly") == "n1");
  f.s->OnPodAdd(PodBuilder("second").Requests("cpu:1,nvidia.com/gpu:4").Build());
  f.Settle(3);
  const bool first = f.observer.scheduled.contains("default/first");
  const bool second = f.observer.scheduled.contains("default/second");
  CHECK(first != second);  // one of them takes the 4 free GPUs
  CHECK(f.observer.scheduled.at(first ? "default/first" : "default/second") == "n1");
}

TEST_CASE("preemption evicts, nominates, and the nomination outlives a lagging update", "[scheduler][preemption]") {
  Fixture f(1);
  f.s->OnPodAdd(PodBuilder("low").Requests("cpu:1,nvidia.com/gpu:8").Priority(1).Node("n1").Build());
  f.s->OnPodAdd(PodBuilder("high").Requests("cpu:1,nvidia.com/gpu:8").Priority(100).Build());
  f.RunUntilIdle();
  CHECK(f.api.evictions == std::vector<std::string>{"default/low"});
  // The victim is told who preempted it, where, and why, as kube-scheduler tells its victims.
  const std::string told =
      "preempted by default/high (priority 100) on node n1 (LowerPriority) (its 1st preemption in 24h)";
  CHECK(f.api.events == std::vector<std::string>{"default/low Normal Preempted: " + told});
  CHECK(f.api.disruption_targets == std::vector<std::string>{"default/low PreemptionByScheduler: " + told});
  CHECK(f.s->NominatedNodeOf("default/high") == "n1");
  CHECK_THAT(f.observer.failures.at("default/high"), Catch::EndsWith("Preempting pods on node n1."));
  Pod high = PodBuilder("high").Requests("cpu:1,nvidia.com/gpu:8").Priority(100).Build();
  SECTION("an update from before the status patch landed keeps the nomination") {
    f.s->OnPodUpdate(high);
    CHECK(f.s->NominatedNodeOf("default/high") == "n1");
  }
  SECTION("once the API server showed it, an update without it removes it") {
    high.nominated_node_name = "n1";
    f.s->OnPodUpdate(high);
    high.nominated_node_name.clear();
    f.s->OnPodUpdate(high);
    CHECK(f.s->NominatedNodeOf("default/high").empty());
  }
  SECTION("the victim leaves: the preemptor takes the node") {
    f.s->OnPodDelete("default/low");
    f.Settle(3);
    CHECK(f.observer.scheduled.at("default/high") == "n1");
    CHECK(f.s->NominatedNodeOf("default/high").empty());
  }
}

// kube-scheduler's prepareCandidate: pods of lower priority nominated to the node a preemption
// chose lose their nomination (the room they were promised is the preemptor's now); others keep
// theirs.
TEST_CASE("a preemption clears lower-priority nominations on its node only", "[scheduler][preemption]") {
  Fixture f(0);
  for (std::string node : {"n1", "n2"}) {
    f.s->OnNodeAdd(NodeBuilder(node).Allocatable("cpu:8,memory:32Gi,nvidia.com/gpu:8").Label("pool", node).Build());
    // A pod preempted earlier, still terminating: pods nominated here wait for it to leave.
    Pod leaving = PodBuilder("leaving-" + node).Requests("cpu:1,nvidia.com/gpu:8").Priority(1).Node(node).Build();
    leaving.meta.deletion_timestamp = absl::FromUnixSeconds(1);
    f.s->OnPodAdd(leaving);
  }
  // Nominations as an earlier leader left them (read from status.nominatedNodeName).
  auto nominated = [](const std::string& name, int32_t priority, const std::string& node) {
    Pod p = PodBuilder(name).Requests("cpu:1,nvidia.com/gpu:2").Priority(priority).Build();
    p.nominated_node_name = node;
    return p;
  };
  f.s->OnPodAdd(nominated("low-on-n1", 10, "n1"));
  f.s->OnPodAdd(nominated("low-on-n2", 10, "n2"));
  f.s->OnPodAdd(nominated("peer-on-n1", 200, "n1"));
  f.RunUntilIdle();
  REQUIRE(f.s->NominatedNodeOf("default/low-on-n1") == "n1");
  REQUIRE(f.observer.cleared.empty());
  // A preemptor for n1: it fits once leaving-n1 is gone, beside the 2 GPUs promised to
  // peer-on-n1 (more important than it); low-on-n1's 2 do not count against it.
  f.s->OnPodAdd(PodBuilder("high").Requests("cpu:1,nvidia.com/gpu:6").Priority(100).Selector("pool", "n1").Build());
  f.RunUntilIdle();
  REQUIRE(f.s->NominatedNodeOf("default/high") == "n1");
  CHECK(f.s->NominatedNodeOf("default/low-on-n1").empty());
  CHECK(f.s->NominatedNodeOf("default/low-on-n2") == "n2");   // another node
  CHECK(f.s->NominatedNodeOf("default/peer-on-n1") == "n1");  // more important
  CHECK(f.observer.cleared == std::vector<std::string>{"default/low-on-n1"});
  // Its next attempt neither tries n1 as its own nor reports the lost nomination.
  f.s->OnPodDelete("default/leaving-n2");
  f.Settle(3);
  CHECK(f.observer.scheduled.at("default/low-on-n1") == "n2");
  CHECK(f.s->NominatedNodeOf("default/low-on-n1").empty());
}

TEST_CASE("preemptionPolicy Never: the pod waits, nothing is evicted", "[scheduler][preemption]") {
  Fixture f(1);
  f.s->OnPodAdd(PodBuilder("low").Requests("cpu:1,nvidia.com/gpu:8").Priority(1).Node("n1").Build());
  PodBuilder polite("polite");
  polite.Requests("cpu:1,nvidia.com/gpu:8").Priority(100);
  polite.mutable_pod().preemption_policy = PreemptionPolicy::kNever;
  f.s->OnPodAdd(polite.Build());
  f.RunUntilIdle();
  CHECK(f.api.evictions.empty());
  CHECK(f.s->NominatedNodeOf("default/polite").empty());
  CHECK(f.observer.failures.at("default/polite") == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
}

TEST_CASE("a pod updated during its own cycle is read safely to the cycle's end", "[scheduler]") {
  // The informer delivers an update while the cycle is failing the pod: the update enters the
  // queue first, the cycle's copy is dropped, and the cycle must still hold what it reads.
  Fixture f(1, "cpu:8,memory:32Gi,nvidia.com/gpu:1");
  f.observer.on_unschedulable = [&](const Pod& pod) {
    Pod updated = pod;
    updated.meta.resource_version = "2";
    updated.meta.labels["touched"] = "yes";
    f.observer.on_unschedulable = nullptr;
    f.s->OnPodUpdate(std::move(updated));
  };
  f.s->OnPodAdd(GpuPod("too-big-with-a-long-name-that-does-not-fit-in-sso", 4));
  const std::atomic<bool> never{false};
  CHECK(f.s->Run(never, {.max_cycles = 1}) == 1);
  CHECK(f.observer.attempts ==
        std::vector<std::string>{"default/too-big-with-a-long-name-that-does-not-fit-in-sso:unschedulable"});
  CHECK(f.s->queue().Contains("default/too-big-with-a-long-name-that-does-not-fit-in-sso"));
}


// ---------------------------------------------------------------------------------------------
// Churn: a fake API server with a lagging informer and a deferred binder pool. Seeded families
// of creates, deletes in flight, same-name re-creates with other sizes, node deletions and long
// informer lags; after every step nothing is overcommitted, no bound pod is bound again, and no
// bind goes to a node the scheduler already saw deleted.

class ChurnCluster final : public ClusterApi, public BindExecutor {
 public:
  struct Event {
    enum class Kind { kPodUpsert, kPodDelete, kNodeDelete } kind;
    Pod pod;
    std::string name;
  };

  absl::Status Bind(const Pod& pod, const std::string& node, const StringMap&) override {
    ++binds;
    if (scheduler != nullptr && !scheduler->cache().HasNode(node)) ++binds_to_known_deleted_node;
    auto it = pods.find(pod.Key());
    if (it == pods.end() || it->second.meta.uid != pod.meta.uid) {
      return absl::NotFoundError(StrCat("pods \"", pod.meta.name, "\" not found"));
    }
    if (!it->second.node_name.empty()) {
      ++binds_of_bound_pods;
      return absl::AlreadyExistsError(StrCat("pod ", pod.Key(), " is already assigned to node \"",
                                             it->second.node_name, "\""));
    }
    if (fail_next_bind) {
      fail_next_bind = false;
      return absl::UnavailableError("apiserver busy");
    }
    it->second.node_name = node;
    informer.push_back({Event::Kind::kPodUpsert, it->second, {}});
    return absl::OkStatus();
  }
  absl::Status Evict(const Pod&, std::string_view) override { return absl::OkStatus(); }
  void RecordEvent(const Pod&, std::string_view, std::string_view, std::string_view) override {}
  void Submit(std::function<void()> task) override { backlog.push_back(std::move(task)); }

  void Create(Pod pod) {
    pods[pod.Key()] = pod;
    informer.push_back({Event::Kind::kPodUpsert, std::move(pod), {}});
  }
  void Delete(const std::string& key) {
    auto it = pods.find(key);
    if (it == pods.end()) return;
    informer.push_back({Event::Kind::kPodDelete, it->second, {}});
    pods.erase(it);
  }
  void DeleteNode(std::string name) {  // by value: callers pass an element of `nodes`
    nodes.erase(name);
    informer.push_back({Event::Kind::kNodeDelete, {}, std::move(name)});
  }
  void Deliver(size_t n) {
    for (; n > 0 && !informer.empty(); --n) {
      Event e = std::move(informer.front());
      informer.pop_front();
      switch (e.kind) {
        case Event::Kind::kPodUpsert:
          scheduler->OnPodUpdate(std::move(e.pod));
          break;
        case Event::Kind::kPodDelete:
          scheduler->OnPodDelete(e.pod.Key(), e.pod.meta.uid);
          break;
        case Event::Kind::kNodeDelete:
          scheduler->OnNodeDelete(e.name);
          break;
      }
    }
  }
  void RunBinds(size_t n, std::mt19937_64& rng) {
    for (; n > 0 && !backlog.empty(); --n) {
      // The pool's threads finish in any order.
      const size_t i = std::uniform_int_distribution<size_t>(0, backlog.size() - 1)(rng);
      std::function<void()> task = std::move(backlog[i]);
      backlog.erase(backlog.begin() + static_cast<std::ptrdiff_t>(i));
      task();
    }
  }
  // Every node's bound pods fit its GPUs, as the API server sees them.
  std::string Overcommitted() const {
    std::map<std::string, int64_t> gpus;
    for (const auto& [key, pod] : pods) {
      if (!pod.node_name.empty()) gpus[pod.node_name] += pod.requests.Get("nvidia.com/gpu");
    }
    for (const auto& [node, milli] : gpus) {
      if (milli > 8000) return StrCat(node, " holds ", milli, " milli-GPU of 8000");
    }
    return "";
  }

  Scheduler* scheduler = nullptr;
  std::map<std::string, Pod> pods;  // what the API server holds
  std::set<std::string> nodes;
  std::deque<Event> informer;
  std::vector<std::function<void()>> backlog;
  bool fail_next_bind = false;
  int64_t binds = 0;
  int64_t binds_of_bound_pods = 0;
  int64_t binds_to_known_deleted_node = 0;
};

struct ChurnFixture {
  explicit ChurnFixture(int nodes) : cache(&clock) {
    registry = InTreeRegistry();
    auto made = Scheduler::New(SchedulerParams{.registry = &registry,
                                               .config = &config,
                                               .defaults = &DefaultProfile(),
                                               .cache = &cache,
                                               .clock = &clock,
                                               .api = &cluster,
                                               .observer = &observer,
                                               .bind_executor = &cluster});
    REQUIRE(made.ok());
    s = *std::move(made);
    cluster.scheduler = s.get();
    for (int i = 0; i < nodes; ++i) {
      const std::string name = "n" + std::to_string(i);
      cluster.nodes.insert(name);
      s->OnNodeAdd(NodeBuilder(name).Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8").Build());
    }
  }
  void Cycles(int64_t n) {
    const std::atomic<bool> never{false};
    s->Run(never, {.max_cycles = n});
  }

  ManualClock clock;
  Cache cache;
  ChurnCluster cluster;
  RecordingObserver observer;
  Registry registry;
  SchedulerConfig config;
  std::unique_ptr<Scheduler> s;
};

Pod ChurnPod(const std::string& name, int64_t uid, int gpus) {
  Pod p = GpuPod(name, gpus);
  p.meta.uid = "uid-" + std::to_string(uid);
  return p;
}

TEST_CASE("under churn nothing is overcommitted, rebound or bound to a deleted node", "[scheduler][churn]") {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    auto roll = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
    ChurnFixture f(6);
    int64_t next_uid = 0;
    std::vector<std::string> names;
    for (int step = 0; step < 120; ++step) {
      CAPTURE(step);
      switch (roll(9)) {
        case 0:
        case 1: {  // a new pod; at most 24 GPUs asked, so all fit even on 5 of the 6 nodes
          int64_t asked = 0;
          for (const auto& [key, pod] : f.cluster.pods) asked += pod.requests.Get("nvidia.com/gpu");
          const int gpus = 1 + roll(4);
          if (asked + gpus * 1000 > 24000) break;
          const std::string name = "p" + std::to_string(names.size());
          names.push_back(name);
          f.cluster.Create(ChurnPod(name, ++next_uid, gpus));
          break;
        }
        case 2:  // a delete, whatever stage the pod is at
          if (!names.empty()) f.cluster.Delete("default/" + names[roll(static_cast<int>(names.size()))]);
          break;
        case 3: {  // the same name again, as another pod of another size
          if (names.empty()) break;
          const std::string& name = names[roll(static_cast<int>(names.size()))];
          f.cluster.Delete("default/" + name);
          if (roll(2) == 0) f.cluster.Create(ChurnPod(name, ++next_uid, 1 + roll(2)));
          break;
        }
        case 4:
          f.Cycles(1 + roll(4));
          break;
        case 5:
          f.cluster.RunBinds(1 + roll(4), rng);
          break;
        case 6:
          f.cluster.Deliver(1 + roll(6));
          break;
        case 7:  // the informer lags for a long time (beyond any assumed-pod expiry)
          f.clock.Advance(absl::Seconds(roll(45)));
          break;
        case 8:
          if (roll(10) == 0 && f.cluster.nodes.size() > 5) {
            f.cluster.DeleteNode(*std::next(f.cluster.nodes.begin(), roll(static_cast<int>(f.cluster.nodes.size()))));
          } else if (roll(3) == 0) {
            f.cluster.fail_next_bind = true;
          }
          break;
      }
      const absl::Status fit = f.cache.CheckNodesFit();
      INFO(fit.message());
      REQUIRE(fit.ok());
      INFO(f.cluster.Overcommitted());
      REQUIRE(f.cluster.Overcommitted().empty());
      REQUIRE(f.cluster.binds_of_bound_pods == 0);
      REQUIRE(f.cluster.binds_to_known_deleted_node == 0);
    }
    // Quiesce: every pod that still exists ends bound, and the core holds nothing in flight.
    for (int round = 0; round < 40; ++round) {
      f.cluster.Deliver(f.cluster.informer.size());
      f.Cycles(100);
      f.cluster.RunBinds(f.cluster.backlog.size(), rng);
      f.cluster.Deliver(f.cluster.informer.size());
      f.clock.Advance(absl::Seconds(11));
    }
    for (const auto& [key, pod] : f.cluster.pods) {
      CAPTURE(key);
      if (!pod.node_name.empty() && !f.cluster.nodes.contains(pod.node_name)) continue;  // node gone
      CHECK_FALSE(pod.node_name.empty());
      CHECK(f.cache.NodeOf(key) == pod.node_name);
      CHECK_FALSE(f.cache.IsAssumed(key));
    }
    CHECK(f.s->queue().InFlightCount() == 0);
    CHECK(f.cluster.binds_of_bound_pods == 0);
    REQUIRE(f.cache.CheckNodesFit().ok());
  }
}

TEST_CASE("the bind's API answer decides the pod's fate", "[scheduler]") {
  struct Case {
    absl::Status answer;
    bool retried;
    bool reported;
  };
  const std::vector<Case> cases = {
      {absl::NotFoundError("pods \"a\" not found"), false, false},
      {absl::AlreadyExistsError("pod default/a is already assigned to node \"n2\""), false, false},
      {absl::FailedPreconditionError("not the leader"), false, false},
      {absl::UnavailableError("connection refused"), true, true},
      {absl::InternalError("500"), true, true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.answer.ToString());
    Fixture f(1);
    f.api.next_bind = c.answer;
    f.s->OnPodAdd(GpuPod("a", 2));
    f.RunUntilIdle();
    CHECK(f.api.binds.size() == 1);
    CHECK_FALSE(f.cache.NodeOf("default/a").has_value());  // its own assumption is forgotten
    CHECK(GpusOn(f.cache, "n1") == 0);
    CHECK(f.script.unreserved.size() == 1);
    CHECK(f.s->queue().Contains("default/a") == c.retried);
    CHECK(f.observer.failures.contains("default/a") == c.reported);
    CHECK(f.s->queue().InFlightCount() == 0);
    // Nothing comes back by itself: no requeue for an ended pod even after long waits.
    f.clock.Advance(absl::Minutes(10));
    f.RunUntilIdle();
    CHECK(f.api.binds.size() == (c.retried ? 2u : 1u));
  }
}

// A binder pool that holds tasks until the test runs them.
class HeldBinds final : public BindExecutor {
 public:
  void Submit(std::function<void()> task) override { tasks.push_back(std::move(task)); }
  void RunAll() {
    auto run = std::move(tasks);
    tasks.clear();
    for (auto& t : run) t();
  }
  std::vector<std::function<void()>> tasks;
};

struct PoolFixture : Fixture {
  PoolFixture() : Fixture(2) {
    auto made = Scheduler::New(SchedulerParams{.registry = &registry,
                                               .config = &config,
                                               .defaults = &DefaultProfile(),
                                               .cache = &cache,
                                               .clock = &clock,
                                               .api = &api,
                                               .observer = &observer,
                                               .bind_executor = &pool});
    REQUIRE(made.ok());
    s = *std::move(made);  // on the same cache, which holds n1 and n2
    api.on_bind = nullptr;  // the informer's confirmation is sent by each test
  }
  HeldBinds pool;
};

TEST_CASE("a pod in flight is never queued again by its own updates", "[scheduler]") {
  PoolFixture f;
  Pod pod = GpuPod("a", 2);
  pod.meta.uid = "u1";
  f.s->OnPodAdd(pod);
  f.RunUntilIdle();
  REQUIRE(f.pool.tasks.size() == 1);  // assumed; its bind waits in the backlog
  // Status writes and the annotation patch come back through the informer, still unbound.
  Pod touched = pod;
  touched.meta.resource_version = "7";
  f.s->OnPodUpdate(touched);
  f.s->OnPodAdd(touched);  // a relist
  CHECK_FALSE(f.s->queue().Contains("default/a"));
  CHECK(f.RunUntilIdle() == 0);
  f.pool.RunAll();
  REQUIRE(f.api.binds.size() == 1);
  // Bound, but the informer has not said so yet: a late unbound copy still changes nothing.
  f.s->OnPodUpdate(touched);
  CHECK(f.RunUntilIdle() == 0);
  Pod bound = pod;
  bound.node_name = f.api.binds[0].second;
  f.s->OnPodUpdate(bound);
  f.s->OnPodUpdate(touched);  // even a stale copy after the confirmation
  CHECK(f.RunUntilIdle() == 0);
  CHECK(f.api.binds.size() == 1);
  CHECK(GpusOn(f.cache, bound.node_name) == 2000);
  CHECK(f.s->queue().InFlightCount() == 0);
}

TEST_CASE("a pod deleted in flight ends without a bind, an event or a retry", "[scheduler]") {
  PoolFixture f;
  Pod pod = GpuPod("a", 2);
  pod.meta.uid = "u1";
  SECTION("deleted while its bind waits in the backlog") {
    f.s->OnPodAdd(pod);
    f.RunUntilIdle();
    REQUIRE(f.pool.tasks.size() == 1);
    f.s->OnPodDelete("default/a", "u1");
    f.pool.RunAll();
    CHECK(f.api.binds.empty());
    CHECK(f.script.unreserved.size() == 1);
  }
  SECTION("deleted during its scheduling cycle, which then fails") {
    f.script.permit = {Status::Unschedulable("not yet"), absl::ZeroDuration()};
    f.script.on_permit = [&] { f.s->OnPodDelete("default/a", "u1"); };
    f.s->OnPodAdd(pod);
    f.RunUntilIdle();
    CHECK_FALSE(f.s->queue().Contains("default/a"));
    CHECK(f.script.unreserved.size() == 1);
  }
  SECTION("deleted during its scheduling cycle, which then succeeds") {
    f.script.on_permit = [&] { f.s->OnPodDelete("default/a", "u1"); };
    f.s->OnPodAdd(pod);
    f.RunUntilIdle();
    f.pool.RunAll();
    CHECK(f.api.binds.empty());
    CHECK_FALSE(f.s->queue().Contains("default/a"));
  }
  SECTION("deleted while waiting at Permit") {
    f.script.permit = {Status::Wait(), absl::Seconds(30)};
    f.s->OnPodAdd(pod);
    f.RunUntilIdle();
    REQUIRE(f.s->WaitingPodKeys().size() == 1);
    f.s->OnPodDelete("default/a", "u1");
    CHECK(f.s->WaitingPodKeys().empty());
    CHECK(f.script.unreserved.size() == 1);
    CHECK_FALSE(f.s->AllowWaitingPod("default/a"));
    f.pool.RunAll();
    CHECK(f.api.binds.empty());
  }
  SECTION("the name is re-created as a new pod while the old one's bind waits") {
    f.s->OnPodAdd(pod);
    f.RunUntilIdle();
    REQUIRE(f.pool.tasks.size() == 1);
    Pod again = GpuPod("a", 4);
    again.meta.uid = "u2";
    f.s->OnPodAdd(again);  // the delete of u1 was missed (relist): the new UID says enough
    CHECK(f.s->queue().Contains("default/a"));
    f.pool.RunAll();  // the old bind is not sent
    CHECK(f.api.binds.empty());
    f.RunUntilIdle();
    f.pool.RunAll();
    REQUIRE(f.api.binds.size() == 1);
    CHECK(f.cache.Held("default/a")->uid == "u2");
    CHECK(GpusOn(f.cache, f.api.binds[0].second) == 4000);
    f.s->OnPodDelete("default/a", "u1");  // the late delete of the old pod
    CHECK(f.cache.Held("default/a")->uid == "u2");
    CHECK(GpusOn(f.cache, f.api.binds[0].second) == 4000);
  }
  CHECK(f.observer.failures.empty());
  CHECK(f.s->queue().InFlightCount() == 0);
  CHECK(f.cache.CheckNodesFit().ok());
}

TEST_CASE("a bind to a node deleted meanwhile is not sent, and the pod goes elsewhere", "[scheduler]") {
  PoolFixture f;
  f.s->OnPodAdd(GpuPod("a", 2));
  f.RunUntilIdle();
  REQUIRE(f.pool.tasks.size() == 1);
  const std::string first = *f.cache.NodeOf("default/a");
  f.s->OnNodeDelete(first);
  f.pool.RunAll();
  CHECK(f.api.binds.empty());
  CHECK_THAT(f.observer.failures.at("default/a"), Catch::Contains("was deleted before the bind"));
  f.clock.Advance(absl::Seconds(1));
  f.RunUntilIdle();
  f.pool.RunAll();
  REQUIRE(f.api.binds.size() == 1);
  CHECK(f.api.binds[0].second != first);
}

class GateObserver final : public SchedulingObserver {
 public:
  void PodScheduled(const Pod&, const std::string&) override {}
  void PodUnschedulable(const Pod&, FailureKind, const std::string&) override {}
  void PodSchedulingGated(const Pod& pod) override { gated.push_back(pod.Key() + "/" + pod.meta.uid); }
  std::vector<std::string> gated;
};

TEST_CASE("a gated pod waits outside the queue until its gates are removed", "[scheduler]") {
  Fixture f;
  GateObserver gates;
  auto made = Scheduler::New(SchedulerParams{.registry = &f.registry, .config = &f.config,
                                             .defaults = &DefaultProfile(), .cache = &f.cache,
                                             .clock = &f.clock, .api = &f.api, .observer = &gates});
  REQUIRE(made.ok());
  f.s = *std::move(made);
  Pod pod = GpuPod("a");
  pod.meta.uid = "u1";
  pod.scheduling_gates = {"example.com/quota", "example.com/data"};
  f.s->OnPodAdd(pod);
  f.s->OnPodUpdate(pod);  // still gated: reported once
  CHECK(gates.gated == std::vector<std::string>{"default/a/u1"});
  CHECK_FALSE(f.s->queue().Contains("default/a"));
  pod.scheduling_gates = {"example.com/data"};
  f.s->OnPodUpdate(pod);
  CHECK_FALSE(f.s->queue().Contains("default/a"));
  CHECK(gates.gated.size() == 1);
  pod.scheduling_gates.clear();
  f.s->OnPodUpdate(pod);
  CHECK(f.s->queue().Contains("default/a"));
  SECTION("deleted while gated: forgotten") {
    Pod other = GpuPod("b");
    other.scheduling_gates = {"g"};
    f.s->OnPodAdd(other);
    f.s->OnPodDelete("default/b");
    other.meta.uid = "u9";
    f.s->OnPodAdd(other);  // a new pod of that name is reported afresh
    CHECK(gates.gated.back() == "default/b/u9");
  }
}

TEST_CASE("heartbeats and a pod's own status writes do not requeue a parked pod", "[scheduler][queue]") {
  Fixture f(1, "cpu:8,memory:32Gi,nvidia.com/gpu:2");
  Pod pod = GpuPod("a", 4);
  pod.meta.uid = "u1";
  f.s->OnPodAdd(pod);
  f.RunUntilIdle();
  REQUIRE(f.s->queue().UnschedulableKeys() == std::vector<std::string>{"default/a"});
  const size_t attempts = f.observer.attempts.size();

  Node node = NodeBuilder("n1").Allocatable("cpu:8,memory:32Gi,nvidia.com/gpu:2").Build();
  for (int beat = 1; beat <= 5; ++beat) {
    node.meta.resource_version = std::to_string(beat);
    f.s->OnNodeUpdate(node);
    Pod status_write = pod;
    status_write.meta.resource_version = std::to_string(100 + beat);
    f.s->OnPodUpdate(status_write);
    f.clock.Advance(absl::Seconds(30));
    f.RunUntilIdle();
  }
  CHECK(f.observer.attempts.size() == attempts);  // not tried again
  CHECK(f.s->queue().UnschedulableKeys() == std::vector<std::string>{"default/a"});

  // The node grows: that is worth a retry, and now it fits.
  node.allocatable = testing::Res("cpu:8,memory:32Gi,nvidia.com/gpu:4,pods:110");
  f.s->OnNodeUpdate(node);
  f.clock.Advance(absl::Seconds(10));
  f.RunUntilIdle();
  CHECK(f.observer.scheduled.at("default/a") == "n1");
}


TEST_CASE("a bound pod's status writes do not requeue a pod parked for its affinity; a relabel does", "[scheduler][queue]") {
  Fixture f(1, "cpu:8,memory:32Gi,nvidia.com/gpu:2");
  Pod web = PodBuilder("web").Requests("cpu:1").Build();
  web.meta.uid = "u-web";
  web.pod_affinity.required.push_back(
      PodAffinityTerm{.label_selector = LabelSelector{.match_labels = {{"app", "cache"}}}, .topology_key = "kubernetes.io/hostname"});
  Node node = NodeBuilder("n1").Allocatable("cpu:8,memory:32Gi,nvidia.com/gpu:2").Label("kubernetes.io/hostname", "n1").Build();
  f.s->OnNodeUpdate(node);
  Pod cache = PodBuilder("cache").Requests("cpu:1").Label("app", "db").Node("n1").Build();
  cache.meta.uid = "u-cache";
  f.s->OnPodAdd(cache);
  f.s->OnPodAdd(web);
  f.RunUntilIdle();
  REQUIRE(f.s->queue().UnschedulableKeys() == std::vector<std::string>{"default/web"});
  const size_t attempts = f.observer.attempts.size();

  // The kubelet reports the bound pod's progress: nothing web's affinity reads changed.
  for (int write = 1; write <= 5; ++write) {
    cache.meta.resource_version = std::to_string(write);
    cache.phase = write == 1 ? PodPhase::kPending : PodPhase::kRunning;
    f.s->OnPodUpdate(cache);
    f.clock.Advance(absl::Seconds(30));
    f.RunUntilIdle();
  }
  CHECK(f.observer.attempts.size() == attempts);  // not tried again
  CHECK(f.s->queue().UnschedulableKeys() == std::vector<std::string>{"default/web"});

  // Its owner relabels it: now it is the cache web asks for.
  cache.meta.labels["app"] = "cache";
  f.s->OnPodUpdate(cache);
  f.clock.Advance(absl::Seconds(10));
  f.RunUntilIdle();
  CHECK(f.observer.scheduled.at("default/web") == "n1");
}

TEST_CASE("a pod parked for an unbound Immediate claim is retried when the claim binds", "[scheduler][volumes]") {
  Fixture f;
  PersistentVolumeClaim claim;
  claim.meta.name = "data";
  claim.meta.namespace_ = "default";
  f.s->OnClusterObject(claim);  // no class: the PV controller binds it (Immediate)
  Pod pod = PodBuilder("db").Requests("cpu:1").Build();
  pod.volumes.push_back({.name = "data", .claim_name = "data"});
  f.s->OnPodAdd(pod);
  f.RunUntilIdle();
  CHECK(f.observer.failures.at("default/db") ==
        "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.");
  // Parked: time alone (within the 5-minute unschedulable wait) does not bring it back, nor
  // does an unrelated kind of event.
  f.clock.Advance(absl::Minutes(1));
  f.s->OnCustomObjectChange();
  f.RunUntilIdle();
  CHECK(f.observer.attempts == std::vector<std::string>{"default/db:unschedulable"});
  // The PV controller binds the claim: the storage event retries the pod, and it binds.
  PersistentVolume volume;
  volume.meta.name = "pv-1";
  f.s->OnClusterObject(volume);
  claim.volume_name = "pv-1";
  claim.phase_bound = true;
  f.s->OnClusterObject(claim);
  f.clock.Advance(absl::Seconds(30));  // past the backoff, well within the unschedulable wait
  f.RunUntilIdle();
  REQUIRE(f.api.binds.size() == 1);
  CHECK(f.api.binds[0].first == "default/db");
}

TEST_CASE("a pending pod that stops decoding leaves the queue and is reported, naming the field", "[scheduler]") {
  Fixture f;
  Pod pod = GpuPod("a");
  pod.meta.uid = "u1";
  f.s->OnPodAdd(pod);
  REQUIRE(f.s->queue().Contains("default/a"));
  // An update the scheduler cannot read (say, a toleration operator of a newer Kubernetes): its
  // older copy must not be placed instead.
  const absl::Status problem = absl::InvalidArgumentError(
      "Pod default/a: spec.tolerations[0].operator: unknown operator \"Lt\" (want Equal or Exists)");
  Pod identity;
  identity.meta.name = "a";
  identity.meta.namespace_ = "default";
  identity.meta.uid = "u1";
  identity.scheduler_name = "tessel";
  f.s->OnPodUndecodable(identity, problem);
  CHECK_FALSE(f.s->queue().Contains("default/a"));
  REQUIRE(f.observer.failures.contains("default/a"));
  CHECK(f.observer.kinds.at("default/a") == FailureKind::kError);
  CHECK_THAT(f.observer.failures.at("default/a"),
             Catch::Contains("cannot be scheduled as written") && Catch::Contains("spec.tolerations[0].operator"));
  f.RunUntilIdle();
  CHECK(f.api.binds.empty());
  // Another scheduler's pod is not ours to report.
  identity.meta.name = "b";
  identity.scheduler_name = "default-scheduler";
  f.s->OnPodUndecodable(identity, problem);
  CHECK_FALSE(f.observer.failures.contains("default/b"));
  // Fixed by a later update: scheduled as usual.
  f.s->OnPodUpdate(pod);
  f.RunUntilIdle();
  REQUIRE(f.api.binds.size() == 1);
  CHECK(f.api.binds[0].first == "default/a");
}

}  // namespace scheduler_test
}  // namespace tessel
