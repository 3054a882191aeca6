// `tessel-bench trace`'s simulator (bench/trace/timeline.h) against timelines computed by hand,
// and seeded properties over generated event lists: every job ends placed (or stays queued when
// it fits nowhere), GPU-seconds are conserved, the allocation never exceeds the capacity. The
// scenarios shipped in bench/scenarios load and run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <random>

#include "nlohmann/json.hpp"
#include "bench/trace/input.h"
#include "bench/trace/report.h"
#include "bench/trace/shares.h"
#include "bench/trace/trace.h"
#include "scheduler/testing/builders.h"
#include "scheduler/gpu/gpu_devices.h"
#include "plugins/registry.h"
#include "scheduler/preemption/preemption.h"
#include "scheduler/util/file.h"

namespace tessel::bench {
namespace timeline_test {

using testing::NodeBuilder;
using testing::PodBuilder;

Node GpuNode(const std::string& name, int gpus) {
  return NodeBuilder(name)
      .Allocatable(StrCat("cpu:64,memory:256Gi,nvidia.com/gpu:", gpus))
      .Label("kubernetes.io/hostname", name)
      .Label("nvidia.com/gpu.count", std::to_string(gpus))
      .Build();
}

TraceJob Job(const std::string& name, int64_t at, int64_t duration, int gpus, int32_t priority = 0) {
  TraceJob j;
  j.id = name;
  j.arrive = at;
  j.duration = duration;
  j.pods.push_back(PodBuilder(name).Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus)).Priority(priority).Build());
  j.size_class = SizeClassOf(j, 8);
  return j;
}

TraceJob Gang(const std::string& name, int64_t at, int64_t duration, int members, int gpus) {
  TraceJob j;
  j.id = name;
  j.arrive = at;
  j.duration = duration;
  j.gang_object = nlohmann::json{{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                                 {"kind", "PodGroup"},
                                 {"metadata", {{"name", name}, {"namespace", "default"}}},
                                 {"spec", {{"minMember", members}}}};
  for (int i = 0; i < members; ++i) {
    Pod p = PodBuilder(StrCat(name, "-", i)).Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus)).Build();
    p.meta.labels["scheduling.x-k8s.io/pod-group"] = name;
    j.pods.push_back(std::move(p));
  }
  j.size_class = SizeClassOf(j, 8);
  return j;
}

TimelineResult Simulate(const TimelineInput& in, OnEvict on_evict = OnEvict::kRestart) {
  absl::StatusOr<ProfileConfig> profile = TraceProfile("tessel");
  REQUIRE(profile.ok());
  absl::StatusOr<TimelineResult> r = SimulateTimeline(in, {.profile = &*profile, .on_evict = on_evict});
  REQUIRE(r.ok());
  return *std::move(r);
}

const JobOutcome& Outcome(const TimelineResult& r, const std::string& id) {
  for (const JobOutcome& j : r.jobs) {
    if (j.id == id) return j;
  }
  FAIL("no job " << id);
  return r.jobs.front();
}

TEST_CASE("trace: one node works through its queue in order", "[trace]") {
  TimelineInput in;
  in.nodes.push_back(GpuNode("n1", 8));
  in.jobs = {Job("a", 0, 10, 8), Job("b", 1, 20, 8), Job("c", 2, 30, 8)};
  const TimelineResult r = Simulate(in);
  // a runs 0-10; b waits for it, 10-30; c waits for both, 30-60.
  CHECK(Outcome(r, "a").start == 0);
  CHECK(Outcome(r, "a").end == 10);
  CHECK(Outcome(r, "b").start == 10);
  CHECK(Outcome(r, "b").end == 30);
  CHECK(Outcome(r, "c").start == 30);
  CHECK(Outcome(r, "c").end == 60);
  CHECK(r.makespan == 60);
  CHECK(r.allocated_milli_seconds == 8000 * 60);
  CHECK(r.capacity_milli == 8000);
  // Arrivals span 0-2, and a holds the node throughout.
  CHECK(r.last_arrival == 2);
  CHECK(r.window_allocated_milli_seconds == 8000 * 2);
  CHECK(r.ended_at == 60);
}

TEST_CASE("trace: allocation is reported over the arrival window; curves stop at twice it", "[trace]") {
  TimelineInput in;
  in.nodes = {GpuNode("n1", 8)};
  // Arrivals over 0-100; `long` holds 4 GPUs for 10,000 s, `short` 4 more for 50 s.
  in.jobs = {Job("long", 0, 10000, 4), Job("short", 50, 50, 4), Job("last", 100, 10, 2)};
  const TimelineResult r = Simulate(in);
  CHECK(r.window_allocated_milli_seconds == 4000 * 100 + 4000 * 50);
  CHECK(r.allocated_milli_seconds == 4000 * 10000 + 4000 * 50 + 2000 * 10);
  CHECK(r.ended_at == 10000);
  REQUIRE_FALSE(r.samples.empty());
  for (const Sample& s : r.samples) CHECK(s.at <= 200);
  CHECK(r.samples.back().at >= 190);

  const nlohmann::json summary = Summarize({.policy = "tessel", .seeds = {1}, .runs = {r}});
  // Over the window: 600,000 of 8,000 x 100 milli-seconds; over the run, of 8,000 x 10,000.
  CHECK(summary["alloc_pct"].get<double>() == Approx(75.0));
  CHECK(summary["alloc_pct_run"].get<double>() == Approx(100.0 * 40'220'000 / 80'000'000));
}

