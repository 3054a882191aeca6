// Prometheus text rendering: counters with labels, histograms (cumulative buckets, +Inf, sum,
// count), gauges, escaping; the attempt duration of a pod that chose a node ends with its binding
// cycle; preemption victims are counted by reason; the GPU and per-queue quota gauges read the
// cluster report (tests/unit/cluster_report_test.cc checks its figures).
#include <catch2/catch.hpp>

#include <atomic>
#include <sstream>

#include "nlohmann/json.hpp"
#include "default_scheduler.h"
#include "scheduler/kinds/object_kinds.h"
#include "scheduler/server/metrics.h"
#include "scheduler/util/strings.h"

namespace tessel::server {
namespace metrics_test {

// A pod of namespace team-a asking `gpus` milli-GPUs, on `node` ("" for pending).
Pod TeamAPod(std::string name, std::string node, int64_t gpus) {
  Pod p;
  p.meta.name = std::move(name);
  p.meta.namespace_ = "team-a";
  p.scheduler_name = "tessel";
  p.node_name = std::move(node);
  p.requests.Set("nvidia.com/gpu", gpus);
  p.requests.pods = 1;
  return p;
}

// A scheduler with the default profile on a manual clock, and its metrics.
struct MetricsWorld {
  explicit MetricsWorld(absl::Time start = absl::UnixEpoch(), SchedulerConfig with = {})
      : clock(start), d(&clock, std::move(with)) {}
  // The value of one series as rendered now, "absent" when it is not there.
  std::string Series(const std::string& name) const {
    const std::string text = r.Render();
    const size_t at = text.find("\n" + name + " ");
    if (at == std::string::npos) return "absent";
    const size_t start = at + name.size() + 2;
    return text.substr(start, text.find('\n', start) - start);
  }

  ManualClock clock;
  DefaultScheduler d;
  Cache& cache = d.cache;
  std::unique_ptr<Scheduler>& s = d.s;
  MetricsRegistry r;
  SchedulerMetrics m{&r, s.get()};
};

TEST_CASE("series names and values are formatted as Prometheus expects") {
  CHECK(FormatSeries("m", {}) == "m");
  CHECK(FormatSeries("m", {{"a", "x"}, {"b", "q\"u\\o\nte"}}) == R"(m{a="x",b="q\"u\\o\nte"})");
  CHECK(FormatValue(3) == "3");
  CHECK(FormatValue(0.25) == "0.25");
  CHECK(FormatValue(std::numeric_limits<double>::infinity()) == "+Inf");
}

TEST_CASE("registry renders counters, histograms and gauges") {
  MetricsRegistry r;
  CounterFamily& c = r.Counter("scheduler_schedule_attempts_total", "Attempts.", {"result", "profile"});
  c.Inc({"scheduled", "tessel"});
  c.Inc({"scheduled", "tessel"});
  c.Inc({"unschedulable", "tessel"});
  HistogramFamily& h = r.Histogram("lat_seconds", "Latency.", {"result"}, {0.1, 1});
  h.Observe({"scheduled"}, 0.05);
  h.Observe({"scheduled"}, 0.5);
  h.Observe({"scheduled"}, 5);
  r.Gauge("scheduler_pending_pods", "Pending.", [] {
    return std::vector<GaugeSample>{{{{"queue", "active"}}, 2}, {{{"queue", "backoff"}}, 0}};
  });
  const std::string want = R"(# HELP scheduler_schedule_attempts_total Attempts.
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{result="scheduled",profile="tessel"} 2
scheduler_schedule_attempts_total{result="unschedulable",profile="tessel"} 1
# HELP lat_seconds Latency.
# TYPE lat_seconds histogram
lat_seconds_bucket{result="scheduled",le="0.1"} 1
lat_seconds_bucket{result="scheduled",le="1"} 2
lat_seconds_bucket{result="scheduled",le="+Inf"} 3
lat_seconds_sum{result="scheduled"} 5.55
lat_seconds_count{result="scheduled"} 3
# HELP scheduler_pending_pods Pending.
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 2
scheduler_pending_pods{queue="backoff"} 0
)";
  CHECK(r.Render() == want);
  CHECK(c.Get({"scheduled", "tessel"}) == 2);
}

