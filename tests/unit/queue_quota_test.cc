// The QueueQuota plugin: quotas enforced in the scheduling cycle (the greedy team stops at its
// nominal quota, teams borrow idle quota of their cohort, shared GPUs count as fractions, a
// gang's members see each other's reservations), the hooks preemption uses (RemovePod/AddPod,
// MayEvict), and seeded properties over generated queues, cohorts and pod streams.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <random>

#include "nlohmann/json.hpp"
#include "harness/core_harness.h"
#include "scheduler/testing/builders.h"
#include "fake_handle.h"
#include "plugins/queue_quota/queue_quota.h"
#include "plugins/registry.h"
#include "scheduler/framework/node_tiers.h"
#include "scheduler/kinds/object_kinds.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace queue_quota_test {

using nlohmann::json;
using queue_quota::QueueQuota;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::Res;

class Outcomes final : public SchedulingObserver {
 public:
  void PodScheduled(const Pod& pod, const std::string& node) override {
    scheduled[pod.Key()] = node;
    failures.erase(pod.Key());
  }
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override {
    failures[pod.Key()] = message;
    kinds[pod.Key()] = kind;
  }
  std::map<std::string, FailureKind> kinds;
  std::map<std::string, std::string> scheduled;
  std::map<std::string, std::string> failures;
};

json QueueObject(std::string name, json spec) {
  return json{{"apiVersion", "tessel.io/v1alpha1"},
              {"kind", "Queue"},
              {"metadata", {{"name", std::move(name)}}},
              {"spec", std::move(spec)}};
}

// A Cohort of the quota tree under `parent` ("" for a root), with the rest of its spec.
json CohortObject(std::string name, const std::string& parent, json spec = json::object()) {
  if (!parent.empty()) spec["parent"] = parent;
  return json{{"apiVersion", "tessel.io/v1alpha1"},
              {"kind", "Cohort"},
              {"metadata", {{"name", std::move(name)}}},
              {"spec", std::move(spec)}};
}

// The whole core with the default profile, GPU nodes, and binds confirmed as an informer would.
constexpr std::string_view kNodeSize = "cpu:64,memory:256Gi,nvidia.com/gpu:8";

struct Cluster {
  explicit Cluster(int nodes, std::string_view size = kNodeSize, std::string config_yaml = "")
      : harness({.config_yaml = std::move(config_yaml), .observer = &outcomes}) {
    for (int i = 1; i <= nodes; ++i) {
      harness.AddNode(NodeBuilder(StrCat("n", i)).Allocatable(size).Build());
    }
    // An evicted pod terminates until the test lets it go (DeleteEvicted).
    api.on_evict = [this](const Pod& pod, std::string_view) {
      Pod leaving = pod;
      leaving.meta.deletion_timestamp = clock.Now();
      s->OnPodUpdate(std::move(leaving));
      terminating.push_back(pod.Key());
      return absl::OkStatus();
    };
  }
  void DeleteEvicted() {
    for (const std::string& key : std::exchange(terminating, {})) s->OnPodDelete(key);
  }
  // Rounds of scheduling in which evicted pods go away, until nothing is evicted any more.
  void RunWithEvictions(int rounds = 10) {
    for (int i = 0; i < rounds; ++i) {
      Run();
      DeleteEvicted();
      RetryParked();
    }
  }
  void AddQueue(std::string name, json spec) {
    absl::Status st = harness.ApplyQueueObject(QueueObject(std::move(name), std::move(spec)));
    REQUIRE(st.ok());
  }
  void Run() { harness.RunUntilIdle(); }
  // Lets parked pods retry (their backoff and the unschedulable wait pass).
  void RetryParked() {
    clock.Advance(absl::Minutes(6));
    Run();
  }
  // GPUs (milli) held by the pods of a namespace.
  int64_t GpusOf(std::string_view ns) const {
    int64_t sum = 0;
    for (const std::string& name : cache.NodeNames()) {
      const std::optional<NodeInfo> info = cache.GetNodeInfo(name);
      for (const PodRef& p : info->pods()) {
        if (p->meta.namespace_ == ns) sum += p->requests.Get(kNvidiaGpu);
      }
    }
    return sum;
  }

  Outcomes outcomes;
  testing::CoreHarness harness;
  testing::FakeClusterApi& api = harness.api;
  ManualClock& clock = harness.clock;
  Cache& cache = harness.cache;
  std::unique_ptr<Scheduler>& s = harness.s;
  std::vector<std::string> terminating;
};

Pod GpuPod(std::string ns, std::string name, int gpus = 1, int32_t priority = 0) {
  return PodBuilder(std::move(name), std::move(ns))
      .Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus))
      .Priority(priority)
      .Build();
}

TEST_CASE("QueueQuota: the greedy team stops at its nominal quota; pods without a queue are not "
          "limited",
          "[quota][queue_quota]") {
  Cluster c(3);  // 24 GPUs
  c.AddQueue("team-a", {{"namespaces", {"a"}}, {"nominalQuota", {{"nvidia.com/gpu", "3"}}}});
  for (int i = 0; i < 5; ++i) c.s->OnPodAdd(GpuPod("a", StrCat("j", i)));
  for (int i = 0; i < 5; ++i) c.s->OnPodAdd(GpuPod("free", StrCat("j", i)));
  c.Run();
  CHECK(c.GpusOf("a") == 3000);
  CHECK(c.GpusOf("free") == 5000);
  REQUIRE(c.outcomes.failures.size() == 2);
  for (const auto& [key, message] : c.outcomes.failures) {
    CHECK(key.starts_with("a/"));
    CHECK(c.outcomes.kinds.at(key) == FailureKind::kQuotaExceeded);  // not a capacity shortfall
    CHECK(message ==
          "0/3 nodes are available: 3 queue team-a: nvidia.com/gpu 4 of nominal 3; it is in no "
          "cohort, so it cannot borrow.");
  }

  SECTION("a pod that ends gives its quota to the next") {
    const std::string done = c.outcomes.scheduled.begin()->first;
    c.s->OnPodDelete(done);
    c.RetryParked();
    CHECK(c.GpusOf("a") == 3000);
    CHECK(c.outcomes.failures.size() == 1);
  }
  SECTION("a larger quota admits the rest (Queue changes wake parked pods)") {
    c.AddQueue("team-a", {{"namespaces", {"a"}}, {"nominalQuota", {{"nvidia.com/gpu", "5"}}}});
    c.RetryParked();
    CHECK(c.GpusOf("a") == 5000);
    CHECK(c.outcomes.failures.empty());
  }
  SECTION("podsWithoutQueue: Reject refuses pods in no queue, naming why") {
    Cluster strict(1, kNodeSize, R"(
profiles:
- schedulerName: tessel
  pluginConfig:
  - name: QueueQuota
    args: {podsWithoutQueue: Reject}
)");
    strict.AddQueue("team-a", {{"namespaces", {"a"}}, {"nominalQuota", {{"nvidia.com/gpu", "3"}}}});
    strict.s->OnPodAdd(GpuPod("free", "x"));
    strict.Run();
    CHECK(strict.outcomes.kinds.at("free/x") == FailureKind::kQuotaExceeded);
    CHECK(strict.outcomes.failures.at("free/x") ==
          "0/1 nodes are available: no Queue lists namespace \"free\" and the pod has no "
          "tessel.io/queue label; only pods in a queue are scheduled.");
  }
}