TEST_CASE("trace: the report has a plot per curve and per size class, each a standalone SVG", "[trace]") {
  TimelineInput in;
  in.nodes = {GpuNode("n1", 8)};
  in.jobs = {Job("one", 0, 100, 1), Job("whole", 10, 50, 8), Job("three", 20, 30, 3)};
  std::vector<PolicyRuns> all = {{.policy = "tessel", .seeds = {1}, .runs = {Simulate(in)}},
                                 {.policy = "again", .seeds = {1}, .runs = {Simulate(in)}}};
  nlohmann::json summaries = nlohmann::json::array();
  for (const PolicyRuns& pr : all) summaries.push_back(Summarize(pr));
  const std::vector<TracePlot> plots = TracePlots(all, summaries);
  std::vector<std::string> files;
  for (const TracePlot& p : plots) {
    files.push_back(p.file);
    CHECK(p.svg.rfind("<svg xmlns=", 0) == 0);
    CHECK(p.svg.find("again") != std::string::npos);  // every policy is a line of every plot
  }
  // Curves first, then one CDF per class the jobs fell in, named file-safe.
  std::vector<std::string> expected = {"allocation", "fragmentation", "evictions"};
  for (const auto& [cls, v] : summaries[0]["delay_by_class"].items()) {
    std::string f = "delay-cdf-";
    for (char ch : cls) f += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '-';
    expected.push_back(f);
  }
  CHECK(expected.size() == 6);  // 1 GPU, 2-4 GPUs, whole node
  std::sort(expected.begin() + 3, expected.end());
  std::sort(files.begin() + 3, files.end());
  CHECK(files == expected);
  const std::string html = RenderTraceReport("t", "n", all, summaries);
  for (const TracePlot& p : plots) CHECK(html.find(p.svg) != std::string::npos);
}

TEST_CASE("trace: --load picks the compression that offers it, and refuses a load out of reach", "[trace]") {
  auto nodes = ParseTraceNodes("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,4,V100\n");
  // a holds all 4 GPUs for 100 s from 0; b arrives at 100. Over the window [0, 100/s], a runs
  // min(100, 100/s) of it and b none: the load is min(1, s).
  auto pods = ParseTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
      "a,1000,100,4,1000,,LS,Succeeded,0,100,0\n"
      "b,1000,100,4,1000,,LS,Succeeded,100,200,100\n");
  REQUIRE(nodes.ok());
  REQUIRE(pods.ok());
  absl::StatusOr<OpenbTrace> half = OpenbTimeline(*nodes, *pods, {.load = 0.5});
  REQUIRE(half.ok());
  CHECK(half->offered_load == Approx(0.5).epsilon(1e-6));
  CHECK(half->time_scale == Approx(0.5).epsilon(1e-6));
  CHECK(half->input.jobs.size() == 2);
  absl::StatusOr<OpenbTrace> beyond = OpenbTimeline(*nodes, *pods, {.load = 1.5});
  REQUIRE_FALSE(beyond.ok());
  CHECK_THAT(std::string(beyond.status().message()), Catch::Contains("--load 1.5") && Catch::Contains("at most 1.00") &&
                                                         Catch::Contains("--repeat"));
}

TEST_CASE("trace: --steady draws Poisson arrivals from the mix at the requested offered load", "[trace]") {
  auto nodes = ParseTraceNodes("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,4,V100\n");
  // a: 1 GPU for 100 s; b: 2 GPUs for 300 s, capped at 200. E[gpu_milli x duration] =
  // (1000 x 100 + 2000 x 200) / 2 = 250,000; at load 0.5 on 4,000 milli, lambda = 0.008/s.
  auto pods = ParseTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
      "a,1000,100,1,1000,,LS,Succeeded,0,100,0\n"
      "b,1000,100,2,1000,,LS,Succeeded,0,300,0\n"
      "never,1000,100,1,1000,,LS,Pending,0,,\n");
  REQUIRE(nodes.ok());
  REQUIRE(pods.ok());
  const SteadyOptions base{.load = 0.5, .horizon = 1'000'000, .warmup = 100'000, .duration_cap = 200};
  // Over 10^6 s about 8,000 arrivals (Poisson: sd about 89, 1.1 %); each seed within 3 % of the
  // rate asked for, and about half the jobs are a (the pods that ran are drawn uniformly).
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    SteadyOptions o = base;
    o.seed = seed;
    absl::StatusOr<SteadyTrace> t = SteadyTimeline(*nodes, *pods, o);
    REQUIRE(t.ok());
    CHECK(t->rate_per_s == Approx(0.008));
    CHECK(t->capped == 1);
    CHECK(t->mean_duration_s == Approx(150));
    const std::vector<TraceJob>& jobs = t->input.jobs;
    CHECK(static_cast<double>(jobs.size()) == Approx(8000).epsilon(0.03));
    int64_t a = 0, prev = 0;
    for (const TraceJob& j : jobs) {
      CHECK(j.arrive >= prev);
      CHECK(j.arrive < o.horizon);
      prev = j.arrive;
      REQUIRE(j.pods.size() == 1);
      const bool is_a = j.id.rfind("a-s", 0) == 0;
      CHECK(j.id.rfind(is_a ? "a-s" : "b-s", 0) == 0);
      CHECK(j.duration == (is_a ? 100 : 200));
      a += is_a;
    }
    CHECK(static_cast<double>(a) == Approx(static_cast<double>(jobs.size()) / 2).epsilon(0.05));
    CHECK(t->input.window_from == 100'000);
    CHECK(t->input.window_to == 1'000'000);
  }
  // Deterministic with the seed; another seed, another stream.
  absl::StatusOr<SteadyTrace> x = SteadyTimeline(*nodes, *pods, base), y = SteadyTimeline(*nodes, *pods, base);
  SteadyOptions other = base;
  other.seed = 43;
  absl::StatusOr<SteadyTrace> z = SteadyTimeline(*nodes, *pods, other);
  REQUIRE((x.ok() && y.ok() && z.ok()));
  auto arrivals = [](const SteadyTrace& t) {
    std::vector<int64_t> v;
    for (const TraceJob& j : t.input.jobs) v.push_back(j.arrive);
    return v;
  };
  CHECK(arrivals(*x) == arrivals(*y));
  CHECK(arrivals(*x) != arrivals(*z));
  SteadyOptions bad = base;
  bad.warmup = bad.horizon;
  CHECK_FALSE(SteadyTimeline(*nodes, *pods, bad).ok());
}