TEST_CASE("an attempt that chose a node is measured to the end of its binding cycle") {
  MetricsWorld w;
  Pod a, b, c;
  a.meta.name = "a";
  b.meta.name = "b";
  c.meta.name = "c";
  a.scheduler_name = b.scheduler_name = c.scheduler_name = "tessel";
  w.m.AttemptFinished(a, AttemptResult::kScheduled, absl::Seconds(2));  // the scheduling cycle took 2 s
  w.m.AttemptFinished(b, AttemptResult::kScheduled, absl::Seconds(1));
  w.m.AttemptFinished(c, AttemptResult::kUnschedulable, absl::Seconds(1));
  CHECK(w.Series(R"(scheduler_schedule_attempts_total{result="scheduled",profile="tessel"})") == "absent");
  w.clock.Advance(absl::Seconds(3));  // binding takes 3 s
  w.m.PodScheduled(a, "n");
  w.m.PodUnschedulable(b, FailureKind::kBindFailed, "binding rejected");
  CHECK(w.Series(R"(scheduler_schedule_attempts_total{result="scheduled",profile="tessel"})") == "1");
  CHECK(w.Series(R"(scheduler_schedule_attempts_total{result="error",profile="tessel"})") == "1");
  CHECK(w.Series(R"(scheduler_schedule_attempts_total{result="unschedulable",profile="tessel"})") == "1");
  CHECK(w.Series(R"(scheduler_scheduling_attempt_duration_seconds_sum{result="scheduled",profile="tessel"})") == "5");
  CHECK(w.Series(R"(scheduler_scheduling_attempt_duration_seconds_sum{result="error",profile="tessel"})") == "4");
  // An outcome without a binding cycle in progress is not counted twice.
  w.m.PodScheduled(a, "n");
  CHECK(w.Series(R"(scheduler_schedule_attempts_total{result="scheduled",profile="tessel"})") == "1");
}

TEST_CASE("preemption victims are observed per preemption and per reason") {
  MetricsWorld w;
  auto victim = [](std::string name, std::string reason) {
    auto p = std::make_shared<Pod>();
    p->meta.name = std::move(name);
    return PreemptionVictim{p, std::move(reason)};
  };
  Pod preemptor;
  preemptor.meta.name = "urgent";
  w.m.PodsPreempted(preemptor, "n1", {victim("a", "LowerPriority"), victim("b", "LowerPriority"),
                                    victim("c", "Reclaim")});
  w.m.PodsPreempted(preemptor, "n2", {victim("d", "LowerPriority")});
  w.m.PodsPreempted(preemptor, "", {});  // nothing evicted: not a preemption
  CHECK(w.Series("scheduler_preemption_attempts_total") == "2");
  CHECK(w.Series(R"(scheduler_preemption_victims_sum{reason="LowerPriority"})") == "3");
  CHECK(w.Series(R"(scheduler_preemption_victims_count{reason="LowerPriority"})") == "2");
  CHECK(w.Series(R"(scheduler_preemption_victims_sum{reason="Reclaim"})") == "1");
  CHECK(w.Series(R"(scheduler_preemption_victims_bucket{reason="LowerPriority",le="1"})") == "1");
  CHECK(w.Series(R"(scheduler_preemption_victims_bucket{reason="LowerPriority",le="2"})") == "2");
}