TEST_CASE("QueueQuota: bad plugin args and bad Queue objects are errors naming the field",
          "[quota][queue_quota]") {
  testing::FakeHandle handle;
  auto bad = QueueQuota::ParseArgs(YAML::Load("{podsWithoutQueue: Sometimes}"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "QueueQuota: args.podsWithoutQueue: \"Sometimes\" is not one of Allow, Reject");

  Cluster c(1);
  c.AddQueue("team-a", {{"namespaces", {"a"}}, {"nominalQuota", {{"nvidia.com/gpu", "1"}}}});
  absl::Status st = c.harness.ApplyQueueObject(QueueObject("team-b", {{"weight", "0"}}));
  CHECK(st.message() == "Queue team-b: spec.weight: must be positive; its pods wait until it decodes");
  st = c.harness.ApplyQueueObject(QueueObject("team-c", {{"namespaces", {"a"}}}));
  CHECK(st.message() ==
        "Queue team-c: spec.namespaces: namespace \"a\" already belongs to the older Queue "
        "team-a; this queue does not get it (its other namespaces stay)");
  // team-a is still in force.
  c.s->OnPodAdd(GpuPod("a", "j0"));
  c.s->OnPodAdd(GpuPod("a", "j1"));
  c.Run();
  CHECK(c.GpusOf("a") == 1000);
  CHECK(c.s->queue_store().Problems().size() == 2);
}

Pod Labelled(Pod pod, std::string queue) {
  pod.meta.labels[std::string(kQueueLabel)] = std::move(queue);
  return pod;
}

// How a pod whose label names a queue that does not admit its namespace is told it waits.
std::string Refused(int nodes, std::string_view ns, std::string_view queue) {
  return StrCat("0/", nodes, " nodes are available: the pod's label tessel.io/queue names Queue \"",
                queue, "\", which does not admit namespace \"", ns,
                "\": neither its spec.namespaces nor its spec.namespaceSelector selects it.");
}

TEST_CASE("QueueQuota: a pod cannot charge a queue that does not admit its namespace",
          "[quota][queue_quota]") {
  Cluster c(2);
  c.AddQueue("team-a", {{"namespaces", {"a"}}, {"nominalQuota", {{"nvidia.com/gpu", "2"}}}});
  c.AddQueue("team-b", {{"namespaces", {"b"}}, {"nominalQuota", {{"nvidia.com/gpu", "8"}}}});
  // Placed before (by another scheduler): charged to its own namespace's team, not the label's.
  Pod running = Labelled(GpuPod("b", "running"), "team-a");
  running.node_name = "n1";
  c.s->OnPodAdd(running);
  c.s->OnPodAdd(Labelled(GpuPod("b", "sneaky"), "team-a"));
  c.s->OnPodAdd(Labelled(GpuPod("elsewhere", "stray"), "team-a"));
  for (int i = 0; i < 2; ++i) c.s->OnPodAdd(GpuPod("a", StrCat("j", i)));
  c.Run();
  CHECK(c.GpusOf("a") == 2000);  // team-a's quota is all its own
  CHECK(c.outcomes.scheduled.count("b/sneaky") == 0);
  CHECK(c.outcomes.scheduled.count("elsewhere/stray") == 0);
  CHECK(c.outcomes.failures.at("b/sneaky") == Refused(2, "b", "team-a"));
  CHECK(c.outcomes.failures.at("elsewhere/stray") == Refused(2, "elsewhere", "team-a"));
  // The label that names the pod's own queue is honoured.
  c.s->OnPodAdd(Labelled(GpuPod("b", "honest"), "team-b"));
  c.Run();
  CHECK(c.outcomes.scheduled.count("b/honest") == 1);
}

TEST_CASE("QueueQuota: spec.namespaceSelector lets a namespace's pods choose the queue; a "
          "Namespace's label change wakes them",
          "[quota][queue_quota]") {
  Cluster c(1);
  c.AddQueue("team-a", {{"namespaces", {"a"}},
                        {"namespaceSelector", {{"matchLabels", {{"share", "team-a"}}}}},
                        {"nominalQuota", {{"nvidia.com/gpu", "2"}}}});
  c.s->OnClusterObject(Namespace{.meta = {.name = "lab", .labels = {{"share", "team-a"}}}});
  c.s->OnClusterObject(Namespace{.meta = {.name = "b"}});
  c.s->OnPodAdd(Labelled(GpuPod("lab", "shared"), "team-a"));
  c.s->OnPodAdd(Labelled(GpuPod("b", "sneaky"), "team-a"));
  c.Run();
  CHECK(c.outcomes.scheduled.count("lab/shared") == 1);
  CHECK(c.outcomes.failures.at("b/sneaky") == Refused(1, "b", "team-a"));

  // b is labelled to share team-a's quota: the parked pod is retried at once (a Queue change),
  // well before the periodic flush of parked pods.
  c.s->OnClusterObject(Namespace{.meta = {.name = "b", .labels = {{"share", "team-a"}}}});
  c.clock.Advance(absl::Seconds(30));
  c.Run();
  CHECK(c.outcomes.scheduled.count("b/sneaky") == 1);
  CHECK(c.GpusOf("lab") + c.GpusOf("b") == 2000);

  // The label taken away: new pods of b may no longer choose team-a, and b's pod that runs is
  // no longer charged to it (team-a's quota frees).
  c.s->OnClusterObject(Namespace{.meta = {.name = "b"}});
  c.s->OnPodAdd(Labelled(GpuPod("b", "late"), "team-a"));
  c.s->OnPodAdd(Labelled(GpuPod("lab", "second"), "team-a"));
  c.Run();
  CHECK(c.outcomes.failures.at("b/late") == Refused(1, "b", "team-a"));
  CHECK(c.outcomes.scheduled.count("lab/second") == 1);
}

TEST_CASE("QueueQuota: a newer Queue listing a team's namespace does not take it; a Warning "
          "Event on the newer queue names both",
          "[quota][queue_quota]") {
  Cluster c(2);
  json older = QueueObject("team-b", {{"namespaces", {"b"}}, {"nominalQuota", {{"nvidia.com/gpu", "2"}}}});
  older["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
  older["metadata"]["uid"] = "uid-b";
  json newer = QueueObject("aaa", {{"namespaces", {"b", "x"}}, {"nominalQuota", {{"nvidia.com/gpu", "8"}}}});
  newer["metadata"]["creationTimestamp"] = "2026-06-01T00:00:00Z";
  newer["metadata"]["uid"] = "uid-aaa";
  const std::string want =
      "Queue aaa: spec.namespaces: namespace \"b\" already belongs to the older Queue team-b; "
      "this queue does not get it (its other namespaces stay)";
  REQUIRE(c.harness.ApplyQueueObject(older).ok());
  CHECK(c.harness.ApplyQueueObject(newer).message() == want);
  CHECK(c.api.object_events ==
        std::vector<std::string>{"Warning NamespaceConflict tessel.io/v1alpha1 Queue /aaa uid-aaa: " + want});
  for (int i = 0; i < 4; ++i) c.s->OnPodAdd(GpuPod("b", StrCat("j", i)));
  for (int i = 0; i < 2; ++i) c.s->OnPodAdd(GpuPod("x", StrCat("j", i)));
  c.Run();
  CHECK(c.GpusOf("b") == 2000);  // still team-b's quota
  CHECK(c.GpusOf("x") == 2000);  // the newer queue is in force for its other namespace
  CHECK(c.outcomes.failures.at("b/j2") ==
        "0/2 nodes are available: 2 queue team-b: nvidia.com/gpu 3 of nominal 2; it is in no "
        "cohort, so it cannot borrow.");
  // Applying either again reports it again (logged), but the Event is not repeated.
  CHECK_FALSE(c.harness.ApplyQueueObject(older).ok());
  CHECK(c.api.object_events.size() == 1);
}

TEST_CASE("QueueQuota: idle quota of the cohort is borrowed up to what the lenders lend",
          "[quota][queue_quota]") {
  Cluster c(3);
  c.AddQueue("team-a", {{"namespaces", {"a"}}, {"cohort", "research"},
                        {"nominalQuota", {{"nvidia.com/gpu", "2"}}}});
  c.AddQueue("team-b", {{"namespaces", {"b"}}, {"cohort", "research"},
                        {"nominalQuota", {{"nvidia.com/gpu", "6"}}},
                        {"lendingLimit", {{"nvidia.com/gpu", "3"}}}});
  for (int i = 0; i < 8; ++i) c.s->OnPodAdd(GpuPod("a", StrCat("j", i)));
  c.Run();
  CHECK(c.GpusOf("a") == 5000);  // 2 own + 3 lent
  REQUIRE(c.outcomes.failures.count("a/j7") == 1);
  CHECK(c.outcomes.failures.at("a/j7") ==
        "0/3 nodes are available: 3 queue team-a: nvidia.com/gpu 6 of nominal 2; the cohort "
        "research has 0 to lend.");
  // team-b still has what it keeps back.
  for (int i = 0; i < 3; ++i) c.s->OnPodAdd(GpuPod("b", StrCat("j", i)));
  c.Run();
  CHECK(c.GpusOf("b") == 3000);
}

TEST_CASE("QueueQuota: a replica of a shared GPU counts as its fraction of a physical GPU",
          "[quota][queue_quota]") {
  Cluster c(0);
  c.s->OnNodeAdd(NodeBuilder("shared")
                     .Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8")
                     .Label("nvidia.com/gpu.count", "2")
                     .Label("nvidia.com/gpu.replicas", "4")
                     .Label("nvidia.com/gpu.sharing-strategy", "time-slicing")
                     .Build());
  c.AddQueue("team-a", {{"namespaces", {"a"}}, {"nominalQuota", {{"nvidia.com/gpu", "1"}}}});
  for (int i = 0; i < 6; ++i) {
    Pod p = GpuPod("a", StrCat("r", i));
    p.meta.annotations["tessel.io/gpu-sharing"] = "allowed";
    c.s->OnPodAdd(p);
  }
  c.Run();
  CHECK(c.outcomes.scheduled.size() == 4);  // 4 x 250 milli = one GPU
  REQUIRE(c.outcomes.failures.size() == 2);
  CHECK(c.outcomes.failures.begin()->second ==
        "0/1 nodes are available: 1 queue team-a: nvidia.com/gpu 1250m of nominal 1; it is in "
        "no cohort, so it cannot borrow.");
}

// --- The plugin's hooks, on a fake handle ---------------------------------------------------

// A queue of the cohort "lab" with the nominal quota `nominal`, reclaiming from any borrower.
json LabQueue(const std::string& name, json nominal) {
  return QueueObject(name, {{"namespaces", {name}}, {"cohort", "lab"},
                            {"nominalQuota", std::move(nominal)},
                            {"preemption", {{"reclaimWithinCohort", "Any"}}}});
}

struct Hooks {
  explicit Hooks(QueueQuota::Args args = {}) {
    handle.AddNode(NodeBuilder("n1").Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8").Build());
    auto made = QueueQuota::New(args, handle);
    REQUIRE(made.ok());
    plugin = *std::move(made);
  }
  void SetQueues(std::vector<json> objects) {
    QueueStore store;
    for (const json& o : objects) {
      if (o.value("kind", "") == "Cohort") {
        absl::StatusOr<Cohort> cohort = DecodeCohort(o);
        REQUIRE(cohort.ok());
        store.PutCohort(*std::move(cohort));
        continue;
      }
      absl::StatusOr<Queue> queue = DecodeQueue(o);
      REQUIRE(queue.ok());
      REQUIRE(store.Put(*std::move(queue)).ok());
    }
    handle.SetQueues(store.directory());
  }
  Pod Running(std::string ns, std::string name, int gpus, int32_t priority, int64_t created) {
    Pod p = PodBuilder(std::move(name), std::move(ns))
                .Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus))
                .Priority(priority)
                .Created(created)
                .Node("n1")
                .Build();
    handle.AddPod(p);
    return p;
  }
  Status FilterN1(const CycleState& state, const Pod& pod) const {
    return plugin->Filter(state, pod, *handle.snapshot().Get("n1"));
  }
  testing::FakeHandle handle;
  std::unique_ptr<QueueQuota> plugin;
};

TEST_CASE("QueueQuota: a gang's members planned on one snapshot see each other at Reserve",
          "[quota][queue_quota]") {
  Hooks h;
  h.SetQueues({QueueObject("team-a", {{"namespaces", {"a"}}, {"nominalQuota", {{"nvidia.com/gpu", "3"}}}})});
  std::vector<Pod> members;
  std::vector<CycleState> states(3);
  for (int i = 0; i < 3; ++i) {
    members.push_back(GpuPod("a", StrCat("m", i), 1));
    members.back().meta.creation_timestamp = absl::FromUnixSeconds(i);
  }
  members[2] = GpuPod("a", "m2", 2);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(h.plugin->PreFilter(states[i], members[i]).ok());
    CHECK(h.FilterN1(states[i], members[i]).ok());  // each alone fits
  }
  CHECK(h.plugin->Reserve(states[0], members[0], "n1").ok());
  CHECK(h.plugin->Reserve(states[1], members[1], "n1").ok());
  Status third = h.plugin->Reserve(states[2], members[2], "n1");
  CHECK(third.code() == Code::kUnschedulable);
  CHECK(third.reasons() == std::vector<std::string>{
                               "queue team-a: nvidia.com/gpu 4 of nominal 3; it is in no cohort, "
                               "so it cannot borrow"});
  // Unreserve gives it back.
  h.plugin->Unreserve(states[1], members[1], "n1");
  CHECK(h.plugin->Reserve(states[2], members[2], "n1").ok());
}

