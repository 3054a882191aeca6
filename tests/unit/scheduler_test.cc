// The scheduling core end to end, with the in-tree default profile plus a scripted "Gate" plugin
// at Reserve and Permit, a fake ClusterApi and a manual clock: Permit wait/allow/reject/expiry,
// Reserve failure, Bind failure with rollback, the nominated node, and a pod updated during its
// own cycle (run under ASan in the sanitizer build).
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <map>

#include "builders.h"
#include "plugins/registry.h"
#include "scheduler/core/scheduler.h"

namespace tessel {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;

// What the Gate plugin answers; tests set it before each cycle.
struct GateScript {
  Status reserve = Status::Ok();
  PermitResult permit{Status::Ok(), absl::ZeroDuration()};
  std::vector<std::string> reserved;    // "key@node"
  std::vector<std::string> unreserved;  // "key@node"
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
    return script_->permit;
  }

 private:
  GateScript* script_;
};

// Binds succeed unless `next_bind` says otherwise (consumed by the next Bind).
class FakeApi final : public ClusterApi {
 public:
  absl::Status Bind(const Pod& pod, const std::string& node, const StringMap&) override {
    binds.emplace_back(pod.Key(), node);
    absl::Status st = next_bind;
    next_bind = absl::OkStatus();
    if (st.ok() && on_bind) on_bind(pod, node);
    return st;
  }
  absl::Status Evict(const Pod& pod, std::string_view) override {
    evictions.push_back(pod.Key());
    return absl::OkStatus();
  }
  void RecordEvent(const Pod&, std::string_view, std::string_view, std::string_view) override {}

  absl::Status next_bind = absl::OkStatus();
  std::function<void(const Pod&, const std::string&)> on_bind;
  std::vector<std::pair<std::string, std::string>> binds;
  std::vector<std::string> evictions;
};

class RecordingObserver final : public SchedulingObserver {
 public:
  void PodScheduled(const Pod& pod, const std::string& node) override {
    scheduled[pod.Key()] = node;
  }
  void PodUnschedulable(const Pod& pod, FailureKind, const std::string& message) override {
    failures[pod.Key()] = message;
    if (on_unschedulable) on_unschedulable(pod);
  }
  void AttemptFinished(const Pod& pod, std::string_view result, absl::Duration) override {
    attempts.push_back(pod.Key() + ":" + std::string(result));
  }
  std::function<void(const Pod&)> on_unschedulable;
  std::map<std::string, std::string> scheduled;
  std::map<std::string, std::string> failures;
  std::vector<std::string> attempts;
};

constexpr const char* kGateConfig = R"(
profiles:
- schedulerName: tessel
  plugins:
    reserve: {enabled: [{name: Gate}]}
    permit: {enabled: [{name: Gate}]}
)";

struct Fixture {
  explicit Fixture(int nodes = 3, std::string_view node_size = "cpu:8,memory:32Gi,nvidia.com/gpu:8")
      : cache(&clock) {
    registry = InTreeRegistry();
    REQUIRE(registry
                .Register("Gate",
                          [this](const YAML::Node&, Handle&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
                            return std::unique_ptr<Plugin>(std::make_unique<Gate>(&script));
                          })
                .ok());
    auto parsed = ParseSchedulerConfig(kGateConfig);
    REQUIRE(parsed.ok());
    config = *std::move(parsed);
    auto made = Scheduler::New(SchedulerParams{.registry = &registry,
                                               .config = &config,
                                               .defaults = &DefaultProfile(),
                                               .cache = &cache,
                                               .clock = &clock,
                                               .api = &api,
                                               .observer = &observer});
    REQUIRE(made.ok());
    s = *std::move(made);
    for (int i = 1; i <= nodes; ++i) {
      s->OnNodeAdd(NodeBuilder("n" + std::to_string(i)).Allocatable(node_size).Build());
    }
    // Binds are confirmed the way an informer would confirm them.
    api.on_bind = [this](const Pod& pod, const std::string& node) {
      Pod bound = pod;
      bound.node_name = node;
      s->OnPodUpdate(std::move(bound));
    };
  }
  int64_t RunUntilIdle() {
    const std::atomic<bool> never{false};
    return s->Run(never);
  }

  ManualClock clock;
  Cache cache;
  FakeApi api;
  RecordingObserver observer;
  GateScript script;
  Registry registry;
  SchedulerConfig config;
  std::unique_ptr<Scheduler> s;
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

}  // namespace
}  // namespace tessel