TEST_CASE("per-queue gauges: nominal quota, usage, borrowed and pending pods") {
  MetricsWorld w;
  CHECK(w.Series(R"(tessel_queue_pending_pods{queue="team-a",cohort="c"})") == "absent");
  for (const char* q : {"team-a", "team-b"}) {
    REQUIRE(DeliverObject(*w.s, nlohmann::json{
                  {"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"},
                  {"metadata", {{"name", q}}},
                  {"spec", {{"namespaces", {q}}, {"cohort", "c"},
                            {"nominalQuota", {{"nvidia.com/gpu", "2"}}}}}}).status()
                .ok());
  }
  Node n;
  n.meta.name = "n1";
  n.allocatable.Set("nvidia.com/gpu", 8000);
  n.allocatable.Set("cpu", 8000);
  n.allocatable.Set("pods", 110);
  w.s->OnNodeAdd(n);
  auto pod = TeamAPod;
  w.s->OnPodAdd(pod("running", "n1", 3000));  // borrows 1 of team-b's
  w.s->OnPodAdd(pod("waiting", "", 1000));
  CHECK(w.Series(R"(tessel_queue_nominal_quota{queue="team-a",cohort="c",resource="nvidia.com/gpu"})") == "2");
  CHECK(w.Series(R"(tessel_queue_usage{queue="team-a",cohort="c",resource="nvidia.com/gpu"})") == "3");
  CHECK(w.Series(R"(tessel_queue_borrowed{queue="team-a",cohort="c",resource="nvidia.com/gpu"})") == "1");
  CHECK(w.Series(R"(tessel_queue_usage{queue="team-b",cohort="c",resource="nvidia.com/gpu"})") == "0");
  CHECK(w.Series(R"(tessel_queue_borrowed{queue="team-b",cohort="c",resource="nvidia.com/gpu"})") == "0");
  CHECK(w.Series(R"(tessel_queue_pending_pods{queue="team-a",cohort="c"})") == "1");
  CHECK(w.Series(R"(tessel_queue_pending_pods{queue="team-b",cohort="c"})") == "0");
  CHECK(w.Series(R"(tessel_queue_admitted_pods{queue="team-a",cohort="c"})") == "1");
  CHECK(w.Series(R"(tessel_queue_lent{queue="team-b",cohort="c",resource="nvidia.com/gpu"})") == "1");
  // Usage decay is off by default: no samples.
  CHECK(w.Series(R"(tessel_queue_decayed_usage{queue="team-a",cohort="c",resource="nvidia.com/gpu"})") == "absent");
  // 8 whole GPUs (no GFD labels: allocatable nvidia.com/gpu), 3 held; the running mix (3 x 1000)
  // fits in the 5 free devices, so nothing is fragmented.
  CHECK(w.Series("tessel_gpu_allocatable") == "8");
  CHECK(w.Series("tessel_gpu_allocated") == "3");
  CHECK(w.Series("tessel_gpu_fragmentation") == "0");
  CHECK(w.Series(R"(tessel_pending_pods{queue="team-a",cohort="c",fit="after_change"})") == "1");
  CHECK(w.Series(R"(tessel_pending_pods{queue="team-a",cohort="c",fit="never"})") == "absent");
  w.s->OnPodAdd(pod("too-big", "", 16000));  // more GPUs than any node has
  CHECK(w.Series(R"(tessel_pending_pods{queue="team-a",cohort="c",fit="never"})") == "1");
  CHECK(w.Series(R"(tessel_queue_pending_pods{queue="team-a",cohort="c"})") == "2");
}

