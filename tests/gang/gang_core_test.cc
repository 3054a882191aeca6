// Gangs in the scheduling core: one queue entry per gang, all-or-nothing assume and bind,
// competing gangs, minMember < size, gangs that never fit, missing PodGroups, timeouts on an
// injected clock, rollback after a bind failure with a fake binder, and a seeded property over
// random clusters and gang mixes: no partial gang is ever bound.
#include <catch2/catch.hpp>

#include <random>

#include "builders.h"
#include "plugins/registry.h"
#include "scheduler/core/scheduler.h"

namespace tessel::gang {
namespace {

using nlohmann::json;
using testing::NodeBuilder;
using testing::PodBuilder;

// Binds succeed unless the pod is told to fail (a number of times, or always).
class FakeBinder final : public ClusterApi {
 public:
  absl::Status Bind(const Pod& pod, const std::string& node, const StringMap&) override {
    ++attempts[pod.Key()];
    if (auto it = failures.find(pod.Key()); it != failures.end() && it->second != 0) {
      if (it->second > 0) --it->second;
      return absl::UnavailableError("apiserver unavailable");
    }
    bound[pod.Key()] = node;
    return absl::OkStatus();
  }
  absl::Status Evict(const Pod& pod, std::string_view) override {
    evicted.push_back(pod.Key());
    bound.erase(pod.Key());
    return absl::OkStatus();
  }
  void RecordEvent(const Pod&, std::string_view, std::string_view, std::string_view) override {}