TEST_CASE("trace: a steady window leaves the warm-up out of the allocation and the waits", "[trace]") {
  TimelineInput in;
  in.nodes = {GpuNode("n1", 8)};
  // Window [100, 200). early holds 4 GPUs over 0-150; big 4 more from 110 (to 310); in asks 2 at
  // 120, waits for early to end at 150, runs to 200; late arrives after the window.
  in.jobs = {Job("early", 0, 150, 4), Job("big", 110, 200, 4), Job("in", 120, 50, 2), Job("late", 250, 10, 1)};
  in.window_from = 100;
  in.window_to = 200;
  const TimelineResult r = Simulate(in);
  REQUIRE(r.steady);
  CHECK(Outcome(r, "in").start == 150);
  // By hand: early 4,000 x 50, big 4,000 x 90, in 2,000 x 50.
  CHECK(r.window_allocated_milli_seconds == 200'000 + 360'000 + 100'000);
  // Independently, from the jobs' own start and end clipped to the window.
  int64_t integral = 0;
  for (const JobOutcome& j : r.jobs) {
    const int64_t from = std::max<int64_t>(j.start, 100), to = std::min<int64_t>(j.end, 200);
    if (j.start >= 0 && to > from) integral += j.gpu_milli * (to - from);
  }
  CHECK(r.window_allocated_milli_seconds == integral);

  const nlohmann::json summary = Summarize({.policy = "tessel", .seeds = {1}, .runs = {r}});
  CHECK(summary["alloc_pct"].get<double>() == Approx(100.0 * 660'000 / (8000 * 100)));
  // Only big and in arrived in the window: early (warm-up) and late are left out.
  CHECK(summary["jobs"].get<int64_t>() == 2);
  REQUIRE(summary["alloc_pct_by_seed"].size() == 1);
  CHECK(summary["alloc_pct_by_seed"][0].get<double>() == Approx(100.0 * 660'000 / (8000 * 100)));
  CHECK(summary["delay_s"]["p95"].get<int64_t>() == 30);
}

TEST_CASE("trace: a gang starts only when all its members fit, and ends together", "[trace]") {
  TimelineInput in;
  in.nodes = {GpuNode("n1", 4), GpuNode("n2", 4)};
  in.jobs = {Job("solo", 0, 50, 4), Gang("ring", 10, 20, 2, 4)};
  const TimelineResult r = Simulate(in);
  // The gang needs both nodes: it waits for solo (0-50), then runs 50-70 on both.
  CHECK(Outcome(r, "solo").end == 50);
  CHECK(Outcome(r, "ring").start == 50);
  CHECK(Outcome(r, "ring").end == 70);
  CHECK(Outcome(r, "ring").gpu_milli == 8000);
  CHECK(r.allocated_milli_seconds == 4000 * 50 + 8000 * 20);
}

TEST_CASE("trace: P-reserve keeps a gang from starving behind a stream of small jobs", "[trace]") {
  // Three 8-GPU nodes kept full by 1-GPU jobs of 2,400 s, one every 100 s until 11,900 s; a
  // gang of two 8-GPU members arrives at 1,000 s. Each freed GPU goes to the next small job.
  TimelineInput in;
  in.nodes = {GpuNode("n1", 8), GpuNode("n2", 8), GpuNode("n3", 8)};
  for (int i = 0; i < 120; ++i) in.jobs.push_back(Job(StrCat("small-", i), 100 * i, 2400, 1));
  in.jobs.push_back(Gang("pair", 1000, 600, 2, 8));
  auto run = [&](const std::string& policy) {
    absl::StatusOr<ProfileConfig> profile = TraceProfile(policy);
    REQUIRE(profile.ok());
    if (profile->plugin_args.contains("Reservation")) {
      profile->plugin_args["Reservation"] = YAML::Load("{waitSeconds: 300}");  // the times below
    }
    absl::StatusOr<TimelineResult> r = SimulateTimeline(in, {.profile = &*profile});
    REQUIRE(r.ok());
    return *std::move(r);
  };
  const TimelineResult plain = run("tessel");
  const TimelineResult reserve = run("tessel-reserve");
  // Without reservation the gang starts only once the stream stops.
  CHECK(Outcome(plain, "pair").start >= 11900);
  // With it, two nodes are reserved once it waited 300 s (at a retry: at most 5 min apart) and
  // drain within one small job's run: it starts before 1,000 + 600 + 300 + 2,400 s.
  CHECK(Outcome(reserve, "pair").start < 4300);
  // Every job still ends, and the small jobs kept running on the third node meanwhile.
  for (const JobOutcome& j : reserve.jobs) CHECK(j.end > j.start);
  int64_t started_meanwhile = 0;
  for (const JobOutcome& j : reserve.jobs) {
    started_meanwhile += j.id.starts_with("small-") && j.start > 2000 && j.start < Outcome(reserve, "pair").start;
  }
  CHECK(started_meanwhile > 0);
}

TEST_CASE("trace: a preempted job restarts, or resumes with its progress", "[trace]") {
  TimelineInput in;
  in.nodes.push_back(GpuNode("n1", 8));
  in.jobs = {Job("low", 0, 100, 8, 0), Job("high", 40, 10, 8, 1000)};
  // At 40 high evicts low; it is bound once its first retry's 1 s backoff has passed (41) and
  // runs to 51. low is queued again at 40 and starts at 51.
  SECTION("restart: low runs its 100 s again; the 40 s it ran are lost") {
    const TimelineResult r = Simulate(in, OnEvict::kRestart);
    CHECK(Outcome(r, "high").start == 41);
    CHECK(Outcome(r, "high").end == 51);
    CHECK(Outcome(r, "low").start == 0);  // its first start
    CHECK(Outcome(r, "low").end == 151);
    CHECK(Outcome(r, "low").evictions == 1);
    CHECK(r.lost_gpu_milli_seconds == 40 * 8000);
    CHECK(r.evictions == 1);
  }
  SECTION("resume: low keeps its 40 s and runs 60 more") {
    const TimelineResult r = Simulate(in, OnEvict::kResume);
    CHECK(Outcome(r, "low").end == 111);
    CHECK(r.lost_gpu_milli_seconds == 0);
    CHECK(r.allocated_milli_seconds == 8000 * (100 + 10));
  }
}

// A stand-in for the Consolidation plugin: for a pod that fits nowhere it evicts every movable
// pod (kMovableAnnotation) with the victims' reason kMoveReason and nominates the first node.
class EvictMovable final : public PostFilterPlugin {
 public:
  explicit EvictMovable(Handle& handle) : handle_(handle) {}
  std::string_view Name() const override { return "EvictMovable"; }
  PostFilterResult PostFilter(CycleState&, const Pod& pod, const NodeStatusMap&) override {
    PostFilterResult r{Status::Unschedulable("nothing movable")};
    for (const NodeInfo* n : handle_.snapshot().nodes()) {
      for (const PodRef& p : n->pods()) {
        if (!p->meta.annotations.contains(std::string(kMovableAnnotation))) continue;
        PreemptionVictim v{.pod = p, .reason = std::string(kMoveReason)};
        REQUIRE(preemption::EvictVictim(handle_, v, StrCat("moved to make room for ", pod.Key())).ok());
        r.victims.push_back(std::move(v));
        r.nomination = PostFilterResult::Nomination::kOverride;
        r.nominated_node = n->node()->meta.name;
      }
    }
    if (!r.victims.empty()) r.status = Status::Ok();
    return r;
  }

 private:
  Handle& handle_;
};

TEST_CASE("trace: evictions are split into moves (victims of reason Consolidation) and preemptions", "[trace]") {
  Registry registry = InTreeRegistry();
  REQUIRE(registry
              .Register("EvictMovable",
                        [](const YAML::Node&, Handle& h) -> absl::StatusOr<std::unique_ptr<Plugin>> {
                          return std::make_unique<EvictMovable>(h);
                        })
              .ok());
  absl::StatusOr<ProfileConfig> profile = TraceProfile("tessel");
  REQUIRE(profile.ok());
  profile->plugins["postFilter"].enabled.push_back({.name = "EvictMovable"});
  auto simulate = [&](const TimelineInput& in) {
    absl::StatusOr<TimelineResult> r = SimulateTimeline(in, {.profile = &*profile, .registry = &registry});
    REQUIRE(r.ok());
    return *std::move(r);
  };
  TimelineInput in;
  in.nodes.push_back(GpuNode("n1", 8));
  // `small` (4 GPUs, movable) holds n1 when `big` (8 GPUs) arrives at 40: DefaultPreemption
  // finds no lower priority, EvictMovable moves small. big binds after its 1 s backoff (41) and
  // runs to 51; small, queued again at 40, starts over at 51 and ends at 151.
  in.jobs = {Job("small", 0, 100, 4), Job("big", 40, 10, 8)};
  CHECK(MarkMovable(in, {"2-4"}) == 1);
  SECTION("a move") {
    const TimelineResult r = simulate(in);
    CHECK(Outcome(r, "big").start == 41);
    CHECK(Outcome(r, "small").end == 151);
    CHECK(Outcome(r, "small").evictions == 1);
    CHECK(Outcome(r, "small").moves == 1);
    CHECK(Outcome(r, "small").lost_to_moves_gpu_milli_seconds == 40 * 4000);
    CHECK(r.evictions == 1);
    CHECK(r.moves == 1);
    CHECK(r.lost_gpu_milli_seconds == 40 * 4000);
    CHECK(r.lost_to_moves_gpu_milli_seconds == 40 * 4000);

    const PolicyRuns runs{.policy = "tessel-defrag", .seeds = {1}, .runs = {r}};
    const nlohmann::json s = Summarize(runs, /*with_moves=*/true);
    CHECK(s["moves"] == 1);
    CHECK(s["preemptions"] == 0);
    CHECK(s["moves_per_100_jobs"].get<double>() == Approx(50.0));  // 1 move, 2 jobs
    CHECK(s["preemptions_per_100_jobs"].get<double>() == Approx(0.0));
    CHECK(s["lost_gpu_hours_moves"].get<double>() == Approx(160.0 / 3600));  // 40 s x 4 GPUs
    CHECK(s["lost_gpu_hours_preemptions"].get<double>() == Approx(0.0));
    CHECK_FALSE(Summarize(runs).contains("moves"));  // only reports that can move have them

    const std::string csv = JobsCsv({runs}, /*with_moves=*/true);
    CHECK(csv.rfind("policy,seed,job,class,queue,priority,gpu_milli,arrive,start,end,duration,evictions,"
                    "lost_gpu_milli_s,moves,lost_to_moves_gpu_milli_s\n",
                    0) == 0);
    CHECK(csv.find("\ntessel-defrag,1,small,2-4,,0,4000,0,0,151,100,1,160000,1,160000\n") != std::string::npos);
    CHECK(JobsCsv({runs}).find(",moves") == std::string::npos);
    CHECK(RenderTraceReport("t", "n", {runs}, nlohmann::json::array({s})).find("Moves and preemptions") !=
          std::string::npos);
  }
  SECTION("a preemption: a higher priority evicts the same job, which is not counted as a move") {
    in.jobs[1].pods.front().priority = 1000;
    const TimelineResult r = simulate(in);
    CHECK(Outcome(r, "small").evictions == 1);
    CHECK(Outcome(r, "small").moves == 0);
    CHECK(r.moves == 0);
    CHECK(r.lost_gpu_milli_seconds == 40 * 4000);
    CHECK(r.lost_to_moves_gpu_milli_seconds == 0);
    const nlohmann::json s = Summarize({.policy = "tessel", .seeds = {1}, .runs = {r}}, /*with_moves=*/true);
    CHECK(s["preemptions"] == 1);
    CHECK(s["preemptions_per_100_jobs"].get<double>() == Approx(50.0));
    CHECK(s["lost_gpu_hours_preemptions"].get<double>() == Approx(160.0 / 3600));
  }
}

TEST_CASE("trace: --movable marks the pods of the named size classes, never a gang's", "[trace]") {
  TimelineInput in;
  in.jobs = {Job("one", 0, 10, 1), Job("four", 0, 10, 4), Job("whole", 0, 10, 8), Gang("g", 0, 10, 2, 8)};
  absl::StatusOr<std::vector<std::string>> all = ParseMovable("all");
  REQUIRE(all.ok());
  CHECK(*all == std::vector<std::string>{"cpu", "fractional", "1", "2-4", "whole-node"});
  CHECK(MarkMovable(in, *all) == 3);
  auto movable = [](const Pod& p) { return p.meta.annotations.contains(std::string(kMovableAnnotation)); };
  for (const Pod& p : in.jobs[3].pods) CHECK_FALSE(movable(p));
  // Marked pods name a controller, so that a moved job's replacement is the same workload.
  REQUIRE(in.jobs[0].pods.front().meta.owner_references.size() == 1);
  CHECK(in.jobs[0].pods.front().meta.owner_references.front().uid == "job-one");

  TimelineInput some;
  some.jobs = {Job("one", 0, 10, 1), Job("four", 0, 10, 4), Job("whole", 0, 10, 8)};
  absl::StatusOr<std::vector<std::string>> classes = ParseMovable("1,whole-node");
  REQUIRE(classes.ok());
  CHECK(MarkMovable(some, *classes) == 2);
  CHECK(movable(some.jobs[0].pods.front()));
  CHECK_FALSE(movable(some.jobs[1].pods.front()));
  CHECK(movable(some.jobs[2].pods.front()));

  absl::StatusOr<std::vector<std::string>> none = ParseMovable("none");
  REQUIRE(none.ok());
  CHECK(none->empty());
  CHECK(ParseMovable("1,gang").status().message() == "--movable: gangs are never movable (a move restarts the whole gang)");
  CHECK(ParseMovable("8").status().message() ==
        "--movable: unknown size class \"8\" (want all, none, or some of cpu, fractional, 1, 2-4, whole-node)");
}

TEST_CASE("trace: P-defrag runs P with Consolidation after DefaultPreemption and Reservation", "[trace]") {
  CHECK(BasePolicy("tessel-defrag") == "tessel");
  CHECK(BasePolicy("fgd") == "fgd");
  absl::StatusOr<ProfileConfig> plain = TraceProfile("tessel");
  absl::StatusOr<ProfileConfig> defrag = TraceProfile("fgd-defrag");
  REQUIRE(plain.ok());
  REQUIRE(defrag.ok());
  auto names = [](const ProfileConfig& p, const std::string& point) {
    std::vector<std::string> out;
    if (auto it = p.plugins.find(point); it != p.plugins.end()) {
      for (const PluginRef& r : it->second.enabled) out.push_back(r.name);
    }
    return out;
  };
  CHECK(names(*plain, "postFilter") == std::vector<std::string>{"DefaultPreemption"});
  CHECK(names(*plain, "multiPoint").empty());
  const std::vector<std::string> post = names(*defrag, "postFilter");
  REQUIRE(post.size() >= 2);
  CHECK(post[0] == "DefaultPreemption");
  CHECK(post[1] == "Consolidation");
  const std::vector<std::string> score = names(*defrag, "score");
  CHECK(std::find(score.begin(), score.end(), "FGD") != score.end());
  // Whether the profile enables the plugin at any extension point.
  auto has = [](const ProfileConfig& p, std::string_view plugin) {
    bool found = false;
    for (const auto& [point, set] : p.plugins) {
      for (const PluginRef& r : set.enabled) found |= r.name == plugin;
    }
    return found;
  };
  CHECK(has(*defrag, "Reservation"));
  CHECK_FALSE(TraceProfile("nope-defrag").ok());
  // P-moves and P-reserve: one of the two each.
  CHECK(BasePolicy("tessel-moves") == "tessel");
  CHECK(BasePolicy("tessel-reserve") == "tessel");
  absl::StatusOr<ProfileConfig> moves = TraceProfile("tessel-moves");
  absl::StatusOr<ProfileConfig> reserve = TraceProfile("tessel-reserve");
  REQUIRE(moves.ok());
  REQUIRE(reserve.ok());
  CHECK(has(*moves, "Consolidation"));
  CHECK_FALSE(has(*moves, "Reservation"));
  CHECK_FALSE(moves->plugin_args.contains("Reservation"));
  CHECK_FALSE(has(*reserve, "Consolidation"));
  CHECK(has(*reserve, "Reservation"));
  CHECK(reserve->plugin_args.contains("Reservation"));
}

TEST_CASE("property: jobs end placed, GPU-seconds are conserved, allocation stays within capacity",
          "[trace][property]") {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    TimelineInput in;
    for (int n = pick(1, 3); n > 0; --n) in.nodes.push_back(GpuNode(StrCat("n", n), pick(0, 1) ? 4 : 8));
    const int smallest = 4;
    for (int k = pick(10, 30); k > 0; --k) {
      const int gpus = std::vector<int>{1, 2, 4}[pick(0, 2)];
      if (pick(1, 5) == 1) {
        in.jobs.push_back(Gang(StrCat("g", k), pick(0, 200), pick(1, 80), pick(2, 3), std::min(gpus, smallest)));
      } else {
        in.jobs.push_back(Job(StrCat("j", k), pick(0, 200), pick(1, 80), gpus, pick(0, 1) ? 0 : 100));
      }
    }
    std::stable_sort(in.jobs.begin(), in.jobs.end(), [](const TraceJob& a, const TraceJob& b) { return a.arrive < b.arrive; });
    int64_t capacity = 0;
    for (const Node& n : in.nodes) capacity += 1000 * gpu::ReadGpuInventory(n).count;
    for (OnEvict mode : {OnEvict::kRestart, OnEvict::kResume}) {
      const TimelineResult r = Simulate(in, mode);
      int64_t work = 0;
      for (const JobOutcome& j : r.jobs) {
        // A gang bigger than the cluster never starts; every other job completes.
        const TraceJob& spec = *std::find_if(in.jobs.begin(), in.jobs.end(), [&](const TraceJob& t) { return t.id == j.id; });
        int64_t ask = 0;
        for (const Pod& p : spec.pods) ask += gpu::ReadGpuRequest(p).count * 1000;
        if (ask > capacity) {
          CHECK(j.start == -1);
          continue;
        }
        REQUIRE(j.end >= 0);
        CHECK(j.start >= j.arrive);
        CHECK(j.end - j.start >= j.duration);
        CHECK(j.gpu_milli == ask);
        work += j.gpu_milli * j.duration;
      }
      CHECK(r.allocated_milli_seconds == work + r.lost_gpu_milli_seconds);
      if (mode == OnEvict::kResume) CHECK(r.lost_gpu_milli_seconds == 0);
      CHECK(r.peak_allocated_milli <= capacity);
      for (const Sample& s : r.samples) CHECK(s.allocated_milli <= capacity);
    }
  }
}

TEST_CASE("trace: the shipped scenarios load and every job ends", "[trace]") {
  int scenarios = 0;
  for (const auto& entry : std::filesystem::directory_iterator(TESSEL_TRACE_SCENARIOS_DIR)) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path().string());
    absl::StatusOr<std::string> text = ReadFileToString(entry.path().string());
    REQUIRE(text.ok());
    absl::StatusOr<TimelineInput> in = ParseEventList(nlohmann::json::parse(*text));
    REQUIRE(in.ok());
    const TimelineResult r = Simulate(*in);
    for (const JobOutcome& j : r.jobs) CHECK(j.end >= 0);
    ++scenarios;
  }
  CHECK(scenarios >= 4);
}

TEST_CASE("trace: a bad event list is refused naming the event and the field", "[trace]") {
  auto error = [](const char* text) {
    absl::StatusOr<TimelineInput> in = ParseEventList(nlohmann::json::parse(text));
    REQUIRE_FALSE(in.ok());
    return std::string(in.status().message());
  };
  CHECK(error(R"({"events": [{"pod": {}, "duration": 5}]})") == "events[0]: missing field \"at\"");
  CHECK(error(R"({"events": [{"at": 1, "duration": 5}]})") ==
        "events[0]: want one of pod, podGroup, nodeAdd, nodeRemove, queue, cohort");
  CHECK(error(R"({"events": [{"at": -1, "pod": {}}]})").rfind("events[0].at: want a whole number", 0) == 0);
  CHECK(error(R"({"events": [{"at": 1, "podGroup": {"metadata": {"name": "g"}}, "duration": 5}]})") ==
        "events[0].pods: a podGroup event needs its member pods");
}

nlohmann::json QueueObject(const std::string& name, const std::string& cohort, int gpus) {
  return {{"apiVersion", "tessel.io/v1alpha1"},
          {"kind", "Queue"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"namespaces", {name}},
            {"cohort", cohort},
            {"nominalQuota", {{"nvidia.com/gpu", std::to_string(gpus)}}},
            {"preemption", {{"reclaimWithinCohort", "Any"}}}}}};
}