TEST_CASE("the gauges of the cluster's state have samples only while this replica leads; counters always") {
  ManualClock clock;
  DefaultScheduler d(&clock);
  std::unique_ptr<Scheduler>& s = d.s;
  std::atomic<bool> leading{false};
  MetricsRegistry r;
  SchedulerMetrics m(&r, s.get(), nullptr, [&leading] { return leading.load(); });
  REQUIRE(DeliverObject(*s, nlohmann::json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"},
                                           {"metadata", {{"name", "team-a"}}},
                                           {"spec", {{"namespaces", {"team-a"}},
                                                     {"nominalQuota", {{"nvidia.com/gpu", "2"}}}}}})
              .status()
              .ok());
  Node n;
  n.meta.name = "n1";
  n.allocatable.Set("nvidia.com/gpu", 8000);
  n.allocatable.Set("pods", 110);
  s->OnNodeAdd(n);
  s->OnPodAdd(TeamAPod("running", "n1", 1000));
  s->OnPodAdd(TeamAPod("waiting", "", 1000));
  m.GangMemberEvicted(TeamAPod("gone", "", 1000));
  // Every series line (not # HELP / # TYPE) whose name starts with `prefix`.
  auto samples = [&r](std::string_view prefix) {
    std::vector<std::string> out;
    std::istringstream text(r.Render());
    for (std::string line; std::getline(text, line);) {
      if (line.starts_with(prefix)) out.push_back(line);
    }
    return out;
  };
  // (tessel_queue_evictions_total is a counter: not among them.)
  const char* cluster[] = {"tessel_queue_pending_pods", "tessel_queue_admitted_pods", "tessel_queue_usage",
                           "tessel_queue_nominal_quota", "tessel_queue_borrowed", "tessel_queue_lent",
                           "tessel_queue_flavor_", "tessel_pending_pods", "tessel_gpu_", "scheduler_pending_pods",
                           "scheduler_unschedulable_pods", "tessel_reservations{"};
  for (const char* prefix : cluster) {
    INFO(prefix);
    CHECK(samples(prefix).empty() == true);
  }
  const std::string standby = r.Render();
  // The families are still described, so a dashboard's queries name known metrics.
  CHECK(standby.find("# TYPE tessel_queue_pending_pods gauge") != std::string::npos);
  // What this process did is counted on every replica.
  CHECK(standby.find(R"(tessel_queue_evictions_total{queue="team-a",cohort="",reason="gang"} 1)") != std::string::npos);
  CHECK(standby.find("tessel_build_info{") != std::string::npos);

  leading = true;
  CHECK(samples(R"(tessel_queue_pending_pods{queue="team-a")") ==
        std::vector<std::string>{R"(tessel_queue_pending_pods{queue="team-a",cohort=""} 1)"});
  CHECK(samples(R"(tessel_queue_admitted_pods{queue="team-a")") ==
        std::vector<std::string>{R"(tessel_queue_admitted_pods{queue="team-a",cohort=""} 1)"});
  CHECK(samples("tessel_gpu_allocatable ") == std::vector<std::string>{"tessel_gpu_allocatable 8"});
  CHECK(samples("scheduler_pending_pods{").size() == 3);

  leading = false;  // the lease lost: the figures go with it
  for (const char* prefix : cluster) {
    INFO(prefix);
    CHECK(samples(prefix).empty() == true);
  }
}

TEST_CASE("per-flavor queue gauges: a flavored queue's nominal quota, usage, borrowed and lent per "
          "flavor; the per-queue gauges hold the sums") {
  MetricsWorld w;
  const std::string text_before = w.r.Render();
  for (const char* f : {"reserved", "spot"}) {
    REQUIRE(DeliverObject(*w.s, nlohmann::json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "ResourceFlavor"},
                                            {"metadata", {{"name", f}}},
                                            {"spec", {{"nodeLabels", {{"pool", f}}}}}})
                .value_or(false));
  }
  for (const char* q : {"team-a", "team-b"}) {
    nlohmann::json flavors = nlohmann::json::array();
    for (const auto& [f, nominal] : {std::pair{"reserved", "2"}, std::pair{"spot", "4"}}) {
      flavors.push_back({{"name", f}, {"resources", {{{"name", "nvidia.com/gpu"}, {"nominalQuota", nominal}}}}});
    }
    REQUIRE(DeliverObject(*w.s, nlohmann::json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"},
                                            {"metadata", {{"name", q}}},
                                            {"spec", {{"namespaces", {q}}, {"cohort", "c"},
                                                      {"resourceGroups", {{{"coveredResources", {"nvidia.com/gpu"}},
                                                                           {"flavors", flavors}}}}}}})
                .value_or(false));
  }
  for (const char* pool : {"reserved", "spot"}) {
    Node n;
    n.meta.name = StrCat(pool, "-1");
    n.meta.labels["pool"] = pool;
    n.allocatable.Set("nvidia.com/gpu", 8000);
    n.allocatable.Set("cpu", 8000);
    n.allocatable.Set("pods", 110);
    w.s->OnNodeAdd(n);
  }
  auto running = [&](std::string name, std::string node, int64_t gpus) {
    w.s->OnPodAdd(TeamAPod(std::move(name), std::move(node), gpus));
  };
  running("a", "reserved-1", 3000);  // borrows 1 of team-b's reserved GPUs
  running("b", "spot-1", 1000);
  auto flavor = [](std::string metric, std::string queue, std::string flavor) {
    return StrCat("tessel_queue_flavor_", metric, "{queue=\"", queue, "\",cohort=\"c\",flavor=\"", flavor,
                  "\",resource=\"nvidia.com/gpu\"}");
  };
  CHECK(w.Series(flavor("nominal_quota", "team-a", "reserved")) == "2");
  CHECK(w.Series(flavor("nominal_quota", "team-a", "spot")) == "4");
  CHECK(w.Series(flavor("usage", "team-a", "reserved")) == "3");
  CHECK(w.Series(flavor("usage", "team-a", "spot")) == "1");
  CHECK(w.Series(flavor("borrowed", "team-a", "reserved")) == "1");
  CHECK(w.Series(flavor("borrowed", "team-a", "spot")) == "0");
  CHECK(w.Series(flavor("usage", "team-b", "reserved")) == "0");
  CHECK(w.Series(flavor("lent", "team-b", "reserved")) == "1");
  CHECK(w.Series(flavor("lent", "team-b", "spot")) == "0");
  CHECK(w.Series(R"(tessel_queue_usage{queue="team-a",cohort="c",resource="nvidia.com/gpu"})") == "4");
  CHECK(w.Series(R"(tessel_queue_nominal_quota{queue="team-a",cohort="c",resource="nvidia.com/gpu"})") == "6");
  CHECK(text_before.find("tessel_queue_flavor_usage{") == std::string::npos);  // no flavored queue: no series
}