TEST_CASE("QueueQuota: RemovePod and AddPod move the cycle's usage (preemption's dry run)",
          "[quota][queue_quota]") {
  Hooks h;
  h.SetQueues({QueueObject("team-a", {{"namespaces", {"a"}}, {"nominalQuota", {{"nvidia.com/gpu", "2"}}}})});
  const Pod old = h.Running("a", "old", 2, 0, 1);
  const Pod incoming = GpuPod("a", "new", 1, 10);
  CycleState state;
  REQUIRE(h.plugin->PreFilter(state, incoming).ok());
  CHECK(h.FilterN1(state, incoming).code() == Code::kUnschedulable);
  const PreFilterExtensions* ext = h.plugin->Extensions();
  REQUIRE(ext != nullptr);
  const NodeInfo& n1 = *h.handle.snapshot().Get("n1");
  REQUIRE(ext->RemovePod(state, incoming, old, n1).ok());
  CHECK(h.FilterN1(state, incoming).ok());
  CycleState copy = state.Clone();
  REQUIRE(ext->AddPod(state, incoming, old, n1).ok());
  CHECK(h.FilterN1(state, incoming).code() == Code::kUnschedulable);
  CHECK(h.FilterN1(copy, incoming).ok());  // clones are independent
}

TEST_CASE("QueueQuota: who may be evicted for whom", "[quota][queue_quota]") {
  Hooks h;
  auto queue = [](std::string name, std::string ns, std::string cohort, std::string gpus,
                  std::string reclaim, std::string within) {
    return QueueObject(std::move(name), {{"namespaces", {std::move(ns)}},
                                         {"cohort", std::move(cohort)},
                                         {"nominalQuota", {{"nvidia.com/gpu", std::move(gpus)}}},
                                         {"preemption", {{"reclaimWithinCohort", std::move(reclaim)},
                                                         {"withinQueue", std::move(within)}}}});
  };
  h.SetQueues({queue("any", "any", "c", "4", "Any", "LowerPriority"),
               queue("lower", "lower", "c", "4", "LowerPriority", "Never"),
               queue("never", "never", "c", "4", "Never", "Never"),
               queue("borrower", "borrower", "c", "1", "Never", "Never"),
               queue("elsewhere", "elsewhere", "other", "8", "Any", "Never")});
  // borrower runs 4 GPUs on nominal 1: it borrows 3 (its three newest/lowest pods are
  // reclaimable, its oldest highest one is not).
  const Pod b_old = h.Running("borrower", "old", 1, 5, 1);
  const Pod b_mid = h.Running("borrower", "mid", 1, 5, 2);
  const Pod b_new = h.Running("borrower", "new", 1, 5, 3);
  const Pod b_low = h.Running("borrower", "low", 1, 1, 0);
  const Pod own_low = h.Running("any", "low", 1, 1, 0);
  const Pod own_high = h.Running("any", "high", 1, 9, 0);
  const Pod other = h.Running("elsewhere", "x", 1, 0, 0);
  const Pod unqueued = h.Running("free", "x", 1, 0, 0);

  struct Case {
    std::string name;
    Pod preemptor;
    const Pod* victim;
    VictimVerdict want;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"reclaim Any: a borrower's pod of higher priority", GpuPod("any", "p", 1, 3), &b_mid,
       VictimVerdict::kAllow, "reclaim"},
      {"reclaim only while the borrower borrows: its last pod in eviction order stays",
       GpuPod("any", "p", 1, 3), &b_old, VictimVerdict::kDeny, ""},
      {"capacity: within its nominal quota the preemptor evicts lower priority by the priority "
       "rule, whatever reclaimWithinCohort says", GpuPod("never", "p", 1, 9), &b_low,
       VictimVerdict::kDefer, ""},
      {"reclaim LowerPriority: not a higher-priority one", GpuPod("lower", "p", 1, 3), &b_new,
       VictimVerdict::kDeny, ""},
      {"reclaim Never: a preemptor short of quota", GpuPod("never", "p", 5, 9), &b_low,
       VictimVerdict::kDeny, ""},
      // "any" holds 2 of its 4 and asks 4: it would borrow 2 of the cohort's 13 lendable GPUs
      // (share 153 per mille). borrower borrows 3 (230): its first pod in eviction order may go
      // (it keeps 153), the next may not (it would drop to 76, below the preemptor's share).
      {"fair share: a borrower above the preemptor's share after the move", GpuPod("any", "p", 4, 3),
       &b_low, VictimVerdict::kAllow, "fair-share"},
      {"fair share: not below the preemptor's share", GpuPod("any", "p", 4, 3), &b_new,
       VictimVerdict::kDeny, ""},
      {"capacity: a teammate of lower priority, the queue taking the pod",
       GpuPod("borrower", "p", 1, 9), &b_low, VictimVerdict::kDefer, ""},
      {"withinQueue LowerPriority, the queue short of quota", GpuPod("any", "p", 8, 3), &own_low,
       VictimVerdict::kAllow, "within-queue"},
      {"withinQueue LowerPriority: not equal or higher", GpuPod("any", "p", 1, 9), &own_high,
       VictimVerdict::kDeny, ""},
      {"withinQueue Never, the queue short of quota", GpuPod("borrower", "p", 8, 9), &b_low,
       VictimVerdict::kDeny, ""},
      {"capacity: another cohort's lower-priority pod", GpuPod("any", "p", 1, 9), &other,
       VictimVerdict::kDefer, ""},
      {"another cohort, for quota", GpuPod("any", "p", 8, 9), &other, VictimVerdict::kDeny, ""},
      {"a borrowing preemptor does not evict another queue's pod by priority alone",
       GpuPod("any", "p", 3, 9), &b_low, VictimVerdict::kAllow, "fair-share"},
      {"a victim in no queue: the priority rule", GpuPod("any", "p", 1, 9), &unqueued,
       VictimVerdict::kDefer, ""},
      {"a preemptor in no queue: the priority rule", GpuPod("free", "p", 1, 9), &b_low,
       VictimVerdict::kDefer, ""},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CycleState state;
    const Status pre = h.plugin->PreFilter(state, c.preemptor);
    REQUIRE((pre.ok() || pre.IsSkip()));
    std::string reason;
    CHECK(h.plugin->MayEvict(state, c.preemptor, *c.victim, &reason) == c.want);
    CHECK(reason == c.reason);
  }
}

TEST_CASE("QueueQuota: queues leave preemption for capacity to priority", "[quota][queue_quota][preemption]") {
  // One node; two priority-0 batch pods hold its 8 GPUs; an urgent 8-GPU pod arrives.
  Cluster c(1);
  std::string batch_ns = "a";
  SECTION("a team queue whose quota is no constraint") {
    c.AddQueue("team", {{"namespaces", {"a"}}, {"nominalQuota", {{"nvidia.com/gpu", "100"}}}});
  }
  SECTION("two teams within their nominal quota, no reclaim") {
    c.AddQueue("team-a", {{"namespaces", {"a"}}, {"cohort", "lab"}, {"nominalQuota", {{"nvidia.com/gpu", "8"}}}});
    c.AddQueue("team-b", {{"namespaces", {"b"}}, {"cohort", "lab"}, {"nominalQuota", {{"nvidia.com/gpu", "8"}}}});
    batch_ns = "b";
  }
  SECTION("no queues at all") {}
  c.s->OnPodAdd(GpuPod(batch_ns, "batch-0", 4, 0));
  c.s->OnPodAdd(GpuPod(batch_ns, "batch-1", 4, 0));
  c.Run();
  REQUIRE(c.GpusOf(batch_ns) == 8000);
  c.s->OnPodAdd(GpuPod("a", "urgent", 8, 1000));
  c.RunWithEvictions(3);
  std::sort(c.api.evictions.begin(), c.api.evictions.end());
  CHECK(c.api.evictions == std::vector<std::string>{batch_ns + "/batch-0", batch_ns + "/batch-1"});
  CHECK(c.outcomes.scheduled.at("a/urgent") == "n1");
}

TEST_CASE("QueueQuota: a lender reclaims its whole nominal quota when pod sizes do not divide "
          "what the borrower borrows", "[quota][queue_quota][preemption]") {
  Cluster c(5);  // 40 GPUs
  c.AddQueue("team-a", {{"namespaces", {"a"}}, {"cohort", "research"}, {"nominalQuota", {{"nvidia.com/gpu", "20"}}}});
  c.AddQueue("team-b", {{"namespaces", {"b"}}, {"cohort", "research"},
                        {"nominalQuota", {{"nvidia.com/gpu", "20"}}},
                        {"preemption", {{"reclaimWithinCohort", "Any"}}}});
  for (int i = 0; i < 10; ++i) c.s->OnPodAdd(GpuPod("a", StrCat("a-", i), 3));
  c.Run();
  REQUIRE(c.GpusOf("a") == 30000);  // borrows 10
  for (int i = 0; i < 4; ++i) {  // one after another, each once the previous one runs
    c.s->OnPodAdd(GpuPod("b", StrCat("b-", i), 5));
    c.RunWithEvictions(3);
    INFO(c.outcomes.failures[StrCat("b/b-", i)] << "; team-a holds " << c.GpusOf("a"));
    CHECK(c.outcomes.scheduled.contains(StrCat("b/b-", i)));
  }
  CHECK(c.GpusOf("b") == 20000);
  CHECK(c.GpusOf("a") == 18000);  // four 3-GPU pods gave back 12: the last took it below 20
  CHECK(c.api.evictions.size() == 4);
}

TEST_CASE("QueueQuota: quota reclaimed for a nominated pod is not borrowed again elsewhere",
          "[quota][queue_quota][preemption]") {
  Cluster c(3);  // 24 GPUs; the cohort's quota is 16
  c.AddQueue("team-a", {{"namespaces", {"a"}}, {"cohort", "lab"},
                        {"nominalQuota", {{"nvidia.com/gpu", "8"}}},
                        {"preemption", {{"reclaimWithinCohort", "Any"}}}});
  c.AddQueue("team-b", {{"namespaces", {"b"}}, {"cohort", "lab"}, {"nominalQuota", {{"nvidia.com/gpu", "8"}}}});
  for (int i = 0; i < 4; ++i) c.s->OnPodAdd(PodBuilder(StrCat("b-", i), "b").Requests("cpu:1,nvidia.com/gpu:4").Created(i).Build());
  c.Run();
  REQUIRE(c.GpusOf("b") == 16000);  // borrows all of team-a's 8
  // An older team-b pod waits for quota, with a node free; then team-a wants 4 of its own.
  c.s->OnPodAdd(PodBuilder("b-late", "b").Requests("cpu:1,nvidia.com/gpu:4").Created(10).Build());
  c.s->OnPodAdd(PodBuilder("a-0", "a").Requests("cpu:1,nvidia.com/gpu:4").Created(20).Build());
  c.RunWithEvictions();
  CHECK(c.outcomes.scheduled.contains("a/a-0"));
  CHECK_FALSE(c.outcomes.scheduled.contains("b/b-late"));
  CHECK(c.api.evictions.size() == 1);  // one reclaim; b-late did not take the reclaimed quota
  CHECK(c.GpusOf("b") == 12000);
}

