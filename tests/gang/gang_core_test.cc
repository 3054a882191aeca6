// Gangs in the scheduling core: one queue entry per gang, all-or-nothing assume and bind,
// competing gangs, minMember < size, gangs that never fit, missing PodGroups, timeouts on an
// injected clock, rollback after a bind failure with a fake binder, and a seeded property over
// random clusters and gang mixes: no partial gang is ever bound.
#include <catch2/catch.hpp>

#include <random>

#include "nlohmann/json.hpp"
#include "harness/core_harness.h"
#include "plugins/registry.h"
#include "scheduler/testing/builders.h"
#include "scheduler/core/scheduler.h"

namespace tessel::gang {
namespace gang_core_test {

using nlohmann::json;
using testing::NodeBuilder;
using testing::PodBuilder;

// A Reserve plugin that runs a test's hook (e.g. an informer update racing the gang's cycle).
class Touch final : public ReservePlugin {
 public:
  explicit Touch(std::function<void(const Pod&)>* hook) : hook_(hook) {}
  std::string_view Name() const override { return "Touch"; }
  Status Reserve(CycleState&, const Pod& pod, const std::string&) override {
    if (*hook_) std::exchange(*hook_, nullptr)(pod);
    return Status::Ok();
  }
  void Unreserve(CycleState&, const Pod&, const std::string&) override {}