TEST_CASE("bind latency per queue and priority, the SLI over attempts, evictions by reason, "
          "parked pods by plugin, build info") {
  MetricsWorld w(absl::FromUnixSeconds(1000));
  REQUIRE(DeliverObject(*w.s, nlohmann::json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"},
                                          {"metadata", {{"name", "team-a"}}},
                                          {"spec", {{"namespaces", {"team-a"}}, {"cohort", "c"}}}}).status()
              .ok());
  Pod p;
  p.meta.name = "train";
  p.meta.namespace_ = "team-a";
  p.meta.creation_timestamp = absl::FromUnixSeconds(900);
  p.scheduler_name = "tessel";
  p.priority = 100;
  w.m.AttemptFinished(p, AttemptResult::kUnschedulable, absl::Seconds(1));  // the first attempt began at 999
  w.m.PodRejected(p, {"NodeResourcesFit", "QueueQuota", "NodeResourcesFit"});
  w.clock.Advance(absl::Seconds(10));
  w.m.AttemptFinished(p, AttemptResult::kScheduled, absl::Seconds(1));
  w.m.PodScheduled(p, "n1");
  CHECK(w.Series(R"(tessel_pod_scheduling_duration_seconds_sum{queue="team-a",cohort="c",priority="100"})") == "110");
  CHECK(w.Series(R"(tessel_pod_scheduling_duration_seconds_bucket{queue="team-a",cohort="c",priority="100",le="60"})") == "0");
  CHECK(w.Series(R"(tessel_pod_scheduling_duration_seconds_bucket{queue="team-a",cohort="c",priority="100",le="120"})") == "1");
  CHECK(w.Series(R"(scheduler_pod_scheduling_sli_duration_seconds_sum{attempts="2"})") == "11");
  // Bound: no longer parked, whatever the queue says.
  CHECK(w.r.Render().find("scheduler_unschedulable_pods{") == std::string::npos);

  auto victim = [](std::string name, std::string ns, std::string reason) {
    auto v = std::make_shared<Pod>();
    v->meta.name = std::move(name);
    v->meta.namespace_ = std::move(ns);
    return PreemptionVictim{v, std::move(reason)};
  };
  w.m.PodsPreempted(p, "n1", {victim("a", "team-a", "LowerPriority"), victim("b", "team-a", "reclaim"),
                            victim("c", "other", "fair-share")});
  Pod member;
  member.meta.name = "worker-0";
  member.meta.namespace_ = "team-a";
  w.m.GangMemberEvicted(member);
  w.m.GangMemberEvicted(member);
  CHECK(w.Series(R"(tessel_queue_evictions_total{queue="team-a",cohort="c",reason="priority"})") == "1");
  CHECK(w.Series(R"(tessel_queue_evictions_total{queue="team-a",cohort="c",reason="reclaim"})") == "1");
  CHECK(w.Series(R"(tessel_queue_evictions_total{queue="",cohort="",reason="reclaim"})") == "1");
  CHECK(w.Series(R"(tessel_queue_evictions_total{queue="team-a",cohort="c",reason="gang"})") == "2");
  CHECK(w.r.Render().find("tessel_build_info{version=\"" + std::string(BuildVersion()) + "\"") !=
        std::string::npos);
  CHECK_FALSE(BuildVersion().empty());
}