// Another team's nominated pod claims its quota only while its queue's own limits admit it: a
// teammate of higher priority may be placed past it (its claim yields within its own queue), and
// then the claim can never be placed. Counted against other teams, it kept them from quota
// nobody held, and their preemptors preempted again elsewhere (composition seed 6501 of 8,000 +
// 4,000).
TEST_CASE("QueueQuota: a nominated pod beyond its own queue's limits claims nothing from other "
          "teams", "[quota][queue_quota]") {
  // Cohort c: a (nominal 4), an idle lender l (2), b (nominal 0, borrowing limit 3): 6 in all.
  auto queue = [](std::string name, std::string gpus, json extra = json::object()) {
    json spec = {{"namespaces", {name}}, {"cohort", "c"}, {"nominalQuota", {{"nvidia.com/gpu", std::move(gpus)}}}};
    spec.update(extra);
    return QueueObject(name, spec);
  };
  Hooks h;
  h.SetQueues({queue("a", "4"), queue("l", "2"), queue("b", "0", {{"borrowingLimit", {{"nvidia.com/gpu", "3"}}}})});
  h.handle.Nominate(GpuPod("b", "waiting", 1, 0), "n1");
  SECTION("b holds 2 and its nominated pod would take it to 3: the claim holds, a may not take 4") {
    for (int i = 0; i < 2; ++i) h.Running("b", StrCat("b-", i), 1, 10, i);
    CycleState state;
    REQUIRE(h.plugin->PreFilter(state, GpuPod("a", "p", 4, 0)).ok());
    CHECK_FALSE(h.FilterN1(state, GpuPod("a", "p", 4, 0)).ok());
  }
  SECTION("b holds 3, its limit, placed past its nominated pod: the claim is stale, a takes 3") {
    for (int i = 0; i < 3; ++i) h.Running("b", StrCat("b-", i), 1, 10, i);
    CycleState state;
    REQUIRE(h.plugin->PreFilter(state, GpuPod("a", "p", 3, 0)).ok());
    CHECK(h.FilterN1(state, GpuPod("a", "p", 3, 0)).ok());
  }
}

// Cohort c: a (nominal 3) and b (nominal 2), 5 GPUs in all, on two nodes of 8; a and b run a
// GPU each on n2. n1, the only node of pool p, is full with an earlier preemption's victim that
// still terminates; a's pods nominated there (selecting pool p) wait for it.
struct OutgrownWorld {
  OutgrownWorld() {
    c.harness.AddNode(NodeBuilder("n1").Allocatable(kNodeSize).Label("pool", "p").Build());
    c.harness.AddNode(NodeBuilder("n2").Allocatable(kNodeSize).Build());
    c.AddQueue("team-a", {{"namespaces", {"a"}}, {"cohort", "c"}, {"nominalQuota", {{"nvidia.com/gpu", "3"}}}});
    c.AddQueue("team-b", {{"namespaces", {"b"}}, {"cohort", "c"}, {"nominalQuota", {{"nvidia.com/gpu", "2"}}}});
    c.s->OnPodAdd(Bound("a", "a-0", "n2", 1));
    c.s->OnPodAdd(Bound("b", "b-0", "n2", 1));
    Pod leaving = Bound("free", "victim", "n1", 8);
    leaving.meta.deletion_timestamp = c.clock.Now();
    c.s->OnPodAdd(leaving);
  }
  static Pod Bound(std::string ns, std::string name, std::string node, int gpus) {
    return PodBuilder(std::move(name), std::move(ns)).Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus)).Node(std::move(node)).Build();
  }
  void AddNominated(std::string name, int gpus, int32_t priority) {
    Pod p = PodBuilder(std::move(name), "a")
                .Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus))
                .Priority(priority)
                .Selector("pool", "p")
                .Build();
    p.nominated_node_name = "n1";
    c.s->OnPodAdd(p);
  }
  Cluster c{0};
};

TEST_CASE("QueueQuota: a teammate placed past a nomination of lower priority outgrows its claim; "
          "another team's pod takes the quota it left", "[quota][queue_quota]") {
  OutgrownWorld w;
  w.AddNominated("low", 2, 0);  // claims 2 of a's quota: a 1 + 2 = 3, its nominal
  w.c.Run();
  REQUIRE_FALSE(w.c.outcomes.scheduled.contains("a/low"));
  // a/high (priority 100) fits on n2 only because a/low yields its claim: a 1 + 2 = 3 without
  // it, 5 with it, beyond what b (holding 1 of its 2) lends.
  w.c.s->OnPodAdd(GpuPod("a", "high", 2, 100));
  w.c.Run();
  REQUIRE(w.c.outcomes.scheduled.contains("a/high"));
  CHECK(w.c.s->NominatedNodeOf("a/low").empty());
  // a/low's claim is outgrown and its nomination dropped, so b's pod within b's nominal quota
  // takes what is left (a 3, b 2: 5 of 5). With the claim standing, b saw a at 5 and waited.
  w.c.s->OnPodAdd(GpuPod("b", "p", 1, 0));
  w.c.Run();
  CHECK(w.c.outcomes.scheduled.contains("b/p"));
  CHECK(w.c.GpusOf("b") == 2000);
  CHECK(w.c.api.evictions.empty());
}

TEST_CASE("QueueQuota: a pod placed past its teammates' nominations outgrows only the claims it "
          "needed, the least important first", "[quota][queue_quota]") {
  OutgrownWorld w;
  w.AddNominated("low", 2, 0);
  w.AddNominated("mid", 1, 50);
  w.c.Run();
  // a/high needs one claim gone (a 1 + 2 + 1 = 4 with a/mid's: within what b lends), a/low's.
  w.c.s->OnPodAdd(GpuPod("a", "high", 2, 100));
  w.c.Run();
  REQUIRE(w.c.outcomes.scheduled.contains("a/high"));
  CHECK(w.c.s->NominatedNodeOf("a/low").empty());
  CHECK(w.c.s->NominatedNodeOf("a/mid") == "n1");
}

TEST_CASE("Only quota said no: every rejecting plugin is a QuotaPlugin", "[quota][queue_quota]") {
  Cluster c(1);
  const Framework& fw = *c.s->FrameworkFor("tessel");
  CHECK(fw.IsQuotaPlugin("QueueQuota"));
  CHECK_FALSE(fw.IsQuotaPlugin("NodeResourcesFit"));
  CHECK_FALSE(fw.IsQuotaPlugin("NoSuchPlugin"));
  CHECK(fw.RejectedOnlyByQuota({"QueueQuota"}));
  CHECK(fw.RejectedOnlyByQuota({"QueueQuota", "QueueQuota"}));
  CHECK_FALSE(fw.RejectedOnlyByQuota({"QueueQuota", "GpuShare"}));
  CHECK_FALSE(fw.RejectedOnlyByQuota({}));
  CHECK_FALSE(fw.RejectedOnlyByQuota({""}));
}

// --- Generated properties -------------------------------------------------------------------

struct GenQueue {
  std::string name;
  std::string cohort;
  int64_t nominal = 0;                   // GPU milli
  std::optional<int64_t> borrowing_limit;
  std::optional<int64_t> lending_limit;
};

std::vector<GenQueue> RandomQueues(std::mt19937_64& rng, Cluster& c) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<GenQueue> out;
  const int n = pick(1, 5);
  for (int i = 0; i < n; ++i) {
    GenQueue q{.name = StrCat("q", i), .cohort = pick(0, 3) == 0 ? "" : StrCat("c", pick(0, 1)),
               .nominal = pick(0, 10) * 1000};
    json spec = {{"namespaces", {q.name}}, {"nominalQuota", {{"nvidia.com/gpu", StrCat(q.nominal / 1000)}}}};
    if (!q.cohort.empty()) {
      spec["cohort"] = q.cohort;
      if (pick(0, 1)) {
        q.borrowing_limit = pick(0, 6) * 1000;
        spec["borrowingLimit"] = {{"nvidia.com/gpu", StrCat(*q.borrowing_limit / 1000)}};
      }
      if (pick(0, 2) == 0) {
        q.lending_limit = pick(0, int(q.nominal / 1000)) * 1000;
        spec["lendingLimit"] = {{"nvidia.com/gpu", StrCat(*q.lending_limit / 1000)}};
      }
    }
    c.AddQueue(q.name, spec);
    out.push_back(q);
  }
  return out;
}

TEST_CASE("property: scheduled pods never break nominal, borrowing and lending limits",
          "[quota][queue_quota][property]") {
  int refused = 0, borrowed = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    Cluster c(4);  // 32 GPUs: capacity is rarely what stops a pod
    const std::vector<GenQueue> queues = RandomQueues(rng, c);
    // A stream of pods in bursts: each burst is scheduled before the next arrives, and some
    // running pods end between bursts.
    int serial = 0;
    for (int burst = 0; burst < 4; ++burst) {
      for (int i = pick(3, 10); i > 0; --i) {
        const GenQueue& q = queues[pick(0, int(queues.size()) - 1)];
        c.s->OnPodAdd(GpuPod(q.name, StrCat("p", serial++), pick(1, 3)));
      }
      c.Run();
      for (const auto& [key, node] : std::map(c.outcomes.scheduled)) {
        if (pick(0, 5) == 0) c.s->OnPodDelete(key);
      }
      c.clock.Advance(absl::Minutes(6));
    }
    c.Run();
    for (const auto& [key, message] : c.outcomes.failures) {
      refused += message.find(" queue q") != std::string::npos;
    }
    std::map<std::string, int64_t> used;
    for (const GenQueue& q : queues) used[q.name] = c.GpusOf(q.name);
    for (const GenQueue& q : queues) {
      const int64_t u = used[q.name];
      if (q.cohort.empty()) {
        CHECK(u <= q.nominal);
        continue;
      }
      borrowed += u > q.nominal;
      if (q.borrowing_limit) CHECK(u <= q.nominal + *q.borrowing_limit);
      // What the members borrow from each other never exceeds what they lend: no lender is
      // left with less than nominal - lendingLimit for itself.
      int64_t lent = 0, taken = 0;
      for (const GenQueue& m : queues) {
        if (m.cohort != q.cohort) continue;
        const int64_t lendable = m.lending_limit.value_or(m.nominal);
        lent += lendable;
        taken += std::max<int64_t>(0, used[m.name] - (m.nominal - lendable));
      }
      CHECK(taken <= lent);
    }
  }
  CHECK(refused > 50);   // quota does stop pods
  CHECK(borrowed > 20);  // and queues do borrow
}