nlohmann::json CohortObject(const std::string& name, const std::string& parent, int gpus) {
  nlohmann::json spec = {{"nominalQuota", {{"nvidia.com/gpu", std::to_string(gpus)}}}};
  if (!parent.empty()) spec["parent"] = parent;
  return {{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Cohort"}, {"metadata", {{"name", name}}}, {"spec", spec}};
}

nlohmann::json PodEvent(int64_t at, const std::string& ns, const std::string& name, int gpus, int64_t duration) {
  return {{"at", at},
          {"duration", duration},
          {"pod",
           {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"spec",
             {{"schedulerName", "tessel"},
              {"containers",
               {{{"name", "main"}, {"resources", {{"requests", {{"cpu", "1"}, {"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}}}};
}

nlohmann::json NodeObject(const std::string& name, int gpus) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}, {"nvidia.com/gpu.count", std::to_string(gpus)}}}}},
          {"status",
           {{"allocatable", {{"cpu", "64"}, {"memory", "256Gi"}, {"pods", "110"}, {"nvidia.com/gpu", std::to_string(gpus)}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

TEST_CASE("trace: Cohorts in the event list, at the start and as events; bad ones are refused naming the field",
          "[trace]") {
  nlohmann::json doc = {{"nodes", {NodeObject("n1", 8)}},
                        {"cohorts", {CohortObject("org", "", 2)}},
                        {"queues", {QueueObject("a", "dept", 2)}},
                        {"events", {{{"at", 50}, {"cohort", CohortObject("dept", "org", 4)}}, PodEvent(60, "a", "p", 1, 10)}}};
  absl::StatusOr<TimelineInput> in = ParseEventList(doc);
  REQUIRE(in.ok());
  REQUIRE(in->changes.size() == 3);
  CHECK(in->changes[0].kind == ClusterChange::Kind::kQuotaObject);  // the queue, then org, at 0
  CHECK(in->changes[1].object["metadata"]["name"] == "org");
  CHECK(in->changes[2].at == 50);
  CHECK(in->jobs.front().queue == "a");  // by the namespace the Queue lists
  const TimelineResult r = Simulate(*in);
  // The tree the shares are measured against has all three, the department applied at 50.
  REQUIRE(r.quota_tree.size() == 3);
  CHECK(r.quota_tree[1].name == "dept");
  CHECK(r.quota_tree[1].parent == "org");
  CHECK(r.quota_tree[1].nominal_milli == 4000);

  auto error = [](nlohmann::json d) {
    absl::StatusOr<TimelineInput> bad = ParseEventList(d);
    REQUIRE_FALSE(bad.ok());
    return std::string(bad.status().message());
  };
  nlohmann::json self_parent = doc;
  self_parent["cohorts"][0]["spec"]["parent"] = "org";
  CHECK(error(self_parent) == "cohorts[0]: Cohort org: spec.parent: names the cohort itself");
  nlohmann::json bad_weight = doc;
  bad_weight["events"][0]["cohort"]["spec"]["weight"] = "0";
  CHECK(error(bad_weight).rfind("events[0].cohort: Cohort dept: spec.weight: ", 0) == 0);
  nlohmann::json wrong_kind = doc;
  wrong_kind["queues"][0]["kind"] = "Cohort";
  CHECK(error(wrong_kind) == "queues[0].kind: want Queue, got \"Cohort\"");
  nlohmann::json not_a_list = doc;
  not_a_list["cohorts"] = CohortObject("org", "", 2);
  CHECK(error(not_a_list) == "cohorts: want a list");
}

TEST_CASE("trace: a team arriving late reclaims its share; usage and entitlement are sampled per queue and cohort",
          "[trace]") {
  // Two teams of 4 GPUs in cohort lab on one 8-GPU node. a fills the node from 0; b arrives at
  // 100 with four 1-GPU jobs and reclaims them at once (reclaim: a borrows).
  nlohmann::json events = nlohmann::json::array();
  for (int k = 0; k < 8; ++k) events.push_back(PodEvent(0, "a", StrCat("a", k), 1, 1000));
  for (int k = 0; k < 4; ++k) events.push_back(PodEvent(100, "b", StrCat("b", k), 1, 1000));
  nlohmann::json doc = {{"nodes", {NodeObject("n1", 8)}},
                        {"queues", {QueueObject("a", "lab", 4), QueueObject("b", "lab", 4)}},
                        {"events", events}};
  absl::StatusOr<TimelineInput> in = ParseEventList(doc);
  REQUIRE(in.ok());
  for (int64_t half_life : {0, 3600}) {
    INFO("half-life " << half_life);
    absl::StatusOr<ProfileConfig> profile = TraceProfile("tessel", half_life);
    REQUIRE(profile.ok());
    CHECK(profile->plugin_args.contains("QueueQuota") == (half_life > 0));
    absl::StatusOr<TimelineResult> r = SimulateTimeline(*in, {.profile = &*profile, .samples = 20});
    REQUIRE(r.ok());
    for (const Sample& s : r->samples) {
      INFO("t=" << s.at);
      if (s.at == 0) continue;  // before anything ran
      REQUIRE(s.shares.size() == 3);  // a, b and lab
      if (s.at <= 100) {  // a sample at 100 is taken before what happens at 100
        CHECK(s.shares.at("a").usage_milli == 8000);
        CHECK(s.shares.at("a").entitlement_milli == 8000);  // alone: the whole cohort
        CHECK(s.shares.at("b").demand_milli == 0);
      } else if (s.at <= 1000) {
        CHECK(s.shares.at("a").usage_milli == 4000);
        CHECK(s.shares.at("b").usage_milli == 4000);
        CHECK(s.shares.at("a").entitlement_milli == 4000);
        CHECK(s.shares.at("b").entitlement_milli == 4000);
        CHECK(s.shares.at("a").demand_milli == 8000);  // 4 running, 4 evicted and waiting
        CHECK(s.shares.at("a").smallest_waiting_milli == 1000);
        CHECK(s.shares.at("b").smallest_waiting_milli == 0);  // none of b's waits
        CHECK(s.shares.at("lab").smallest_waiting_milli == 1000);  // its queues' smallest
        CHECK(s.shares.at("lab").usage_milli == 8000);
        CHECK(s.shares.at("lab").entitlement_milli == 8000);
      }
    }
    const nlohmann::json shares = SummarizeShares({.policy = "tessel", .seeds = {1}, .runs = {*r}});
    CHECK(shares["b"]["first_demand_s"] == 100);
    CHECK(shares["b"]["longest_waiting_job_fits_s"] == 0);  // reclaimed at once
    CHECK(shares["b"]["time_to_share_s"].get<int64_t>() <= shares["b"]["step_s"].get<int64_t>());
    CHECK(shares["a"]["evictions"] == 4);
    CHECK(shares["b"]["evictions"] == 0);
    CHECK(shares["lab"]["evictions"] == 4);
    CHECK(r->evictions_by_reason.at("reclaim") == 4);
    const nlohmann::json summary = Summarize({.policy = "tessel", .seeds = {1}, .runs = {*r}});
    CHECK(summary["interruptions"] == 4);  // all four were running
    CHECK(summary["evictions_by_reason"]["reclaim"] == 4);
  }
}

TEST_CASE("trace: room is owed to a waiting job only where the others' pods can give it", "[trace]") {
  // a and b of 4 GPUs each in cohort lab, one 8-GPU node that a fills from 0 to 150; b (which
  // may not reclaim) waits from 100 with a 2-GPU job. Entitled: b 2 (its demand), a 6. a's 8 GPUs in
  // 2-GPU pods: one of them is owed to b (a keeps 6). In one 8-GPU pod: taking it leaves a at 0,
  // so b's job fits within its entitlement but no room is owed to it.
  for (const int a_pod_gpus : {2, 8}) {
    INFO("a's pods of " << a_pod_gpus << " GPUs");
    nlohmann::json events = nlohmann::json::array();
    for (int k = 0; k < 8 / a_pod_gpus; ++k) events.push_back(PodEvent(0, "a", StrCat("a", k), a_pod_gpus, 150));
    events.push_back(PodEvent(100, "b", "b0", 2, 10));
    nlohmann::json b = QueueObject("b", "lab", 4);
    b["spec"]["preemption"]["reclaimWithinCohort"] = "Never";
    nlohmann::json doc = {{"nodes", {NodeObject("n1", 8)}}, {"queues", {QueueObject("a", "lab", 4), b}}, {"events", events}};
    absl::StatusOr<TimelineInput> in = ParseEventList(doc);
    REQUIRE(in.ok());
    absl::StatusOr<ProfileConfig> profile = TraceProfile("tessel");
    REQUIRE(profile.ok());
    absl::StatusOr<TimelineResult> r = SimulateTimeline(*in, {.profile = &*profile, .samples = 100});
    REQUIRE(r.ok());
    int waiting_samples = 0;
    for (const Sample& s : r->samples) {
      if (s.at <= 100 || s.at >= 150) continue;
      INFO("t=" << s.at);
      const ShareSample& sb = s.shares.at("b");
      REQUIRE(sb.smallest_waiting_milli == 2000);  // b waits until a's jobs end
      CHECK(sb.entitlement_milli == 2000);
      CHECK(s.shares.at("a").entitlement_milli == 6000);
      CHECK(sb.room_owed == (a_pod_gpus == 2));
      CHECK_FALSE(s.shares.at("a").room_owed);  // nothing of a's waits
      ++waiting_samples;
    }
    CHECK(waiting_samples >= 10);
    const nlohmann::json shares = SummarizeShares({.policy = "tessel", .seeds = {1}, .runs = {*r}});
    CHECK(shares["b"]["longest_waiting_job_fits_s"].get<int64_t>() >= 40);
    if (a_pod_gpus == 2) {
      CHECK(shares["b"]["longest_room_owed_s"] == shares["b"]["longest_waiting_job_fits_s"]);
    } else {
      CHECK(shares["b"]["longest_room_owed_s"] == 0);
    }
  }
}

TEST_CASE("trace: --usage-half-life takes whole seconds up to a year; runs are labelled by it when compared", "[trace]") {
  CHECK(*ParseHalfLives({"0", "3600"}) == std::vector<int64_t>{0, 3600});
  CHECK(ParseHalfLives({"1h"}).status().message() == "--usage-half-life: want whole seconds in 0..31536000, got \"1h\"");
  CHECK_FALSE(ParseHalfLives({"31536001"}).ok());
  CHECK(RunLabel("tessel", 0, false) == "tessel");
  CHECK(RunLabel("tessel", 0, true) == "tessel/instant");
  CHECK(RunLabel("tessel", 3600, true) == "tessel/hl=3600s");
}

TEST_CASE("trace: the organisation scenarios load, with their cohort trees", "[trace]") {
  for (const char* name : {"org-bursty.json", "org-fixed-demand.json", "org-late-team.json", "org-late-team-uneven.json"}) {
    INFO(name);
    absl::StatusOr<std::string> text = ReadFileToString(StrCat(TESSEL_TRACE_SCENARIOS_DIR, "/org/", name));
    REQUIRE(text.ok());
    absl::StatusOr<TimelineInput> in = ParseEventList(nlohmann::json::parse(*text));
    REQUIRE(in.ok());
    int64_t quota_objects = 0;
    for (const ClusterChange& c : in->changes) quota_objects += c.kind == ClusterChange::Kind::kQuotaObject;
    CHECK(quota_objects >= 6);
    for (const TraceJob& j : in->jobs) CHECK_FALSE(j.queue.empty());
  }
}

}  // namespace timeline_test
}  // namespace tessel::bench