 private:
  std::function<void(const Pod&)>* hook_;
};

class Recorder final : public SchedulingObserver, public GangStatusSink {
 public:
  void PodScheduled(const Pod& pod, const std::string& node) override { scheduled[pod.Key()] = node; }
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override {
    unschedulable[pod.Key()] = message;
    kinds[pod.Key()] = kind;
    nominated[pod.Key()] = pod.nominated_node_name;  // what the status patch would write
    ++reports;
  }
  void NominationCleared(const Pod& pod) override { cleared.push_back(pod.Key()); }
  void GangStatusChanged(const GangId& id, const GangStatusUpdate& update) override {
    status[id.Describe()] = update;
  }
  std::map<std::string, std::string> scheduled;
  std::map<std::string, std::string> unschedulable;
  std::map<std::string, FailureKind> kinds;
  std::map<std::string, std::string> nominated;
  std::vector<std::string> cleared;
  int reports = 0;
  std::map<std::string, GangStatusUpdate> status;
};

// The core harness (tests/harness/core_harness.h) with one cycle at a time (parallelism 1), binds
// that the test answers (and nothing confirms), and the recorder as observer and PodGroup sink.
struct Core {
  Recorder rec;
  std::function<void(const Pod&)> on_reserve;  // run once by the Touch plugin
  testing::CoreHarness harness;
  testing::FakeClusterApi& api = harness.api;
  ManualClock& clock = harness.clock;
  Cache& cache = harness.cache;
  std::unique_ptr<Scheduler>& s = harness.s;
  explicit Core(bool with_touch = false, std::string config_yaml = "") : harness(Options(with_touch, std::move(config_yaml))) {}
  testing::CoreHarnessOptions Options(bool with_touch, std::string config_yaml) {
    testing::CoreHarnessOptions o{.config_yaml = std::move(config_yaml),
                                  .parallelism = 1,
                                  .observer = &rec,
                                  .gang_status = &rec,
                                  .start = absl::FromUnixSeconds(1'700'000'000),
                                  .confirm_binds = false};
    if (with_touch) {
      o.config_yaml = "profiles:\n- schedulerName: tessel\n  plugins:\n    reserve: {enabled: [{name: Touch}]}\n";
      o.plugins.emplace_back("Touch",
                             [this](const YAML::Node&, Handle&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
                               return std::unique_ptr<Plugin>(std::make_unique<Touch>(&on_reserve));
                             });
    }
    return o;
  }
  void GpuNodes(int n, int gpus, std::string prefix = "gpu-") {
    for (int i = 0; i < n; ++i) {
      s->OnNodeAdd(NodeBuilder(StrCat(prefix, i))
                       .Allocatable(StrCat("cpu:64,memory:512Gi,nvidia.com/gpu:", gpus))
                       .Label("kubernetes.io/hostname", StrCat(prefix, i))
                       .Build());
    }
  }
  // Where the bound or assumed pods are, by node.
  std::map<std::string, std::vector<std::string>> PodsByNode() {
    std::map<std::string, std::vector<std::string>> out;
    for (const std::string& n : cache.NodeNames()) {
      const std::optional<NodeInfo> info = cache.GetNodeInfo(n);
      for (const PodRef& p : info->pods()) out[n].push_back(p->meta.name);
    }
    return out;
  }
  void PodGroup(std::string name, int min, std::optional<int> timeout = std::nullopt) {
    json pg = {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
               {"kind", "PodGroup"},
               {"metadata", {{"name", name}, {"namespace", "default"}}},
               {"spec", {{"minMember", min}}}};
    if (timeout) pg["spec"]["scheduleTimeoutSeconds"] = *timeout;
    REQUIRE(harness.ApplyGangObject(pg).value());
  }
  // A team queue over the default namespace with a nominal GPU quota.
  void Quota(int gpus) {
    json queue = {{"apiVersion", "tessel.io/v1alpha1"},
                  {"kind", "Queue"},
                  {"metadata", {{"name", "team-a"}}},
                  {"spec", {{"namespaces", {"default"}}, {"nominalQuota", {{"nvidia.com/gpu", StrCat(gpus)}}}}}};
    REQUIRE(harness.ApplyQueueObject(queue).ok());
  }
  Pod Member(std::string group, int i, std::string_view requests, int64_t created) {
    Pod p = PodBuilder(StrCat(group, "-", i)).Requests(requests).Created(created).Build();
    p.meta.labels["scheduling.x-k8s.io/pod-group"] = group;
    return p;
  }
  // The member as the informer reports it once bound (to the node its bind named), in `phase`.
  Pod BoundMember(std::string group, int i, std::string_view requests, int64_t created,
                  PodPhase phase = PodPhase::kPending) {
    Pod p = Member(std::move(group), i, requests, created);
    p.node_name = api.bound.at(p.Key());
    p.phase = phase;
    return p;
  }
  // Runs cycles until the queue has nothing ready; returns how many ran (at most 1000).
  int Run() { return harness.ScheduleAll(1000); }
  int BoundOf(std::string_view group) {
    int n = 0;
    for (const auto& [key, node] : api.bound) n += key.rfind(StrCat("default/", group, "-"), 0) == 0;
    return n;
  }
};

TEST_CASE("competing gangs, pods interleaved: exactly one placed whole, neither partially",
          "[gang][core]") {
  Core c;
  c.GpuNodes(3, 8);
  c.PodGroup("a", 4);
  c.PodGroup("b", 4);
  for (int i = 0; i < 4; ++i) {
    c.s->OnPodAdd(c.Member("a", i, "cpu:1,nvidia.com/gpu:4", 100 + 2 * i));
    c.s->OnPodAdd(c.Member("b", i, "cpu:1,nvidia.com/gpu:4", 101 + 2 * i));
  }
  // One queue entry per gang.
  CHECK(c.s->queue().Stats().active == 2);
  c.Run();
  CHECK(c.BoundOf("a") == 4);
  CHECK(c.BoundOf("b") == 0);
  int leftover_whole = 0;
  for (const std::string& n : c.cache.NodeNames()) {
    leftover_whole += c.cache.GetNodeInfo(n)->gpus().whole_free_devices() == 8;
  }
  CHECK(leftover_whole == 1);
  CHECK(c.rec.unschedulable.at("default/b-0") ==
        "PodGroup default/b needs 4 × 4 GPUs; 1 node can host 2 members");
  CHECK(c.rec.status.at("PodGroup default/a").phase == gang::GangPhase::kScheduled);
  CHECK(c.rec.status.at("PodGroup default/b").reason == gang::GangReason::kUnschedulable);

  SECTION("when the first gang leaves, the second is placed whole") {
    for (int i = 0; i < 4; ++i) c.s->OnPodDelete(StrCat("default/a-", i));
    c.clock.Advance(absl::Seconds(30));
    c.Run();
    CHECK(c.BoundOf("b") == 4);
  }
}

TEST_CASE("minMember smaller than the group: minMember first, the rest as capacity allows",
          "[gang][core]") {
  Core c;
  c.GpuNodes(2, 8);
  c.PodGroup("elastic", 4);
  for (int i = 0; i < 6; ++i) c.s->OnPodAdd(c.Member("elastic", i, "cpu:1,nvidia.com/gpu:4", 100 + i));
  c.Run();
  CHECK(c.BoundOf("elastic") == 4);
  CHECK(c.rec.unschedulable.at("default/elastic-4") ==
        "PodGroup default/elastic needs 1 more × 4 GPUs; no node can host one: 0/2 nodes are "
        "available: 2 Insufficient nvidia.com/gpu.");
  c.GpuNodes(1, 8, "extra-");
  c.clock.Advance(absl::Seconds(30));
  c.Run();
  CHECK(c.BoundOf("elastic") == 6);
}

TEST_CASE("a gang that can never fit is never partly bound", "[gang][core]") {
  Core c;
  c.GpuNodes(3, 8);
  c.PodGroup("huge", 4);
  for (int i = 0; i < 4; ++i) c.s->OnPodAdd(c.Member("huge", i, "cpu:1,nvidia.com/gpu:8", 100 + i));
  for (int round = 0; round < 5; ++round) {
    c.Run();
    c.s->queue().MoveAllToActive();
    c.clock.Advance(absl::Seconds(20));
  }
  CHECK(c.api.bound.empty());
  CHECK(c.api.bind_attempts.empty());
  CHECK(c.cache.PodCount() == 0);
  CHECK(c.rec.unschedulable.at("default/huge-3") ==
        "PodGroup default/huge needs 4 × 8 GPUs; 3 nodes can host 3 members");
}

TEST_CASE("a pod whose PodGroup does not exist waits quietly, then schedules", "[gang][core]") {
  Core c;
  c.GpuNodes(1, 8);
  for (int i = 0; i < 2; ++i) c.s->OnPodAdd(c.Member("late", i, "cpu:1,nvidia.com/gpu:1", 100 + i));
  c.Run();
  CHECK(c.api.bound.empty());
  CHECK(c.rec.unschedulable.empty());  // no events
  CHECK(c.rec.status.empty());         // nothing to write to
  c.PodGroup("late", 2);
  c.Run();
  CHECK(c.BoundOf("late") == 2);
}

TEST_CASE("members not all created yet: the gang waits for them without events", "[gang][core]") {
  Core c;
  c.GpuNodes(1, 8);
  c.PodGroup("grow", 3);
  c.s->OnPodAdd(c.Member("grow", 0, "cpu:1,nvidia.com/gpu:1", 100));
  c.Run();
  CHECK(c.api.bound.empty());
  CHECK(c.rec.unschedulable.empty());
  CHECK(c.rec.status.at("PodGroup default/grow").message == "PodGroup default/grow has 1 of 3 members");
  c.s->OnPodAdd(c.Member("grow", 1, "cpu:1,nvidia.com/gpu:1", 101));
  c.s->OnPodAdd(c.Member("grow", 2, "cpu:1,nvidia.com/gpu:1", 102));
  c.clock.Advance(absl::Seconds(30));
  c.Run();
  CHECK(c.BoundOf("grow") == 3);
}

TEST_CASE("scheduleTimeoutSeconds marks the PodGroup failed; pods stay queued and retry",
          "[gang][core]") {
  Core c;
  c.GpuNodes(1, 8);
  c.PodGroup("slow", 2, 30);
  for (int i = 0; i < 2; ++i) c.s->OnPodAdd(c.Member("slow", i, "cpu:1,nvidia.com/gpu:8", 100 + i));
  c.Run();
  CHECK(c.rec.status.at("PodGroup default/slow").phase == gang::GangPhase::kPending);
  c.clock.Advance(absl::Seconds(29));
  c.Run();
  CHECK(c.rec.status.at("PodGroup default/slow").phase == gang::GangPhase::kPending);
  c.clock.Advance(absl::Seconds(2));
  c.Run();
  const GangStatusUpdate& failed = c.rec.status.at("PodGroup default/slow");
  CHECK(failed.phase == gang::GangPhase::kFailed);
  CHECK(failed.reason == gang::GangReason::kScheduleTimeout);
  CHECK(failed.message ==
        "not placed within scheduleTimeoutSeconds (30s): PodGroup default/slow needs 2 × 8 GPUs; "
        "1 node can host 1 member");
  CHECK(c.api.bound.empty());
  CHECK(c.s->queue().Stats().unschedulable + c.s->queue().Stats().backoff +
            c.s->queue().Stats().active == 1);
  // Capacity arrives: the gang is retried and placed.
  c.GpuNodes(1, 8, "extra-");
  c.clock.Advance(absl::Seconds(30));
  c.Run();
  CHECK(c.BoundOf("slow") == 2);
  CHECK(c.rec.status.at("PodGroup default/slow").phase == gang::GangPhase::kScheduled);
}

TEST_CASE("a replay's virtual clock reaches scheduleTimeoutSeconds: NextWakeup includes it",
          "[gang][core]") {
  // Nothing else will ever happen (no capacity arrives): the only thing to wait for is the
  // gang's timeout, so a replay that advances its clock to NextWakeup() must reach it.
  Core c;
  c.GpuNodes(1, 8);
  c.PodGroup("never", 2, 600);
  for (int i = 0; i < 2; ++i) c.s->OnPodAdd(c.Member("never", i, "cpu:1,nvidia.com/gpu:8", 100 + i));
  const absl::Time start = c.clock.Now();
  for (int step = 0; step < 50; ++step) {
    c.Run();
    std::optional<absl::Time> next = c.s->NextWakeup();
    if (!next.has_value()) break;
    REQUIRE(*next <= start + absl::Seconds(600));  // never past the timeout
    c.clock.Set(std::max(*next, c.clock.Now()));
  }
  const GangStatusUpdate& st = c.rec.status.at("PodGroup default/never");
  CHECK(st.phase == gang::GangPhase::kFailed);
  CHECK(st.reason == gang::GangReason::kScheduleTimeout);
  CHECK(c.clock.Now() - start >= absl::Seconds(600));
  CHECK(c.api.bound.empty());
}

TEST_CASE("the PodGroup follows its members' pod phases: Running, Finished, Failed",
          "[gang][core]") {
  Core c;
  c.GpuNodes(2, 8);
  c.PodGroup("job", 3);
  for (int i = 0; i < 4; ++i) c.s->OnPodAdd(c.Member("job", i, "cpu:1,nvidia.com/gpu:2", 100 + i));
  c.Run();
  REQUIRE(c.BoundOf("job") == 4);
  const GangStatusUpdate& st = c.rec.status.at("PodGroup default/job");
  CHECK(st.phase == gang::GangPhase::kScheduled);
  // The informer reports the members as the kubelet moves them along.
  auto observe = [&](int i, PodPhase phase) {
    c.s->OnPodUpdate(c.BoundMember("job", i, "cpu:1,nvidia.com/gpu:2", 100 + i, phase));
  };
  observe(0, PodPhase::kRunning);
  observe(1, PodPhase::kRunning);
  CHECK(c.rec.status.at("PodGroup default/job").phase == gang::GangPhase::kScheduled);  // 2 of minMember 3
  CHECK(c.rec.status.at("PodGroup default/job").running == 2);
  observe(2, PodPhase::kRunning);
  CHECK(c.rec.status.at("PodGroup default/job").phase == gang::GangPhase::kRunning);
  CHECK(c.rec.status.at("PodGroup default/job").running == 3);
  CHECK(c.rec.status.at("PodGroup default/job").scheduled == 4);

  SECTION("members succeed: Finished once minMember have") {
    for (int i = 0; i < 3; ++i) {
      observe(i, PodPhase::kSucceeded);
      c.s->OnPodDelete(StrCat("default/job-", i));  // finished pods leave the informer
    }
    const GangStatusUpdate& done = c.rec.status.at("PodGroup default/job");
    CHECK(done.phase == gang::GangPhase::kFinished);
    CHECK(done.succeeded == 3);
    CHECK(done.running == 0);
  }
  SECTION("a member fails: Failed") {
    observe(1, PodPhase::kFailed);
    const GangStatusUpdate& failed = c.rec.status.at("PodGroup default/job");
    CHECK(failed.phase == gang::GangPhase::kFailed);
    CHECK(failed.failed == 1);
    CHECK(failed.running == 2);
  }
  SECTION("a running member deleted: no longer counted") {
    c.s->OnPodDelete("default/job-2");
    CHECK(c.rec.status.at("PodGroup default/job").running == 2);
    CHECK(c.rec.status.at("PodGroup default/job").phase == gang::GangPhase::kScheduled);
  }
}

TEST_CASE("Jobs watched: pods seen before their Job wait for it, then go as one gang or alone",
          "[gang][core]") {
  Core c;
  c.GpuNodes(2, 8);
  c.s->OnJobsWatched();
  auto job_pod = [&](std::string job, int i) {
    Pod p = PodBuilder(StrCat(job, "-", i)).Requests("cpu:1,nvidia.com/gpu:4").Created(100 + i).Build();
    p.meta.owner_references.push_back(
        OwnerReference{.api_version = "batch/v1", .kind = "Job", .name = job, .controller = true});
    return p;
  };
  auto job = [&](std::string name, std::optional<int> min_available) {
    json j = {{"apiVersion", "batch/v1"}, {"kind", "Job"},
              {"metadata", {{"name", name}, {"namespace", "default"}}}};
    if (min_available) j["metadata"]["annotations"]["tessel.io/min-available"] = StrCat(*min_available);
    REQUIRE(c.harness.ApplyGangObject(j).value());
  };
  // 3 of the 4 members of a gang Job are seen before their Job: none is placed alone.
  for (int i = 0; i < 3; ++i) c.s->OnPodAdd(job_pod("train", i));
  c.Run();
  CHECK(c.BoundOf("train") == 0);
  CHECK(c.rec.unschedulable.empty());  // waiting quietly
  job("train", 4);
  c.s->OnPodAdd(job_pod("train", 3));
  c.Run();
  CHECK(c.BoundOf("train") == 4);
  // A Job without min-available: its pods are ordinary once it is seen.
  c.GpuNodes(1, 8, "more-");
  c.s->OnPodAdd(job_pod("plain", 0));
  c.Run();
  CHECK(c.BoundOf("plain") == 0);
  job("plain", std::nullopt);
  c.Run();
  CHECK(c.BoundOf("plain") == 1);
}

TEST_CASE("a failed bind is retried, then the gang is rolled back", "[gang][core]") {
  Core c;
  c.GpuNodes(1, 8);
  c.PodGroup("ring", 4);
  for (int i = 0; i < 4; ++i) c.s->OnPodAdd(c.Member("ring", i, "cpu:1,nvidia.com/gpu:2", 100 + i));

  SECTION("a transient failure is retried and the gang binds") {
    c.api.bind_failures["default/ring-2"] = 2;
    c.Run();
    CHECK(c.BoundOf("ring") == 4);
    CHECK(c.api.bind_attempts.at("default/ring-2") == 3);
    CHECK(c.api.evictions.empty());
  }
  SECTION("a persistent failure evicts the bound members and requeues the gang") {
    c.api.bind_failures["default/ring-2"] = -1;
    CHECK(c.s->ScheduleOne());
    CHECK(c.api.bind_attempts.at("default/ring-2") == 3);
    CHECK(c.api.bound.empty());
    std::vector<std::string> evicted = c.api.evictions;
    std::sort(evicted.begin(), evicted.end());
    CHECK(evicted == std::vector<std::string>{"default/ring-0", "default/ring-1", "default/ring-3"});
    CHECK_FALSE(c.cache.NodeOf("default/ring-2").has_value());  // forgotten, resources free
    CHECK(c.rec.status.at("PodGroup default/ring").reason == gang::GangReason::kBindFailed);
    CHECK_THAT(c.rec.unschedulable.at("default/ring-0"),
               Catch::Contains("binding default/ring-2 failed ("));
    // The evicted pods are deleted (a Job would recreate them); the gang comes back whole.
    for (const std::string& key : evicted) c.s->OnPodDelete(key);
    c.api.bind_failures.clear();
    for (int i : {0, 1, 3}) c.s->OnPodAdd(c.Member("ring", i + 10, "cpu:1,nvidia.com/gpu:2", 200 + i));
    c.clock.Advance(absl::Seconds(30));
    c.Run();
    CHECK(c.BoundOf("ring") == 4);
  }
}

// Crash-consistent gangs (issue 37, defect 12): a gang that holds fewer than minMember members
// placed, with no plan of this process in flight, lets them go: at once after a restart when the
// rest do not fit, else once its timeout (scheduleTimeoutSeconds, or the default) passes.
TEST_CASE("a gang left half bound by a crash is rolled back when the rest do not fit", "[gang][core][stranded]") {
  Core c;
  c.GpuNodes(1, 8);
  c.PodGroup("train", 4);
  // The scheduler died with train-0 bound: the restarted one sees it bound, the rest pending.
  Pod bound = c.Member("train", 0, "cpu:1,nvidia.com/gpu:4", 100);
  bound.node_name = "gpu-0";
  c.s->OnPodAdd(bound);
  for (int i = 1; i < 4; ++i) c.s->OnPodAdd(c.Member("train", i, "cpu:1,nvidia.com/gpu:4", 100 + i));

  SECTION("no room for the rest: the bound member is evicted with a reason") {
    c.Run();
    CHECK(c.api.evictions == std::vector<std::string>{"default/train-0"});
    REQUIRE(c.api.events.size() == 1);
    CHECK(c.api.events[0] ==
          "default/train-0 Warning GangRolledBack: PodGroup default/train holds 1 of 4 members placed since before the "
          "scheduler started, and the rest do not fit; rolled back so that no half-placed gang keeps its nodes");
    const GangStatusUpdate& st = c.rec.status.at("PodGroup default/train");
    CHECK(st.reason == gang::GangReason::kRolledBack);
    CHECK(c.api.bound.empty());
    // The member goes (its Job would recreate it); the gang is whole again and waits for room.
    c.s->OnPodDelete("default/train-0");
    c.s->OnPodAdd(c.Member("train", 4, "cpu:1,nvidia.com/gpu:4", 200));
    c.GpuNodes(1, 8, "extra-");
    c.clock.Advance(absl::Minutes(6));
    c.Run();
    CHECK(c.BoundOf("train") == 4);
    CHECK(c.api.evictions.size() == 1);
  }
  SECTION("room for the rest: the gang is completed, nothing evicted") {
    c.GpuNodes(1, 8, "extra-");
    c.Run();
    CHECK(c.BoundOf("train") == 3);
    CHECK(c.api.evictions.empty());
    CHECK(c.rec.status.at("PodGroup default/train").phase == gang::GangPhase::kScheduled);
  }
}

TEST_CASE("a gang below minMember is rolled back once its timeout passes, the default when unset",
          "[gang][core][stranded]") {
  Core c;
  c.GpuNodes(2, 8);
  c.PodGroup("pair", 2);  // no scheduleTimeoutSeconds: kDefaultStrandedTimeout
  for (int i = 0; i < 2; ++i) c.s->OnPodAdd(c.Member("pair", i, "cpu:1,nvidia.com/gpu:8", 100 + i));
  c.Run();
  REQUIRE(c.BoundOf("pair") == 2);
  for (int i = 0; i < 2; ++i) {  // the informer confirms both binds
    c.s->OnPodUpdate(c.BoundMember("pair", i, "cpu:1,nvidia.com/gpu:8", 100 + i));
  }
  // pair-1 is lost with its node's room taken by another pod; its replacement cannot fit.
  const std::string lost_node = c.api.bound.at("default/pair-1");
  c.s->OnPodDelete("default/pair-1");
  c.s->OnPodAdd(PodBuilder("other").Requests("cpu:1,nvidia.com/gpu:8").Node(lost_node).Build());
  c.s->OnPodAdd(c.Member("pair", 2, "cpu:1,nvidia.com/gpu:8", 300));
  c.Run();
  CHECK(c.api.evictions.empty());  // placed by this scheduler: it waits for its timeout first
  const std::optional<absl::Time> wake = c.s->NextWakeup();
  REQUIRE(wake.has_value());
  CHECK(*wake <= c.clock.Now() + kDefaultStrandedTimeout);
  c.clock.Advance(kDefaultStrandedTimeout - absl::Seconds(1));
  c.Run();
  CHECK(c.api.evictions.empty());
  c.clock.Advance(absl::Seconds(1));
  c.Run();
  CHECK(c.api.evictions == std::vector<std::string>{"default/pair-0"});
  REQUIRE(c.api.events.size() == 1);
  CHECK_THAT(c.api.events[0], Catch::Contains("GangRolledBack: PodGroup default/pair holds 1 of 2 members placed and "
                                              "the rest did not fit within 600s (the default when "
                                              "spec.scheduleTimeoutSeconds is unset)"));
  CHECK(c.rec.status.at("PodGroup default/pair").reason == gang::GangReason::kRolledBack);
}

TEST_CASE("a gang whose missing members are gone for good is rolled back after its timeout; one whose member "
          "succeeded is not",
          "[gang][core][stranded]") {
  Core c;
  c.GpuNodes(2, 8);
  c.PodGroup("pair", 2);
  for (int i = 0; i < 2; ++i) c.s->OnPodAdd(c.Member("pair", i, "cpu:1,nvidia.com/gpu:8", 100 + i));
  c.Run();
  REQUIRE(c.BoundOf("pair") == 2);
  auto observed = [&](int i, PodPhase phase) {
    return c.BoundMember("pair", i, "cpu:1,nvidia.com/gpu:8", 100 + i, phase);
  };
  for (int i = 0; i < 2; ++i) c.s->OnPodUpdate(observed(i, PodPhase::kRunning));

  SECTION("deleted with no replacement: no attempt starts the wait, the timeout still passes") {
    c.s->OnPodDelete("default/pair-1");
    c.Run();
    CHECK(c.api.evictions.empty());
    const std::optional<absl::Time> wake = c.s->NextWakeup();
    REQUIRE(wake.has_value());
    CHECK(*wake <= c.clock.Now() + kDefaultStrandedTimeout);
    c.clock.Advance(kDefaultStrandedTimeout);
    c.Run();
    CHECK(c.api.evictions == std::vector<std::string>{"default/pair-0"});
    REQUIRE(c.api.events.size() == 1);
    CHECK_THAT(c.api.events[0], Catch::Contains("GangRolledBack: PodGroup default/pair holds 1 of 2 members placed"));
  }
  SECTION("succeeded: the gang did its work, nothing is evicted") {
    c.s->OnPodUpdate(observed(1, PodPhase::kSucceeded));
    c.Run();
    c.clock.Advance(2 * kDefaultStrandedTimeout);
    c.Run();
    CHECK(c.api.evictions.empty());
    CHECK(c.api.events.empty());
  }
}

// One admission path (issue 18): a bind's answer means the same for a gang member as for a single
// pod (scheduler_test.cc, "the bind's API answer decides the pod's fate"). AlreadyExists: the pod
// runs, where the informer will say; the cycle's own assumption is forgotten and the pod is not
// reported as scheduled by this bind (a gang member used to keep its assumption and be reported).
TEST_CASE("a gang member's bind answer is read as a single pod's", "[gang][core]") {
  struct Case {
    absl::Status answer;
    int attempts;      // binds sent for ring-2
    bool rolled_back;  // the other members evicted
    bool reported;     // the others reported scheduled (not when the replica may not write)
  };
  const std::vector<Case> cases = {
      {absl::AlreadyExistsError("pod default/ring-2 is already assigned to node \"gpu-0\""), 1, false, true},
      {absl::NotFoundError("pods \"ring-2\" not found"), 1, true, false},
      {absl::FailedPreconditionError("not the leader"), 1, false, false},
      {absl::UnavailableError("connection refused"), 3, true, false},
  };
  for (const Case& k : cases) {
    CAPTURE(k.answer.ToString());
    Core c;
    c.GpuNodes(1, 8);
    c.PodGroup("ring", 4);
    for (int i = 0; i < 4; ++i) c.s->OnPodAdd(c.Member("ring", i, "cpu:1,nvidia.com/gpu:2", 100 + i));
    c.api.bind_answers["default/ring-2"] = k.answer;
    CHECK(c.s->ScheduleOne());
    CHECK(c.api.bind_attempts.at("default/ring-2") == k.attempts);
    // Whatever the answer, this cycle's assumption of ring-2 is not kept.
    CHECK_FALSE(c.cache.NodeOf("default/ring-2").has_value());
    CHECK_FALSE(c.rec.scheduled.contains("default/ring-2"));
    CHECK(c.api.evictions.empty() != k.rolled_back);
    // The members whose binds were accepted are reported when the gang stands.
    CHECK(c.rec.scheduled.contains("default/ring-0") == k.reported);
  }
}

// Property: whatever the cluster, the gangs and the order their pods arrive in, every gang is
// either not bound at all or bound with at least minMember members, and nodes never overcommit.
TEST_CASE("a gang over its team's quota holds nothing, waits as QuotaExceeded, and goes whole "
          "when the quota grows", "[gang][core][quota]") {
  Core c;
  c.GpuNodes(2, 8);
  c.Quota(3);
  c.PodGroup("g", 4);
  for (int i = 0; i < 4; ++i) c.s->OnPodAdd(c.Member("g", i, "cpu:1,nvidia.com/gpu:1", 100 + i));
  c.Run();
  CHECK(c.BoundOf("g") == 0);
  for (int i = 0; i < 4; ++i) {
    const std::string key = StrCat("default/g-", i);
    CHECK(c.rec.kinds[key] == FailureKind::kQuotaExceeded);
    CHECK_THAT(c.rec.unschedulable[key], Catch::Contains("queue team-a: nvidia.com/gpu 4 of nominal 3"));
  }
  CHECK(c.rec.status["PodGroup default/g"].reason == gang::GangReason::kUnschedulable);
  for (const std::string& n : c.cache.NodeNames()) CHECK(c.cache.GetNodeInfo(n)->pods().empty());
  // Parked for the quota, not retried on a backoff timer: time alone changes nothing.
  const int reports = c.rec.reports;
  for (int step = 0; step < 4; ++step) {
    c.clock.Advance(absl::Seconds(15));
    c.Run();
  }
  CHECK(c.rec.reports == reports);
  CHECK(c.BoundOf("g") == 0);
  c.Quota(4);
  c.Run();
  CHECK(c.BoundOf("g") == 4);
}

TEST_CASE("a gang that fits its quota only with members on two kinds of node is placed (a "
          "time-sliced GPU's replica charges less than a whole GPU)", "[gang][core][quota]") {
  Core c;
  // One GPU in 2 time-sliced replicas (500 milli-GPU of quota each), and a node of 2 whole GPUs.
  c.s->OnNodeAdd(NodeBuilder("sliced")
                     .Allocatable("cpu:64,memory:512Gi")
                     .TimeSliced(1, 2)
                     .Label("kubernetes.io/hostname", "sliced")
                     .Build());
  c.GpuNodes(1, 2, "whole-");
  // 2 members of 2 GPUs: 1 GPU of quota on the time-sliced node, 2 on the whole one; 3 in all.
  // Each kind of node alone would be 2 or 4 GPUs, and the time-sliced node hosts one member.
  c.Quota(3);
  c.PodGroup("g", 2);
  for (int i = 0; i < 2; ++i) c.s->OnPodAdd(c.Member("g", i, "cpu:1,nvidia.com/gpu:2", 100 + i));
  c.Run();
  REQUIRE(c.BoundOf("g") == 2);
  std::set<std::string> nodes;
  for (const auto& [key, node] : c.api.bound) nodes.insert(node);
  CHECK(nodes == std::set<std::string>{"sliced", "whole-0"});
}

TEST_CASE("members beyond minMember that the quota refuses wait; the gang is placed, nothing spins",
          "[gang][core][quota]") {
  Core c;
  c.GpuNodes(2, 8);
  c.Quota(4);
  c.PodGroup("g", 4);
  for (int i = 0; i < 6; ++i) c.s->OnPodAdd(c.Member("g", i, "cpu:1,nvidia.com/gpu:1", 100 + i));
  CHECK(c.Run() < 10);
  CHECK(c.BoundOf("g") == 4);
  for (int i = 4; i < 6; ++i) CHECK(c.rec.kinds[StrCat("default/g-", i)] == FailureKind::kQuotaExceeded);
  const int reports = c.rec.reports;
  c.clock.Advance(absl::Seconds(30));
  CHECK(c.Run() == 0);
  CHECK(c.rec.reports == reports);
  c.Quota(6);
  c.Run();
  CHECK(c.BoundOf("g") == 6);
}

TEST_CASE("property: gangs within a team's quota: never over it, never partial, placed when it "
          "fits", "[gang][core][quota][property]") {
  std::mt19937_64 rng(9090);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int over_quota = 0, placed_alone = 0;
  for (int round = 0; round < 200; ++round) {
    Core c;
    c.GpuNodes(pick(1, 4), 8);
    const int quota = pick(1, 16);
    c.Quota(quota);
    const int gangs = pick(1, 3);
    std::vector<std::tuple<std::string, int, int>> groups;  // name, minMember, GPUs per member
    for (int g = 0; g < gangs; ++g) {
      const std::string name = StrCat("g", g);
      const int size = pick(1, 6), min = pick(1, size), gpus = pick(1, 4);
      groups.emplace_back(name, min, gpus);
      c.PodGroup(name, min);
      for (int i = 0; i < size; ++i) {
        c.s->OnPodAdd(c.Member(name, i, StrCat("cpu:1,nvidia.com/gpu:", gpus), pick(0, 1000)));
      }
    }
    for (int step = 0; step < 3; ++step) {
      c.Run();
      c.clock.Advance(absl::Seconds(15));
    }
    int used = 0;
    for (const auto& [name, min, gpus] : groups) {
      const int bound = c.BoundOf(name);
      INFO("round " << round << " gang " << name << " min " << min << " bound " << bound);
      REQUIRE((bound == 0 || bound >= min));
      used += bound * gpus;
    }
    INFO("round " << round << " quota " << quota << " used " << used);
    REQUIRE(used <= quota);
    // A lone gang whose minMember fits the quota (and the first node) is placed.
    const auto& [name, min, gpus] = groups.front();
    if (gangs == 1 && min * gpus <= quota && min * gpus <= 8) {
      CHECK(c.BoundOf(name) >= min);
      ++placed_alone;
    }
    over_quota += gangs == 1 && min * gpus > quota;
  }
  CHECK(placed_alone > 20);
  CHECK(over_quota > 10);
}

TEST_CASE("property: no partial gang is ever bound", "[gang][core][property]") {
  std::mt19937_64 rng(4242);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int placed_gangs = 0, refused_gangs = 0;
  for (int round = 0; round < 200; ++round) {
    Core c;
    const int nodes = pick(1, 5);
    for (int i = 0; i < nodes; ++i) {
      c.s->OnNodeAdd(NodeBuilder(StrCat("n-", i))
                         .Allocatable(StrCat("cpu:", pick(8, 32), ",memory:64Gi,nvidia.com/gpu:",
                                             std::vector<int>{0, 4, 8}[pick(0, 2)]))
                         .Build());
    }
    const int gangs = pick(1, 4);
    std::vector<std::pair<std::string, int>> groups;  // name, minMember
    std::vector<Pod> pods;
    for (int g = 0; g < gangs; ++g) {
      const std::string name = StrCat("g", g);
      const int size = pick(1, 6);
      const int min = pick(1, size);
      groups.emplace_back(name, min);
      if (pick(0, 4) > 0) c.PodGroup(name, min);  // sometimes the PodGroup never appears
      const int gpus = pick(0, 4);
      const std::string req = gpus > 0 ? StrCat("cpu:1,nvidia.com/gpu:", gpus) : StrCat("cpu:", pick(1, 8));
      for (int i = 0; i < size; ++i) pods.push_back(c.Member(name, i, req, pick(0, 1000)));
    }
    std::shuffle(pods.begin(), pods.end(), rng);
    if (pick(0, 1) == 1) c.api.bind_failures[pods.front().Key()] = pick(0, 1) == 1 ? -1 : 1;
    for (Pod& p : pods) c.s->OnPodAdd(std::move(p));
    for (int step = 0; step < 4; ++step) {
      c.Run();
      c.clock.Advance(absl::Seconds(15));
    }
    for (const auto& [name, min] : groups) {
      const int bound = c.BoundOf(name);
      INFO("round " << round << " gang " << name << " min " << min << " bound " << bound);
      REQUIRE((bound == 0 || bound >= min));
      (bound > 0 ? placed_gangs : refused_gangs)++;
    }
    for (const std::string& n : c.cache.NodeNames()) {
      auto info = c.cache.GetNodeInfo(n);
      REQUIRE(info->requested().milli_cpu <= info->allocatable().milli_cpu);
      REQUIRE(info->gpus().unplaced_milli() == 0);
      REQUIRE(info->gpus().CheckInvariants().empty());
    }
  }
  CHECK(placed_gangs > 50);
  CHECK(refused_gangs > 50);
}

// A preemption for a more important pod clears the nominations of a gang's members on its node,
// in every copy the gang reads: the gang's next failure does not write them back.
TEST_CASE("a preemption clears a lower-priority gang's nominations on its node", "[gang][core][preemption]") {
  Core c;
  c.GpuNodes(1, 8);
  // A pod preempted earlier, still terminating: the gang nominated to gpu-0 waits for it.
  Pod leaving = PodBuilder("leaving").Requests("cpu:1,nvidia.com/gpu:8").Priority(1).Node("gpu-0").Build();
  leaving.meta.deletion_timestamp = absl::FromUnixSeconds(1);
  c.s->OnPodAdd(leaving);
  c.PodGroup("g", 2);
  for (int i = 0; i < 2; ++i) {
    Pod m = c.Member("g", i, "cpu:1,nvidia.com/gpu:2", 100 + i);
    m.priority = 10;
    m.nominated_node_name = "gpu-0";  // as an earlier leader left it
    c.s->OnPodAdd(m);
  }
  c.Run();
  REQUIRE(c.s->NominatedNodeOf("default/g-1") == "gpu-0");
  c.s->OnPodAdd(PodBuilder("high").Requests("cpu:1,nvidia.com/gpu:6").Priority(100).Build());
  c.Run();
  REQUIRE(c.s->NominatedNodeOf("default/high") == "gpu-0");
  CHECK(c.s->NominatedNodeOf("default/g-0").empty());
  CHECK(c.s->NominatedNodeOf("default/g-1").empty());
  std::vector<std::string> cleared = c.rec.cleared;
  std::sort(cleared.begin(), cleared.end());
  CHECK(cleared == std::vector<std::string>{"default/g-0", "default/g-1"});
  // The gang tries again (its victim's room is high's now) and is reported without them.
  c.rec.nominated.clear();
  c.s->OnPodDelete("default/leaving");
  for (int i = 0; i < 3; ++i) {
    c.Run();
    c.clock.Advance(absl::Seconds(30));
  }
  REQUIRE(c.rec.nominated.contains("default/g-1"));
  CHECK(c.rec.nominated.at("default/g-0").empty());
  CHECK(c.rec.nominated.at("default/g-1").empty());
  CHECK(c.s->NominatedNodeOf("default/g-1").empty());
}

// --- Composition (issue 18): members see each other's pod rules, nominations hold room,
// replacements go together, no gang is lost. ---

PodAffinityTerm HostnameTerm(std::string app) {
  return PodAffinityTerm{.label_selector = LabelSelector{.match_labels = {{"app", std::move(app)}}},
                         .topology_key = "kubernetes.io/hostname"};
}

TEST_CASE("gang members obey each other's anti-affinity and spread", "[gang][core][rules]") {
  Core c;
  c.GpuNodes(3, 8);
  SECTION("required anti-affinity on hostname: one member per node") {
    c.PodGroup("w", 3);
    for (int i = 0; i < 3; ++i) {
      Pod m = c.Member("w", i, "cpu:1,nvidia.com/gpu:1", 100 + i);
      m.meta.labels["app"] = "w";
      m.pod_anti_affinity.required.push_back(HostnameTerm("w"));
      c.s->OnPodAdd(std::move(m));
    }
    c.Run();
    CHECK(c.BoundOf("w") == 3);
    const auto by_node = c.PodsByNode();
    CHECK(by_node.size() == 3);
    for (const auto& [node, pods] : by_node) CHECK(pods.size() == 1);
  }
  SECTION("DoNotSchedule spread, maxSkew 1 on hostname: 6 members, 2 per node") {
    c.PodGroup("s", 6);
    for (int i = 0; i < 6; ++i) {
      Pod m = c.Member("s", i, "cpu:1,nvidia.com/gpu:1", 100 + i);
      m.meta.labels["app"] = "s";
      m.topology_spread_constraints.push_back(TopologySpreadConstraint{
          .max_skew = 1,
          .topology_key = "kubernetes.io/hostname",
          .label_selector = LabelSelector{.match_labels = {{"app", "s"}}}});
      c.s->OnPodAdd(std::move(m));
    }
    c.Run();
    CHECK(c.BoundOf("s") == 6);
    const auto by_node = c.PodsByNode();
    CHECK(by_node.size() == 3);
    for (const auto& [node, pods] : by_node) CHECK(pods.size() == 2);
  }
  SECTION("a member's own anti-affinity to another pod holds though a member without it has "
          "the same requests") {
    Pod db = PodBuilder("db").Requests("cpu:1").Node("gpu-0").Build();
    db.meta.labels["app"] = "db";
    c.s->OnPodAdd(std::move(db));
    c.PodGroup("m", 2);
    c.s->OnPodAdd(c.Member("m", 0, "cpu:1,nvidia.com/gpu:1", 100));
    Pod shy = c.Member("m", 1, "cpu:1,nvidia.com/gpu:1", 101);
    shy.pod_anti_affinity.required.push_back(HostnameTerm("db"));
    c.s->OnPodAdd(std::move(shy));
    c.Run();
    CHECK(c.BoundOf("m") == 2);
    CHECK(c.api.bound.at("default/m-1") != "gpu-0");
  }
}

TEST_CASE("a gang's plan leaves the room of a more important nominated pod", "[gang][core][rules]") {
  Core c;
  for (std::string pool : {"a", "b"}) {
    c.s->OnNodeAdd(NodeBuilder(StrCat("n-", pool)).Allocatable("cpu:32,memory:128Gi")
                       .Label("pool", pool).Build());
  }
  // hp may only run on n-a, where a terminating victim still holds the CPUs.
  Pod victim = PodBuilder("victim").Requests("cpu:32").Priority(0).Node("n-a").Build();
  victim.meta.deletion_timestamp = c.clock.Now();
  c.s->OnPodAdd(victim);
  Pod hp = PodBuilder("hp").Requests("cpu:32").Priority(1000).Selector("pool", "a").Created(50).Build();
  hp.nominated_node_name = "n-a";
  c.s->OnPodAdd(std::move(hp));
  c.Run();  // hp waits for its victim (in backoff)
  CHECK(c.api.bound.empty());
  c.s->OnPodDelete("default/victim");  // the victim is gone; hp is still in backoff
  // A less important gang of 4 x 8 CPUs fits on either node; n-a is hp's.
  c.PodGroup("g", 4);
  for (int i = 0; i < 4; ++i) {
    Pod m = PodBuilder(StrCat("g-", i)).Requests("cpu:8").Priority(10).Created(100 + i).Build();
    m.meta.labels["scheduling.x-k8s.io/pod-group"] = "g";
    c.s->OnPodAdd(std::move(m));
  }
  c.Run();
  CHECK(c.BoundOf("g") == 4);
  for (int i = 0; i < 4; ++i) CHECK(c.api.bound.at(StrCat("default/g-", i)) == "n-b");
  c.clock.Advance(absl::Seconds(30));
  c.Run();
  CHECK(c.api.bound.at("default/hp") == "n-a");
  CHECK(c.api.evictions.empty());
}

TEST_CASE("replacement members of a gang whose old members terminate are placed together",
          "[gang][core][rules]") {
  Core c;
  c.GpuNodes(2, 8);
  c.PodGroup("job", 4);
  // The old members run, then terminate (a preemption evicted them); the Job recreates them.
  for (int i = 0; i < 4; ++i) {
    Pod old = c.Member("job", i, "cpu:1,nvidia.com/gpu:4", 100 + i);
    old.node_name = StrCat("gpu-", i / 2);
    old.phase = PodPhase::kRunning;
    old.meta.deletion_timestamp = c.clock.Now();
    c.s->OnPodAdd(std::move(old));
  }
  for (int i = 4; i < 8; ++i) c.s->OnPodAdd(c.Member("job", i, "cpu:1,nvidia.com/gpu:4", 100 + i));
  c.Run();
  CHECK(c.BoundOf("job") == 0);
  // Half of the old members are gone: room for two, not for the gang.
  c.s->OnPodDelete("default/job-0");
  c.s->OnPodDelete("default/job-1");
  c.clock.Advance(absl::Seconds(30));
  c.Run();
  CHECK(c.BoundOf("job") == 0);
  CHECK_THAT(c.rec.unschedulable.at("default/job-4"), Catch::Contains("needs 4 × 4 GPUs"));
  c.s->OnPodDelete("default/job-2");
  c.s->OnPodDelete("default/job-3");
  c.clock.Advance(absl::Seconds(30));
  c.Run();
  CHECK(c.BoundOf("job") == 4);
}

TEST_CASE("a gang whose member changes while its plan is held is tried again, not lost",
          "[gang][core][rules]") {
  Core c(/*with_touch=*/true);
  c.GpuNodes(1, 8);
  c.PodGroup("g", 2);
  Pod m0 = c.Member("g", 0, "cpu:1,nvidia.com/gpu:2", 100);
  m0.scheduler_name = "tessel";
  Pod m1 = c.Member("g", 1, "cpu:1,nvidia.com/gpu:2", 101);
  m1.scheduler_name = "tessel";
  c.s->OnPodAdd(m0);
  c.s->OnPodAdd(m1);
  // During the cycle, the informer delivers a newer copy of a member (a status patch).
  c.on_reserve = [&](const Pod&) {
    Pod newer = m1;
    newer.meta.annotations["touched"] = "yes";
    c.s->OnPodUpdate(std::move(newer));
  };
  c.Run();
  CHECK(c.BoundOf("g") == 2);
}

TEST_CASE("a gang waits for its victims to terminate instead of evicting more",
          "[gang][core][rules][preemption]") {
  Core c;
  c.GpuNodes(2, 8);
  for (int node = 0; node < 2; ++node) {
    for (int k = 0; k < 2; ++k) {
      Pod low = PodBuilder(StrCat("low-", node, "-", k)).Requests("cpu:1,nvidia.com/gpu:4")
                    .Priority(0).Node(StrCat("gpu-", node)).Build();
      low.phase = PodPhase::kRunning;
      // gpu-0's pods are the victims of the gang's earlier preemption, still terminating.
      if (node == 0) low.meta.deletion_timestamp = c.clock.Now();
      c.s->OnPodAdd(std::move(low));
    }
  }
  c.PodGroup("hp", 2);
  for (int i = 0; i < 2; ++i) {
    Pod m = c.Member("hp", i, "cpu:1,nvidia.com/gpu:4", 100 + i);
    m.priority = 100;
    m.nominated_node_name = "gpu-0";
    c.s->OnPodAdd(std::move(m));
  }
  c.Run();
  CHECK(c.api.evictions.empty());
  CHECK(c.BoundOf("hp") == 0);
  // The victims are gone: the gang takes their room.
  c.s->OnPodDelete("default/low-0-0");
  c.s->OnPodDelete("default/low-0-1");
  c.clock.Advance(absl::Seconds(30));
  c.Run();
  CHECK(c.BoundOf("hp") == 2);
  CHECK(c.api.bound.at("default/hp-0") == "gpu-0");
  CHECK(c.api.evictions.empty());
}

// Gang preemption is DefaultPreemption's (its gang hook): a profile without it preempts for
// neither pods nor gangs, whatever other PostFilter plugins it keeps (issue 38, defect 8).
TEST_CASE("a profile without DefaultPreemption preempts for no gang", "[gang][core][preemption]") {
  const bool disabled = GENERATE(false, true);
  CAPTURE(disabled);
  Core c(false, disabled ? "profiles:\n- schedulerName: tessel\n  plugins:\n"
                           "    postFilter: {disabled: [{name: DefaultPreemption}]}\n"
                         : "");
  c.GpuNodes(2, 8);
  for (int node = 0; node < 2; ++node) {
    Pod low = PodBuilder(StrCat("low-", node)).Requests("cpu:1,nvidia.com/gpu:8").Priority(0).Node(StrCat("gpu-", node)).Build();
    low.phase = PodPhase::kRunning;
    c.s->OnPodAdd(std::move(low));
  }
  c.PodGroup("hp", 2);
  for (int i = 0; i < 2; ++i) {
    Pod m = c.Member("hp", i, "cpu:1,nvidia.com/gpu:8", 100 + i);
    m.priority = 100;
    c.s->OnPodAdd(std::move(m));
  }
  c.Run();
  CHECK(c.BoundOf("hp") == 0);
  if (disabled) {
    CHECK(c.api.evictions.empty());
    CHECK(c.rec.kinds["default/hp-0"] == FailureKind::kUnschedulable);
    CHECK(c.rec.nominated["default/hp-0"].empty());
  } else {
    CHECK(c.api.evictions.size() == 2);
    CHECK_THAT(c.rec.status["PodGroup default/hp"].message, Catch::Contains("Preempting 2 pod(s) for the gang."));
  }
}

// Kubernetes 1.37's own PodGroup (scheduling.k8s.io/v1beta1): its pods name it in
// spec.schedulingGroup; its preemptionPolicy and topology constraint hold for the whole gang.
TEST_CASE("a v1beta1 PodGroup: its preemptionPolicy, its topology key, what it cannot honour",
          "[gang][core][preemption]") {
  Core c;
  c.GpuNodes(2, 8);
  for (int node = 0; node < 2; ++node) {
    Pod low = PodBuilder(StrCat("low-", node)).Requests("cpu:1,nvidia.com/gpu:8").Priority(0)
                  .Node(StrCat("gpu-", node)).Build();
    low.phase = PodPhase::kRunning;
    c.s->OnPodAdd(std::move(low));
  }
  auto group = [&](std::string_view policy) {
    json pg = json::parse(R"({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "hp", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                 "schedulingConstraints": {"topology": [{"key": "kubernetes.io/hostname"}]},
                 "resourceClaims": [{"name": "nic", "resourceClaimName": "rdma"}]}})");
    pg["spec"]["preemptionPolicy"] = policy;
    REQUIRE(c.harness.ApplyGangObject(pg).value());
  };
  group("Never");
  for (int i = 0; i < 2; ++i) {
    Pod m = PodBuilder(StrCat("hp-", i)).Requests("cpu:1,nvidia.com/gpu:4").Created(100 + i).Priority(100).Build();
    m.scheduling_group = "hp";
    c.s->OnPodAdd(std::move(m));
  }
  c.Run();
  // Never: the members (which may preempt on their own) evict nothing.
  CHECK(c.api.evictions.empty());
  CHECK(c.BoundOf("hp") == 0);
  const GangStatusUpdate& waiting = c.rec.status.at("PodGroup default/hp (scheduling.k8s.io)");
  CHECK_FALSE(waiting.condition);
  CHECK_THAT(waiting.message, Catch::Contains("within one kubernetes.io/hostname domain"));
  CHECK(waiting.unsupported.empty());  // the group's claims are DynamicResources' (its members name none)