TEST_CASE("property: reclaim through the victim policy evicts no more than needed, lowest "
          "priority and most recent first, and only from queues that still borrow",
          "[quota][queue_quota][property]") {
  int reclaimed = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    Hooks h;
    const int64_t own_nominal = pick(1, 4), lender_nominal = pick(0, 2);
    const std::string policy = std::vector<std::string>{"Any", "LowerPriority"}[pick(0, 1)];
    h.SetQueues({QueueObject("own", {{"namespaces", {"own"}}, {"cohort", "c"},
                                     {"nominalQuota", {{"nvidia.com/gpu", StrCat(own_nominal)}}},
                                     {"preemption", {{"reclaimWithinCohort", policy}}}}),
                 QueueObject("b", {{"namespaces", {"b"}}, {"cohort", "c"},
                                   {"nominalQuota", {{"nvidia.com/gpu", StrCat(lender_nominal)}}}}),
                 QueueObject("d", {{"namespaces", {"d"}}, {"cohort", "c"},
                                   {"nominalQuota", {{"nvidia.com/gpu", "0"}}}})});
    // Borrowers b and d hold what "own" lends them (and b its own nominal).
    std::vector<Pod> running;
    int64_t room = own_nominal + lender_nominal;
    for (int i = 0; room > 0; ++i) {
      const int g = std::min<int>(int(room), pick(1, 2));
      running.push_back(h.Running(pick(0, 1) ? "b" : "d", StrCat("r", i), g, pick(0, 4), pick(0, 100)));
      room -= g;
    }
    const Pod pod = GpuPod("own", "p", int(pick(1, int(own_nominal))), pick(0, 5));
    CycleState state;
    REQUIRE(h.plugin->PreFilter(state, pod).ok());
    REQUIRE(h.FilterN1(state, pod).code() == Code::kUnschedulable);
    // Preemption's dry run, as kube-scheduler does it: remove every allowed victim, then
    // reprieve as many as possible, highest priority first.
    const NodeInfo& n1 = *h.handle.snapshot().Get("n1");
    std::vector<const Pod*> allowed;
    for (const Pod& v : running) {
      std::string reason;
      if (h.plugin->MayEvict(state, pod, v, &reason) == VictimVerdict::kAllow) {
        CHECK(reason == "reclaim");
        if (policy == "LowerPriority") CHECK(v.PriorityValue() < pod.PriorityValue());
        allowed.push_back(&v);
      }
    }
    for (const Pod* v : allowed) REQUIRE(h.plugin->RemovePod(state, pod, *v, n1).ok());
    if (!h.FilterN1(state, pod).ok()) continue;
    std::sort(allowed.begin(), allowed.end(), [](const Pod* a, const Pod* b) {
      if (a->PriorityValue() != b->PriorityValue()) return a->PriorityValue() > b->PriorityValue();
      return a->meta.creation_timestamp < b->meta.creation_timestamp;
    });
    std::vector<const Pod*> victims;
    for (const Pod* v : allowed) {
      REQUIRE(h.plugin->AddPod(state, pod, *v, n1).ok());
      if (h.FilterN1(state, pod).ok()) continue;
      REQUIRE(h.plugin->RemovePod(state, pod, *v, n1).ok());
      victims.push_back(v);
    }
    ++reclaimed;
    CHECK(h.FilterN1(state, pod).ok());
    std::map<std::string, int64_t> before{{"b", 0}, {"d", 0}};
    for (const Pod& r : running) before[r.meta.namespace_] += r.requests.Get(kNvidiaGpu);
    std::map<std::string, int64_t> after = before;
    for (const Pod* v : victims) after[v->meta.namespace_] -= v->requests.Get(kNvidiaGpu);
    // A queue at or below its nominal loses nothing.
    if (before["b"] <= lender_nominal * 1000) CHECK(after["b"] == before["b"]);
    // No more than needed: sparing any one victim leaves the pod unfit.
    for (const Pod* v : victims) {
      CycleState spared = state.Clone();
      REQUIRE(h.plugin->AddPod(spared, pod, *v, n1).ok());
      CHECK_FALSE(h.FilterN1(spared, pod).ok());
    }
    // Within each borrowing queue the policy allows its pods in eviction order (lowest
    // priority, most recently created first) while the queue still borrows: the last one may
    // take it below its nominal quota (Kueue's rule; sizes need not divide what it borrows).
    for (const auto& [ns, nominal] : std::map<std::string, int64_t>{{"b", lender_nominal * 1000}, {"d", 0}}) {
      std::vector<const Pod*> order;
      int64_t used = 0;
      for (const Pod& r : running) {
        if (r.meta.namespace_ != ns) continue;
        order.push_back(&r);
        used += r.requests.Get(kNvidiaGpu);
      }
      std::sort(order.begin(), order.end(), [](const Pod* a, const Pod* b) {
        if (a->PriorityValue() != b->PriorityValue()) return a->PriorityValue() < b->PriorityValue();
        if (a->meta.creation_timestamp != b->meta.creation_timestamp) {
          return a->meta.creation_timestamp > b->meta.creation_timestamp;
        }
        return a->Key() < b->Key();
      });
      for (const Pod* r : order) {
        const bool is_allowed = std::find(allowed.begin(), allowed.end(), r) != allowed.end();
        const bool fits_policy = policy == "Any" || r->PriorityValue() < pod.PriorityValue();
        const int64_t size = r->requests.Get(kNvidiaGpu);
        if (is_allowed) {
          CHECK(used > nominal);
          used -= size;
        } else if (fits_policy) {
          CHECK(used <= nominal);
        }
      }
    }
  }
  CHECK(reclaimed > 50);
}

TEST_CASE("property: fair sharing takes borrowed capacity only from a queue whose weighted "
          "dominant share stays at least the preemptor's",
          "[quota][queue_quota][property]") {
  int allowed_total = 0, denied_total = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    Hooks h;
    std::vector<json> objects;
    const std::vector<std::string> names = {"own", "x", "y", "idle"};
    for (const std::string& name : names) {
      objects.push_back(QueueObject(name, {{"namespaces", {name}}, {"cohort", "c"},
                                           {"nominalQuota", {{"nvidia.com/gpu", StrCat(pick(1, 2))}}},
                                           {"weight", StrCat(pick(1, 3))},
                                           {"preemption", {{"reclaimWithinCohort", "Any"}}}}));
    }
    h.SetQueues(objects);
    std::shared_ptr<const QueueDirectory> dir = h.handle.Queues();
    // own, x and y borrow what idle lends (and more may run than the cohort lends: pods placed
    // before the queues existed).
    std::vector<Pod> running;
    for (int i = 0, n = pick(4, 10); i < n; ++i) {
      running.push_back(h.Running(names[pick(0, 2)], StrCat("r", i), 1, pick(0, 3), pick(0, 100)));
    }
    const Pod pod = GpuPod("own", "p", 2, 9);
    CycleState state;
    REQUIRE(h.plugin->PreFilter(state, pod).ok());
    QuotaTracker usage(dir.get());
    for (const Pod& r : running) {
      usage.AddUsage(r.meta.namespace_, QuotaCharge(r, h.handle.snapshot().Get("n1")));
    }
    const Resources want = QuotaCharge(pod, h.handle.snapshot().Get("n1"));
    if (usage.WithinNominal("own", want)) continue;  // that is reclaim, not sharing
    QuotaTracker own_after = usage;
    own_after.AddUsage("own", want);
    const int64_t own_share = own_after.WeightedDominantShare("own");
    std::map<std::string, QuotaTracker> theirs_after;
    for (const Pod& v : running) {
      std::string reason;
      const VictimVerdict verdict = h.plugin->MayEvict(state, pod, v, &reason);
      if (v.meta.namespace_ == "own") continue;  // withinQueue Never
      if (verdict != VictimVerdict::kAllow) {
        ++denied_total;
        continue;
      }
      ++allowed_total;
      CHECK(reason == "fair-share");
      auto [it, fresh] = theirs_after.try_emplace(v.meta.namespace_, usage);
      it->second.SubUsage(v.meta.namespace_, QuotaCharge(v, h.handle.snapshot().Get("n1")));
      const Queue& theirs = *dir->Find(v.meta.namespace_);
      CHECK(it->second.Usage(theirs.name()).Get(kNvidiaGpu) >= theirs.nominal.Get(kNvidiaGpu));
    }
    // All the allowed victims of a queue evicted together leave it at least at the
    // preemptor's share after admission.
    for (const auto& [queue, after] : theirs_after) {
      CHECK(after.WeightedDominantShare(queue) >= own_share);
    }
  }
  CHECK(allowed_total > 20);
  CHECK(denied_total > 20);
}

}  // namespace queue_quota_test
}  // namespace tessel

namespace tessel {
namespace queue_quota_test {

TEST_CASE("QueueQuota: in a tree of cohorts, reclaim takes back from the nearest subtree that borrows",
          "[quota][queue_quota][preemption][cohort]") {
  // org <- dept-a <- a1 (4, reclaims Any), a2 (2); org <- dept-b <- b1 (2). One node of 8 GPUs:
  // all 8 are quota, and a1 lends its 4 while it is idle.
  Cluster c(1);
  for (const auto& [name, parent] : {std::pair{"org", ""}, {"dept-a", "org"}, {"dept-b", "org"}}) {
    REQUIRE(c.harness.ApplyQueueObject(CohortObject(name, parent)).ok());
  }
  c.AddQueue("a1", {{"namespaces", {"a1"}}, {"cohort", "dept-a"}, {"nominalQuota", {{"nvidia.com/gpu", "4"}}},
                    {"preemption", {{"reclaimWithinCohort", "Any"}}}});
  c.AddQueue("a2", {{"namespaces", {"a2"}}, {"cohort", "dept-a"}, {"nominalQuota", {{"nvidia.com/gpu", "2"}}}});
  c.AddQueue("b1", {{"namespaces", {"b1"}}, {"cohort", "dept-b"}, {"nominalQuota", {{"nvidia.com/gpu", "2"}}}});
  int a2_pods = 0, b1_pods = 0;
  SECTION("a sibling and a cousin both borrow: the sibling gives back") {
    a2_pods = 2;  // borrows 2 inside dept-a
    b1_pods = 2;  // borrows 2 through org
  }
  SECTION("only the cousin borrows: it gives back, through org") {
    a2_pods = 1;
    b1_pods = 3;  // borrows 4
  }
  for (int i = 0; i < a2_pods; ++i) c.s->OnPodAdd(GpuPod("a2", StrCat("a2-", i), 2));
  for (int i = 0; i < b1_pods; ++i) c.s->OnPodAdd(GpuPod("b1", StrCat("b1-", i), 2));
  c.Run();
  REQUIRE(c.GpusOf("a2") + c.GpusOf("b1") == 8000);
  c.s->OnPodAdd(GpuPod("a1", "want", 2, 5));
  c.RunWithEvictions(3);
  INFO(c.outcomes.failures["a1/want"]);
  CHECK(c.outcomes.scheduled.contains("a1/want"));
  REQUIRE(c.api.evictions.size() == 1);
  CHECK(c.api.evictions[0].starts_with(a2_pods == 2 ? "a2/" : "b1/"));
}

}  // namespace queue_quota_test
}  // namespace tessel