TEST_CASE("a pod could ever fit when some node's allocatable covers every request") {
  Node small;
  small.meta.name = "small";
  small.allocatable.Set("cpu", 4000);
  small.allocatable.Set("nvidia.com/gpu", 2000);
  Node big;
  big.meta.name = "big";
  big.allocatable.Set("cpu", 64000);
  big.allocatable.Set("nvidia.com/gpu", 0);
  const std::vector<NodeInfo> nodes = {NodeInfo(std::make_shared<Node>(small)),
                                       NodeInfo(std::make_shared<Node>(big))};
  Pod p;
  p.requests.Set("cpu", 8000);
  CHECK(FitsSomeNode(p, nodes));       // the big node
  p.requests.Set("nvidia.com/gpu", 1000);
  CHECK_FALSE(FitsSomeNode(p, nodes));  // GPUs only on the small one, too few CPUs there
  p.requests.Set("cpu", 2000);
  CHECK(FitsSomeNode(p, nodes));
  CHECK_FALSE(FitsSomeNode(p, {}));
}

}  // namespace metrics_test
}  // namespace tessel::server

namespace tessel::server {
namespace metrics_test {

TEST_CASE("tessel_queue_decayed_usage: each queue's usage decayed with usageHalfLifeSeconds") {
  auto config = ParseSchedulerConfig(R"(
apiVersion: tessel.io/v1alpha1
kind: TesselSchedulerConfiguration
profiles:
- schedulerName: tessel
  pluginConfig:
  - {name: QueueQuota, args: {usageHalfLifeSeconds: 60}}
)");
  REQUIRE(config.ok());
  MetricsWorld w(absl::FromUnixSeconds(600), *config);
  REQUIRE(DeliverObject(*w.s, nlohmann::json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"},
                                             {"metadata", {{"name", "team-a"}}},
                                             {"spec", {{"namespaces", {"team-a"}}, {"cohort", "c"},
                                                       {"nominalQuota", {{"nvidia.com/gpu", "2"}}}}}})
              .status()
              .ok());
  Node n;
  n.meta.name = "n1";
  n.allocatable.Set("nvidia.com/gpu", 8000);
  n.allocatable.Set("cpu", 8000);
  n.allocatable.Set("pods", 110);
  w.s->OnNodeAdd(n);
  w.s->OnPodAdd(TeamAPod("running", "n1", 3000));
  w.s->OnPodAdd(TeamAPod("waiting-0", "", 1000));
  REQUIRE(w.s->ScheduleOne());  // QueueQuota's PreFilter starts counting: 3 GPUs held
  CHECK(w.Series(R"(tessel_queue_decayed_usage{queue="team-a",cohort="c",resource="nvidia.com/gpu"})") == "absent");
  w.clock.Advance(absl::Seconds(60));
  w.s->OnPodAdd(TeamAPod("waiting-1", "", 1000));
  REQUIRE(w.s->ScheduleOne());  // one half-life of 3 GPUs from 0: 1.5
  CHECK(w.Series(R"(tessel_queue_decayed_usage{queue="team-a",cohort="c",resource="nvidia.com/gpu"})") == "1.5");
  // Its cohort's: the sum of the queues' below it (team-a alone here).
  CHECK(w.Series(R"(tessel_cohort_decayed_usage{cohort="c",path="c",resource="nvidia.com/gpu"})") == "1.5");
}

}  // namespace metrics_test
}  // namespace tessel::server