  // PreemptLowerPriority: one node's pod goes, and both members land on that one node.
  group("PreemptLowerPriority");
  c.clock.Advance(absl::Seconds(30));
  c.Run();
  REQUIRE(c.api.evictions.size() == 1);
}

TEST_CASE("a refused rollback eviction is tried again until the member is gone",
          "[gang][core][rules]") {
  Core c;
  c.GpuNodes(1, 8);
  c.PodGroup("ring", 2);
  for (int i = 0; i < 2; ++i) c.s->OnPodAdd(c.Member("ring", i, "cpu:1,nvidia.com/gpu:2", 100 + i));
  c.api.bind_failures["default/ring-1"] = -1;
  c.api.refuse_evictions = 2;
  CHECK(c.s->ScheduleOne());
  CHECK(c.api.evictions.empty());
  CHECK(c.api.eviction_attempts.at("default/ring-0") == 1);
  // The retries follow the scheduler's clock, with backoff (NextWakeup includes them).
  const std::optional<absl::Time> next = c.s->NextWakeup();
  REQUIRE(next.has_value());
  CHECK(*next <= c.clock.Now() + absl::Seconds(1));
  for (int second = 0; second < 10; ++second) {
    c.clock.Advance(absl::Seconds(1));
    c.s->Housekeeping();
  }
  CHECK(c.api.evictions == std::vector<std::string>{"default/ring-0"});
  CHECK(c.api.eviction_attempts.at("default/ring-0") == 3);  // refused twice, then done
}

}  // namespace gang_core_test
}  // namespace tessel::gang