namespace tessel {
namespace queue_quota_test {

TEST_CASE("QueueQuota: fair sharing in a tree compares the two subtrees where the queues meet",
          "[quota][queue_quota][cohort]") {
  // org <- dept-a <- a1 (2), a2 (2); org <- dept-b <- b1 (2). b1 runs 5 of the node's 8 GPUs:
  // dept-b borrows 3 of what org lends. a1 asks 4: above its own nominal quota (no reclaim),
  // but dept-a stays within its subtree's 4, so at org dept-a's share (0) is below dept-b's.
  Hooks h;
  auto cohort = [](std::string name, std::string parent) { return CohortObject(std::move(name), parent); };
  auto queue = [](std::string name, std::string cohort_name) {
    return QueueObject(name, {{"namespaces", {name}}, {"cohort", cohort_name},
                              {"nominalQuota", {{"nvidia.com/gpu", "2"}}},
                              {"preemption", {{"reclaimWithinCohort", "LowerPriority"}}}});
  };
  h.SetQueues({cohort("org", ""), cohort("dept-a", "org"), cohort("dept-b", "org"), queue("a1", "dept-a"),
               queue("a2", "dept-a"), queue("b1", "dept-b")});
  std::vector<Pod> b_pods;
  for (int i = 0; i < 5; ++i) b_pods.push_back(h.Running("b1", StrCat("b-", i), 1, 0, i));
  const Pod preemptor = GpuPod("a1", "p", 4, 5);
  CycleState state;
  REQUIRE(h.plugin->PreFilter(state, preemptor).ok());
  std::string reason;
  // Eviction order: newest first. Three may go (dept-b keeps its own 2, and its share stays at
  // least dept-a's 0); the last two are dept-b's own quota.
  CHECK(h.plugin->MayEvict(state, preemptor, b_pods[4], &reason) == VictimVerdict::kAllow);
  CHECK(reason == "fair-share");
  CHECK(h.plugin->MayEvict(state, preemptor, b_pods[2], &reason) == VictimVerdict::kAllow);
  CHECK(h.plugin->MayEvict(state, preemptor, b_pods[1], &reason) == VictimVerdict::kDeny);
}

}  // namespace queue_quota_test
}  // namespace tessel

namespace tessel {
namespace queue_quota_test {

TEST_CASE("QueueQuota: usageHalfLifeSeconds is an integer from 0 (off) to a year",
          "[quota][queue_quota][decay]") {
  auto args = QueueQuota::ParseArgs(YAML::Load("{usageHalfLifeSeconds: 3600}"));
  REQUIRE(args.ok());
  CHECK(args->usage_half_life_seconds == 3600);
  CHECK(QueueQuota::ParseArgs(YAML::Load("{}"))->usage_half_life_seconds == 0);
  auto negative = QueueQuota::ParseArgs(YAML::Load("{usageHalfLifeSeconds: -1}"));
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.status().message() ==
        "QueueQuota: args.usageHalfLifeSeconds: want an integer in 0..31536000, got \"-1\"");
  auto words = QueueQuota::ParseArgs(YAML::Load("{usageHalfLifeSeconds: 1h}"));
  REQUIRE_FALSE(words.ok());
  CHECK(words.status().message() ==
        "QueueQuota: args.usageHalfLifeSeconds: want an integer in 0..31536000, got \"1h\"");
}

// Cohort c: a (nominal 2), b (nominal 2) and an idle lender l (4): the cohort lends 8. `past`
// runs 6 GPUs for four half-lives of the hooks' decay (a minute; PreFilter advances it on the
// handle's clock), then those pods end.
void PastInCohortC(Hooks& h, const std::string& past) {
  auto queue = [](std::string name, std::string gpus) {
    return QueueObject(name, {{"namespaces", {name}}, {"cohort", "c"},
                              {"nominalQuota", {{"nvidia.com/gpu", std::move(gpus)}}},
                              {"preemption", {{"reclaimWithinCohort", "Any"}}}});
  };
  h.SetQueues({queue("a", "2"), queue("b", "2"), queue("l", "4")});
  std::vector<Pod> history;
  for (int i = 0; i < 6; ++i) history.push_back(h.Running(past, StrCat("old-", i), 1, 0, i));
  const Pod probe = GpuPod(past, "probe", 1, 0);
  for (int i = 0; i <= 4; ++i) {
    if (i > 0) h.handle.manual_clock().Advance(absl::Seconds(60));
    CycleState state;
    REQUIRE(h.plugin->PreFilter(state, probe).ok());
  }
  for (const Pod& p : history) h.handle.RemovePod(p.Key());
}

TEST_CASE("QueueQuota: with usage decay, a queue that used much recently loses fair-share "
          "preemption to one that did not", "[quota][queue_quota][decay]") {
  // Cohort c: a (nominal 2), b (nominal 2) and an idle lender l (4): the cohort lends 8.
  // For four half-lives a runs 6 GPUs (borrows 4) and b nothing. Then a runs 2 (its nominal)
  // and b 5 (borrows 3, share 375 per mille). A pod of a asking 1 GPU would borrow 1 (125):
  // on the instant, b's newest pod may go (b keeps 250 >= 125). With decay, a's decayed usage
  // is 6 * (1 - 2^-4) = 5.625 GPUs, 3.625 borrowed: 453 per mille more, so a counts 578 and
  // may not take from b (250 + b's decayed share, 0).
  auto setup = [](Hooks& h) {
    PastInCohortC(h, "a");
    h.Running("a", "now-0", 1, 0, 10);
    h.Running("a", "now-1", 1, 0, 11);
    std::vector<Pod> b;
    for (int i = 0; i < 5; ++i) b.push_back(h.Running("b", StrCat("b-", i), 1, 0, 20 + i));
    return b;
  };
  const Pod preemptor = GpuPod("a", "p", 1, 5);

  Hooks instant;
  const std::vector<Pod> b_instant = setup(instant);
  CHECK_FALSE(instant.plugin->decays_usage());
  CycleState s1;
  REQUIRE(instant.plugin->PreFilter(s1, preemptor).ok());
  std::string reason;
  CHECK(instant.plugin->MayEvict(s1, preemptor, b_instant[4], &reason) == VictimVerdict::kAllow);
  CHECK(reason == "fair-share");

  Hooks timed({.usage_half_life_seconds = 60});
  const std::vector<Pod> b_timed = setup(timed);
  CHECK(timed.plugin->DecayedUsage().at("a").Get(kNvidiaGpu) == 5625);
  CHECK_FALSE(timed.plugin->DecayedUsage().contains("b"));
  CycleState s2;
  REQUIRE(timed.plugin->PreFilter(s2, preemptor).ok());
  reason.clear();
  CHECK(timed.plugin->MayEvict(s2, preemptor, b_timed[4], &reason) == VictimVerdict::kDeny);
  CHECK(reason.empty());

  // Once a's past has decayed (40 half-lives at its nominal), it takes from b again.
  timed.handle.manual_clock().Advance(absl::Seconds(60 * 40));
  CycleState s3;
  REQUIRE(timed.plugin->PreFilter(s3, preemptor).ok());
  CHECK(timed.plugin->DecayedUsage().at("a").Get(kNvidiaGpu) == 2000);
  CHECK(timed.plugin->DecayedUsage().at("b").Get(kNvidiaGpu) == 5000);
  CHECK(timed.plugin->MayEvict(s3, preemptor, b_timed[4], &reason) == VictimVerdict::kAllow);
}

TEST_CASE("QueueQuota: with usage decay, fair-share preemption never takes what the shares of "
          "the instant would not", "[quota][queue_quota][decay]") {
  // Cohort c: a (nominal 2), b (nominal 2) and an idle lender l (4): the cohort lends 8.
  // For four half-lives b runs 6 GPUs and a nothing; then b runs 4 (borrows 2, 250 per mille)
  // and a 3 (borrows 1, 125). A pod of a asking 2 would borrow 3 (375), and b, its newest pod
  // evicted, would borrow 1 (125): on the instant a may not take it. With decay b counts its
  // recent past beside (5.625 GPUs decayed, 453 per mille more), so b's share plus its past
  // (578) is above a's (375); fair sharing with decay still asks both, so the eviction is
  // denied: decay decides which pending pods go first and whom a preemptor may not take from,
  // never a preemption the instant shares would undo (that eviction would be given back).
  Hooks h({.usage_half_life_seconds = 60});
  PastInCohortC(h, "b");
  std::vector<Pod> b;
  for (int i = 0; i < 4; ++i) b.push_back(h.Running("b", StrCat("b-", i), 1, 0, 20 + i));
  for (int i = 0; i < 3; ++i) h.Running("a", StrCat("a-", i), 1, 0, 30 + i);
  CHECK(h.plugin->DecayedUsage().at("b").Get(kNvidiaGpu) == 5625);
  CHECK_FALSE(h.plugin->DecayedUsage().contains("a"));

  std::string reason;
  CycleState two;
  const Pod asks_two = GpuPod("a", "p", 2, 5);
  REQUIRE(h.plugin->PreFilter(two, asks_two).ok());
  CHECK(h.plugin->MayEvict(two, asks_two, b[3], &reason) == VictimVerdict::kDeny);
  CHECK(reason.empty());
  // Asking 1, a would borrow 2 (250) and b keep 1 borrowed (125) after: still denied on the
  // instant. With b holding one more (5, borrows 3), both rules let a take b's newest pod.
  CycleState one;
  const Pod asks_one = GpuPod("a", "q", 1, 5);
  REQUIRE(h.plugin->PreFilter(one, asks_one).ok());
  CHECK(h.plugin->MayEvict(one, asks_one, b[3], &reason) == VictimVerdict::kDeny);
  b.push_back(h.Running("b", "b-4", 1, 0, 24));
  CycleState more;
  REQUIRE(h.plugin->PreFilter(more, asks_one).ok());
  CHECK(h.plugin->MayEvict(more, asks_one, b[4], &reason) == VictimVerdict::kAllow);
  CHECK(reason == "fair-share");
}

// The decayed usage follows what the queues hold while nothing is scheduled too: the loop's
// housekeeping (TimekeeperPlugin) advances it between cycles and while idle. Before, only a
// PreFilter advanced it, with the usage of the last one held over the whole quiet spell: a team
// whose pods ended just after it counted as running them all along.
TEST_CASE("QueueQuota: with usage decay, a quiet spell counts what the queues held during it",
          "[quota][queue_quota][decay]") {
  Cluster c(1, kNodeSize, R"(
profiles:
- schedulerName: tessel
  pluginConfig:
  - name: QueueQuota
    args: {usageHalfLifeSeconds: 60}
)");
  c.AddQueue("team-a", {{"namespaces", {"a"}}, {"nominalQuota", {{"nvidia.com/gpu", "8"}}}});
  for (int i = 0; i < 6; ++i) c.s->OnPodAdd(GpuPod("a", StrCat("j", i)));
  c.Run();
  REQUIRE(c.GpusOf("a") == 6000);
  auto* quota = dynamic_cast<QueueQuota*>(c.s->FrameworkFor("tessel")->FindPlugin(QueueQuota::kName));
  REQUIRE(quota != nullptr);
  // The loop waits with nothing to do, looking every 15 s here (the binary looks every half second).
  auto idle = [&](absl::Duration spell) {
    for (absl::Duration t; t < spell; t += absl::Seconds(15)) {
      c.clock.Advance(absl::Seconds(15));
      CHECK_FALSE(c.s->ScheduleOne());
    }
  };
  // Four half-lives with 6 GPUs held: 6 x (1 - 2^-4) = 5.625 GPUs, less a little: the last look
  // at t0 (the sixth pod's PreFilter) saw 5, which counts until the first idle look 15 s later.
  // (Without the idle looks: 0, nothing advanced.)
  idle(absl::Seconds(240));
  const int64_t after_run = quota->DecayedUsage()["team-a"].Get(kNvidiaGpu);
  CHECK(after_run > 5600);
  CHECK(after_run <= 5625);
  // The pods end; ten half-lives later a new pod of team-a is scheduled. What decayed is what
  // was held: 5.625 x 2^-10 plus at most one look's 15 s of the 6 GPUs, a few milli-GPU (held
  // over the spell, it would be about 6 GPUs).
  for (int i = 0; i < 6; ++i) c.s->OnPodDelete(StrCat("a/j", i));
  idle(absl::Seconds(600));
  c.s->OnPodAdd(GpuPod("a", "later"));
  c.Run();
  CHECK(quota->DecayedUsage()["team-a"].Get(kNvidiaGpu) < 10);
}

TEST_CASE("QueueQuota: decayed usage restored after a restart moves on from the time it was "
          "written", "[quota][queue_quota][decay]") {
  Hooks off;
  CHECK_FALSE(off.plugin->RestoreDecayedUsage("a", Res("nvidia.com/gpu:6"), off.handle.clock().Now()));

  Hooks h({.usage_half_life_seconds = 60});
  h.SetQueues({QueueObject("a", {{"namespaces", {"a"}}, {"nominalQuota", {{"nvidia.com/gpu", "4"}}}})});
  h.Running("a", "now-0", 2, 0, 1);
  // The status says 6 GPUs one half-life ago; a holds 2 now (its pods ran on meanwhile).
  REQUIRE(h.plugin->RestoreDecayedUsage("a", Res("nvidia.com/gpu:6"),
                                        h.handle.clock().Now() - absl::Seconds(60)));
  CycleState state;
  REQUIRE(h.plugin->PreFilter(state, GpuPod("a", "p", 1)).ok());
  CHECK(h.plugin->DecayedUsage().at("a").Get(kNvidiaGpu) == 4000);
  CHECK(h.plugin->DecayedAt() == h.handle.clock().Now());
  // Too late once it has counted.
  CHECK_FALSE(h.plugin->RestoreDecayedUsage("a", Res("nvidia.com/gpu:6"), h.handle.clock().Now()));
}

}  // namespace queue_quota_test
}  // namespace tessel