  std::map<std::string, int> failures;  // pod key -> failures left (-1: always)
  std::map<std::string, int> attempts;
  std::map<std::string, std::string> bound;
  std::vector<std::string> evicted;
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

struct Core {
  ManualClock clock{absl::FromUnixSeconds(1'700'000'000)};
  Cache cache{&clock};
  Registry registry = InTreeRegistry();
  SchedulerConfig config;
  FakeBinder api;
  Recorder rec;
  std::unique_ptr<Scheduler> s;
  Core() {
    config.parallelism = 1;
    auto made = Scheduler::New(SchedulerParams{.registry = &registry,
                                               .config = &config,
                                               .defaults = &DefaultProfile(),
                                               .cache = &cache,
                                               .clock = &clock,
                                               .api = &api,
                                               .observer = &rec,
                                               .gang_status = &rec});
    REQUIRE(made.ok());
    s = *std::move(made);
  }
  void GpuNodes(int n, int gpus, std::string prefix = "gpu-") {
    for (int i = 0; i < n; ++i) {
      s->OnNodeAdd(NodeBuilder(StrCat(prefix, i))
                       .Allocatable(StrCat("cpu:64,memory:512Gi,nvidia.com/gpu:", gpus))
                       .Build());
    }
  }
  void PodGroup(std::string name, int min, std::optional<int> timeout = std::nullopt) {
    json pg = {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
               {"kind", "PodGroup"},
               {"metadata", {{"name", name}, {"namespace", "default"}}},
               {"spec", {{"minMember", min}}}};
    if (timeout) pg["spec"]["scheduleTimeoutSeconds"] = *timeout;
    REQUIRE(s->OnGangObject(pg).value());
  }
  // A team queue over the default namespace with a nominal GPU quota.
  void Quota(int gpus) {
    json queue = {{"apiVersion", "tessel.io/v1alpha1"},
                  {"kind", "Queue"},
                  {"metadata", {{"name", "team-a"}}},
                  {"spec", {{"namespaces", {"default"}}, {"nominalQuota", {{"nvidia.com/gpu", StrCat(gpus)}}}}}};
    REQUIRE(s->OnQueueObject(queue).ok());
  }
  Pod Member(std::string group, int i, std::string_view requests, int64_t created) {
    Pod p = PodBuilder(StrCat(group, "-", i)).Requests(requests).Created(created).Build();
    p.meta.labels["scheduling.x-k8s.io/pod-group"] = group;
    return p;
  }
  // Runs cycles until the queue has nothing ready; returns how many ran (at most 1000).
  int Run() {
    int cycles = 0;
    while (cycles < 1000 && s->ScheduleOne()) ++cycles;
    return cycles;
  }
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
  CHECK(c.rec.status.at("PodGroup default/a").phase == "Scheduled");
  CHECK(c.rec.status.at("PodGroup default/b").reason == "Unschedulable");

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
  CHECK(c.api.attempts.empty());
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
  CHECK(c.rec.status.at("PodGroup default/slow").phase == "Pending");
  c.clock.Advance(absl::Seconds(29));
  c.Run();
  CHECK(c.rec.status.at("PodGroup default/slow").phase == "Pending");
  c.clock.Advance(absl::Seconds(2));
  c.Run();
  const GangStatusUpdate& failed = c.rec.status.at("PodGroup default/slow");
  CHECK(failed.phase == "Failed");
  CHECK(failed.reason == "ScheduleTimeout");
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
  CHECK(c.rec.status.at("PodGroup default/slow").phase == "Scheduled");
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
  CHECK(st.phase == "Failed");
  CHECK(st.reason == "ScheduleTimeout");
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
  CHECK(st.phase == "Scheduled");
  // The informer reports the members as the kubelet moves them along.
  auto observe = [&](int i, PodPhase phase) {
    Pod p = c.Member("job", i, "cpu:1,nvidia.com/gpu:2", 100 + i);
    p.node_name = c.api.bound.at(p.Key());
    p.phase = phase;
    c.s->OnPodUpdate(std::move(p));
  };
  observe(0, PodPhase::kRunning);
  observe(1, PodPhase::kRunning);
  CHECK(c.rec.status.at("PodGroup default/job").phase == "Scheduled");  // 2 of minMember 3
  CHECK(c.rec.status.at("PodGroup default/job").running == 2);
  observe(2, PodPhase::kRunning);
  CHECK(c.rec.status.at("PodGroup default/job").phase == "Running");
  CHECK(c.rec.status.at("PodGroup default/job").running == 3);
  CHECK(c.rec.status.at("PodGroup default/job").scheduled == 4);

  SECTION("members succeed: Finished once minMember have") {
    for (int i = 0; i < 3; ++i) {
      observe(i, PodPhase::kSucceeded);
      c.s->OnPodDelete(StrCat("default/job-", i));  // finished pods leave the informer
    }
    const GangStatusUpdate& done = c.rec.status.at("PodGroup default/job");
    CHECK(done.phase == "Finished");
    CHECK(done.succeeded == 3);
    CHECK(done.running == 0);
  }
  SECTION("a member fails: Failed") {
    observe(1, PodPhase::kFailed);
    const GangStatusUpdate& failed = c.rec.status.at("PodGroup default/job");
    CHECK(failed.phase == "Failed");
    CHECK(failed.failed == 1);
    CHECK(failed.running == 2);
  }
  SECTION("a running member deleted: no longer counted") {
    c.s->OnPodDelete("default/job-2");
    CHECK(c.rec.status.at("PodGroup default/job").running == 2);
    CHECK(c.rec.status.at("PodGroup default/job").phase == "Scheduled");
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
    REQUIRE(c.s->OnGangObject(j).value());
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
    c.api.failures["default/ring-2"] = 2;
    c.Run();
    CHECK(c.BoundOf("ring") == 4);
    CHECK(c.api.attempts.at("default/ring-2") == 3);
    CHECK(c.api.evicted.empty());
  }
  SECTION("a persistent failure evicts the bound members and requeues the gang") {
    c.api.failures["default/ring-2"] = -1;
    CHECK(c.s->ScheduleOne());
    CHECK(c.api.attempts.at("default/ring-2") == 3);
    CHECK(c.api.bound.empty());
    std::vector<std::string> evicted = c.api.evicted;
    std::sort(evicted.begin(), evicted.end());
    CHECK(evicted == std::vector<std::string>{"default/ring-0", "default/ring-1", "default/ring-3"});
    CHECK_FALSE(c.cache.NodeOf("default/ring-2").has_value());  // forgotten, resources free
    CHECK(c.rec.status.at("PodGroup default/ring").reason == "BindFailed");
    CHECK_THAT(c.rec.unschedulable.at("default/ring-0"),
               Catch::Contains("binding default/ring-2 failed ("));
    // The evicted pods are deleted (a Job would recreate them); the gang comes back whole.
    for (const std::string& key : evicted) c.s->OnPodDelete(key);
    c.api.failures.clear();
    for (int i : {0, 1, 3}) c.s->OnPodAdd(c.Member("ring", i + 10, "cpu:1,nvidia.com/gpu:2", 200 + i));
    c.clock.Advance(absl::Seconds(30));
    c.Run();
    CHECK(c.BoundOf("ring") == 4);
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
  CHECK(c.rec.status["PodGroup default/g"].reason == "Unschedulable");
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
    if (pick(0, 1) == 1) c.api.failures[pods.front().Key()] = pick(0, 1) == 1 ? -1 : 1;
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

}  // namespace
}  // namespace tessel::gang