namespace tessel {
namespace queue_quota_test {

// The composition property (issue 40's loop check, seed 202 and others): a gang's reclaim was
// judged by its first member's charge alone. Team b (nominal 4) runs 2 GPUs; team a (nominal 4)
// borrows 2 with one 6-GPU pod. b's gang of three 1-GPU members would take b to 5, above its
// nominal: that is fair sharing, not reclaim, and a may not go below its nominal for a borrower.
// Judged by its first member (b at 3 of 4), a's pod went as "reclaim", the gang then borrowed
// the room it freed, and a, back within its nominal, could reclaim it right back: a loop.
TEST_CASE("QueueQuota: a gang reclaims only when the whole gang stays within its queue's nominal quota",
          "[quota][queue_quota][preemption][gang]") {
  Cluster c(2);  // 16 GPUs; the quota (8) binds, not the room
  c.AddQueue("team-a", {{"namespaces", {"a"}}, {"cohort", "lab"}, {"nominalQuota", {{"nvidia.com/gpu", "4"}}}});
  c.AddQueue("team-b", {{"namespaces", {"b"}}, {"cohort", "lab"}, {"nominalQuota", {{"nvidia.com/gpu", "4"}}},
                        {"preemption", {{"reclaimWithinCohort", "Any"}}}});
  c.s->OnPodAdd(GpuPod("a", "big", 6));
  c.s->OnPodAdd(GpuPod("b", "b-0", 2));
  c.Run();
  REQUIRE(c.GpusOf("a") == 6000);
  REQUIRE(c.GpusOf("b") == 2000);
  int members = 3;
  SECTION("three members would take b above its nominal quota: no reclaim, and no fair share below a's nominal") {}
  SECTION("two members keep b within its nominal quota: they reclaim") { members = 2; }
  REQUIRE(c.harness.ApplyGangObject({{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                                     {"kind", "PodGroup"},
                                     {"metadata", {{"name", "g"}, {"namespace", "b"}}},
                                     {"spec", {{"minMember", members}}}})
              .value());
  for (int i = 0; i < members; ++i) {
    Pod m = GpuPod("b", StrCat("g-", i), 1);
    m.meta.labels["scheduling.x-k8s.io/pod-group"] = "g";
    c.s->OnPodAdd(std::move(m));
  }
  c.RunWithEvictions(3);
  INFO("evictions: " << StrJoin(c.api.evictions, "; ") << "; g-0: " << c.outcomes.failures["b/g-0"]);
  if (members == 3) {
    CHECK(c.api.evictions.empty());
    CHECK(c.GpusOf("a") == 6000);
    CHECK(c.GpusOf("b") == 2000);
  } else {
    CHECK(c.api.evictions == std::vector<std::string>{"a/big"});
    CHECK(c.GpusOf("b") == 4000);
  }
}

}  // namespace queue_quota_test
}  // namespace tessel

namespace tessel {
namespace queue_quota_test {

// The composition property (issue 40's loop check, seed 161): a share was what a subtree
// borrows over what its parent's children lend. Where they lend nothing (queues of nominal 0 in
// a cohort that holds the quota itself), every share was 0, so fair sharing allowed any victim
// (0 >= 0) and the victim's queue could take it right back by the same rule. The pool is the
// parent's subtree quota: its own quota and what its children lend.
TEST_CASE("QueueQuota: fair sharing among queues that lend nothing still compares what they borrow",
          "[quota][queue_quota][cohort]") {
  Hooks h;
  auto queue = [](const std::string& name) { return LabQueue(name, {{"nvidia.com/gpu", "0"}}); };
  h.SetQueues({CohortObject("lab", "", {{"nominalQuota", {{"nvidia.com/gpu", "3"}}}}), queue("a"), queue("b")});
  std::vector<Pod> b_pods;
  for (int i = 0; i < 3; ++i) b_pods.push_back(h.Running("b", StrCat("b-", i), 1, 0, i));
  const Pod preemptor = GpuPod("a", "p", 2, 0);
  CycleState state;
  REQUIRE(h.plugin->PreFilter(state, preemptor).ok());
  std::string reason;
  // a would borrow 2 of lab's 3; b keeps a share at least that with 2, not with 1.
  CHECK(h.plugin->MayEvict(state, preemptor, b_pods[2], &reason) == VictimVerdict::kAllow);
  CHECK(reason == "fair-share");
  CHECK(h.plugin->MayEvict(state, preemptor, b_pods[1], &reason) == VictimVerdict::kDeny);
  CHECK(h.plugin->MayEvict(state, preemptor, b_pods[0], &reason) == VictimVerdict::kDeny);
}

}  // namespace queue_quota_test
}  // namespace tessel

namespace tessel {
namespace queue_quota_test {

// The composition property (issue 40's loop check, seeds 1303 and 1825 of 2,000 + 1,000): two
// departments each within their subtree quota, their teams above their own nominal quotas, the
// node full. A team's preemptor would borrow, so fair sharing judged it; at org both sides had a
// share of 0, so it took the other team's pod (0 >= 0), and that team's next pod took the room
// back by the same rule. Fair sharing takes only what the victim's side borrows where the two
// queues meet.
TEST_CASE("QueueQuota: fair sharing takes nothing from a subtree that does not borrow where the queues meet",
          "[quota][queue_quota][cohort]") {
  Hooks h;
  auto cohort = [](std::string name, std::string parent, int gpus) {
    return CohortObject(std::move(name), parent, {{"nominalQuota", {{"nvidia.com/gpu", std::to_string(gpus)}}}});
  };
  auto queue = [](std::string name, std::string cohort_name) {
    return QueueObject(name, {{"namespaces", {name}}, {"cohort", cohort_name},
                              {"nominalQuota", {{"nvidia.com/gpu", "2"}}},
                              {"preemption", {{"reclaimWithinCohort", "Any"}}}});
  };
  // org <- dept-a (4) <- a (2); org <- dept-b (4) <- b (2): each department's subtree quota is 6.
  h.SetQueues({cohort("org", "", 0), cohort("dept-a", "org", 4), cohort("dept-b", "org", 4), queue("a", "dept-a"),
               queue("b", "dept-b")});
  std::vector<Pod> a_pods;
  for (int i = 0; i < 4; ++i) a_pods.push_back(h.Running("a", StrCat("a-", i), 1, 0, i));
  for (int i = 0; i < 4; ++i) h.Running("b", StrCat("b-", i), 1, 0, 10 + i);
  std::string reason;
  SECTION("dept-a within its subtree quota keeps its pods") {
    const Pod preemptor = GpuPod("b", "p", 1, 5);
    CycleState state;
    REQUIRE(h.plugin->PreFilter(state, preemptor).ok());
    CHECK(h.plugin->MayEvict(state, preemptor, a_pods[3], &reason) == VictimVerdict::kDeny);
  }
  SECTION("dept-a borrowing from org gives back by fair sharing") {
    for (int i = 4; i < 7; ++i) a_pods.push_back(h.Running("a", StrCat("a-", i), 1, 0, i));  // dept-a at 7 of 6
    const Pod preemptor = GpuPod("b", "p", 1, 5);
    CycleState state;
    REQUIRE(h.plugin->PreFilter(state, preemptor).ok());
    CHECK(h.plugin->MayEvict(state, preemptor, a_pods[6], &reason) == VictimVerdict::kAllow);
    CHECK(reason == "fair-share");
  }
}

}  // namespace queue_quota_test
}  // namespace tessel

namespace tessel {
namespace queue_quota_test {

// The composition property (issue 40's loop check, seed 855 of 2,000 + 1,000): a victim in a
// gang was judged by its own charge, while preemption evicts the gang whole, its mates on other
// nodes with it. Each member kept its queue at its nominal quota alone; together they took it
// below, and the queue reclaimed the room right back. A gang member is judged by what the gang
// charges on every node.
TEST_CASE("QueueQuota: a victim in a gang is judged with its mates on other nodes",
          "[quota][queue_quota][preemption][gang]") {
  Hooks h;
  h.handle.AddNode(NodeBuilder("n2").Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8").Build());
  auto queue = [](const std::string& name) { return LabQueue(name, {{"nvidia.com/gpu", "4"}}); };
  h.SetQueues({queue("a"), queue("b")});
  auto running = [&](std::string ns, std::string name, int gpus, std::string node, int64_t created) {
    Pod p = PodBuilder(std::move(name), std::move(ns))
                .Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus))
                .Created(created)
                .Node(std::move(node))
                .Build();
    h.handle.AddPod(p);
    return p;
  };
  // a holds its nominal 4; b holds 7 (borrows 3): b-0 (3) and the gang g of 2 x 2 across n1, n2.
  running("a", "a-0", 4, "n2", 0);
  running("b", "b-0", 3, "n1", 1);
  const Pod g0 = running("b", "g-0", 2, "n1", 2);
  const Pod g1 = running("b", "g-1", 2, "n2", 2);
  h.handle.SetGang(g0.Key(), "b/g");
  h.handle.SetGang(g1.Key(), "b/g");
  // a asks 1 more: it would borrow 1 (share 125 per mille of lab's 8).
  const Pod preemptor = GpuPod("a", "p", 1, 5);
  std::string reason;
  SECTION("the gang would take b below its nominal quota: neither member may go") {
    CycleState state;
    REQUIRE(h.plugin->PreFilter(state, preemptor).ok());
    // Alone, each member leaves b at 5 (a share of 125, a's after): the old rule let it go.
    CHECK(h.plugin->MayEvict(state, preemptor, g0, &reason) == VictimVerdict::kDeny);
    CHECK(h.plugin->MayEvict(state, preemptor, g1, &reason) == VictimVerdict::kDeny);
  }
  SECTION("with 2 more of b's elsewhere, the gang may go and b keeps its nominal quota") {
    running("b", "b-1", 2, "n2", 0);
    CycleState state;
    REQUIRE(h.plugin->PreFilter(state, preemptor).ok());
    CHECK(h.plugin->MayEvict(state, preemptor, g0, &reason) == VictimVerdict::kAllow);
    CHECK(reason == "fair-share");
    CHECK(h.plugin->MayEvict(state, preemptor, g1, &reason) == VictimVerdict::kAllow);
  }
}

}  // namespace queue_quota_test
}  // namespace tessel

namespace tessel {
namespace queue_quota_test {

// The composition property (issue 40's loop check, seed 1356 of 2,000 + 1,000): a preemptor's
// cycle leaves out its own queue's nominated pods of lower priority (they yield to it), so its
// queue looked within its nominal quota, or below its share, while every other queue's cycle
// counted them; once they were placed the queue it took from took the room back by the same
// rule. Preemption for quota judges the preemptor's queue with them.
TEST_CASE("QueueQuota: a preemptor's queue is judged with its nominated pods of lower priority",
          "[quota][queue_quota][preemption]") {
  Hooks h;
  auto queue = [](const std::string& name) { return LabQueue(name, {{"nvidia.com/gpu", "4"}}); };
  h.SetQueues({queue("a"), queue("b")});
  // a holds 6 of lab's 8 (borrows 2 of b's quota); b holds 2.
  std::vector<Pod> a_pods;
  for (int i = 0; i < 6; ++i) a_pods.push_back(h.Running("a", StrCat("a-", i), 1, 0, i));
  h.Running("b", "b-0", 2, 0, 10);
  const Pod preemptor = GpuPod("b", "p", 2, 10);
  std::string reason;
  SECTION("alone, b reclaims within its nominal quota") {
    CycleState state;
    REQUIRE(h.plugin->PreFilter(state, preemptor).ok());
    CHECK(h.plugin->MayEvict(state, preemptor, a_pods[5], &reason) == VictimVerdict::kAllow);
    CHECK(reason == "reclaim");
  }
  SECTION("with b's pod of 4 nominated, b would hold 8: no reclaim, and its share is above a's") {
    h.handle.Nominate(GpuPod("b", "nominated", 4, 0), "n1");
    CycleState state;
    REQUIRE(h.plugin->PreFilter(state, preemptor).ok());
    CHECK(h.plugin->MayEvict(state, preemptor, a_pods[5], &reason) == VictimVerdict::kDeny);
  }
}

}  // namespace queue_quota_test
}  // namespace tessel

namespace tessel {
namespace queue_quota_test {

// The composition property (issue 40's loop check, seed 2973 of 2,000 + 1,000): shares were
// compared by their dominant part alone. Where both sides borrow most of another resource (a
// flavor there), the shares tie whatever moves on the one they contend for, so each side took
// the other's pods there by fair sharing, back and forth. Shares tie only when they are equal
// part by part, largest first.
TEST_CASE("QueueQuota: fair sharing breaks a tie of dominant shares by the next largest",
          "[quota][queue_quota][cohort]") {
  Hooks h;
  auto queue = [](const std::string& name) { return LabQueue(name, {{"cpu", "0"}, {"nvidia.com/gpu", "4"}}); };
  // lab's own 20 CPUs, which both queues borrow; each queue's 4 GPUs.
  h.SetQueues({CohortObject("lab", "", {{"nominalQuota", {{"cpu", "20"}}}}), queue("a"), queue("b")});
  auto running = [&](std::string ns, std::string name, std::string requests, int64_t created) {
    Pod p = PodBuilder(std::move(name), std::move(ns)).Requests(requests).Created(created).Node("n1").Build();
    h.handle.AddPod(p);
    return p;
  };
  // Each borrows 8 of lab's 20 CPUs: a dominant share of 400 per mille on both sides.
  running("a", "a-cpu", "cpu:8", 0);
  running("b", "b-cpu", "cpu:8", 0);
  for (int i = 0; i < 3; ++i) running("a", StrCat("a-", i), "nvidia.com/gpu:1", 1 + i);
  int b_gpus = 5;
  SECTION("b borrows 1 GPU: a taking 2 would end above b by GPUs, the dominant CPU shares equal") {}
  SECTION("b borrows 2 GPUs: after the move both borrow 1, equal part by part") { b_gpus = 6; }
  std::vector<Pod> b_pods;
  for (int i = 0; i < b_gpus; ++i) b_pods.push_back(running("b", StrCat("b-", i), "nvidia.com/gpu:1", 10 + i));
  const Pod preemptor = PodBuilder("p", "a").Requests("nvidia.com/gpu:2").Priority(5).Build();
  CycleState state;
  REQUIRE(h.plugin->PreFilter(state, preemptor).ok());
  std::string reason;
  if (b_gpus == 5) {
    CHECK(h.plugin->MayEvict(state, preemptor, b_pods.back(), &reason) == VictimVerdict::kDeny);
  } else {
    CHECK(h.plugin->MayEvict(state, preemptor, b_pods.back(), &reason) == VictimVerdict::kAllow);
    CHECK(reason == "fair-share");
  }
}

}  // namespace queue_quota_test
}  // namespace tessel

namespace tessel {
namespace queue_quota_test {

// The composition property (seed 226 of the default family once gang victims were judged whole,
// seed 2982 of 3,000 + 1,500): a gang's members still to place were judged at the rate of the
// node its member was planned on. A member planned on a time-sliced GPU charges a replica's
// fraction, so the gang "reclaimed" within its queue's nominal quota; the plan then placed
// members on whole GPUs (its reprieve fits them again), the queue ended above its nominal quota,
// and the queue it took from reclaimed the room back. Every member counts at the most a node of
// the flavor would charge it.
TEST_CASE("QueueQuota: a gang is judged at the most its members could charge, wherever the plan puts them",
          "[quota][queue_quota][preemption][gang]") {
  Hooks h;  // n1: 8 whole GPUs
  h.handle.AddNode(NodeBuilder("sliced").Allocatable("cpu:64,memory:256Gi").TimeSliced(1, 4).Build());
  auto queue = [](const std::string& name) { return LabQueue(name, {{"nvidia.com/gpu", "4"}}); };
  h.SetQueues({queue("a"), queue("b")});
  // a holds 1; b holds 4 whole GPUs and a replica (250m): it borrows 250m.
  h.Running("a", "a-0", 1, 0, 0);
  for (int i = 0; i < 4; ++i) h.Running("b", StrCat("b-", i), 1, 0, i);
  const Pod replica = PodBuilder("b-replica", "b").Requests("cpu:1,nvidia.com/gpu:1").Created(9).Node("sliced").Build();
  h.handle.AddPod(replica);
  // a's gang of 4 x 1 GPU: on replicas 1 GPU in all (a within its nominal 4), on whole GPUs 4
  // (a at 5: it would borrow, and b's side would be left below a's share).
  auto members = std::make_shared<std::vector<PodRef>>();
  for (int i = 0; i < 4; ++i) members->push_back(std::make_shared<const Pod>(GpuPod("a", StrCat("g-", i), 1, 5)));
  CycleState state;
  SetSchedulingUnit(state, members);
  REQUIRE(h.plugin->PreFilter(state, *members->front()).ok());
  SECTION("no member placed yet") {}
  SECTION("the plan placed a member on a replica (it may move it to a whole GPU yet)") {
    REQUIRE(h.plugin->AddPod(state, *members->front(), *(*members)[1], *h.handle.snapshot().Get("sliced")).ok());
  }
  std::string reason;
  CHECK(h.plugin->MayEvict(state, *members->front(), replica, &reason) == VictimVerdict::kDeny);
}

}  // namespace queue_quota_test
}  // namespace tessel
