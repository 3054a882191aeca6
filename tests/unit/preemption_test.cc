// Preemption's victim selection (scheduler/preemption) against brute force, on seeded generated
// families: small nodes whose pods have random priorities, sizes and start times. For one node,
// every subset of the eligible pods is tried: the chosen victims must be exactly the set that
// keeps the most important pods (kube-scheduler's reprieve, in importance order) among all
// sets whose eviction lets the pod fit, and no victim may be spared. Across nodes, the chosen
// candidate must be the best by kube-scheduler's five criteria, computed here from the
// brute-force victims. Then PodDisruptionBudgets, gangs (whole or not at all), pod-to-pod rules
// under removal, and gang preemptors across nodes; and dry runs kept between attempts
// (CandidateMemo) against fresh ones while nodes, nominations and budgets change.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "scheduler/testing/builders.h"
#include "fake_handle.h"
#include "plugins/registry.h"
#include "scheduler/framework/nominator.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/preemption/moves.h"
#include "scheduler/preemption/preemption.h"

namespace tessel {
namespace preemption_test {

using preemption::Candidate;
using preemption::Context;
using testing::FakeHandle;
using testing::NodeBuilder;
using testing::PodBuilder;

struct World {
  FakeHandle handle;
  Registry registry = InTreeRegistry();
  std::unique_ptr<Framework> fw;
  StringKeyedMap<std::string> gang_label;  // pod key -> gang

  World() {
    auto made = Framework::New(registry, DefaultProfile(), handle);
    REQUIRE(made.ok());
    fw = *std::move(made);
  }
  Context Ctx(std::vector<PodDisruptionBudget> pdbs = {}) {
    return Context{.framework = fw.get(),
                   .snapshot = &handle.snapshot(),
                   .pdbs = std::move(pdbs),
                   .gang_of = [this](const Pod& p) {
                     auto it = gang_label.find(p.Key());
                     return it == gang_label.end() ? std::string() : it->second;
                   }};
  }
  CycleState PreFiltered(const Pod& pod) {
    CycleState state;
    REQUIRE(fw->RunPreFilter(state, pod).ok());
    return state;
  }
};

// One generated running pod.
struct Spec {
  std::string key;
  int32_t priority;
  int64_t cpu;  // whole CPUs
  int64_t gpu;  // whole GPUs
  int64_t start;
};

Pod Running(const Spec& s, const std::string& node) {
  Pod p = PodBuilder(s.key.substr(s.key.find('/') + 1))
              .Requests(StrCat("cpu:", s.cpu, ",nvidia.com/gpu:", s.gpu))
              .Priority(s.priority)
              .Node(node)
              .Build();
  p.phase = PodPhase::kRunning;
  p.start_time = absl::FromUnixSeconds(s.start);
  return p;
}

constexpr int64_t kNodeCpu = 8, kNodeGpu = 4;

Node SmallNode(const std::string& name) {
  return NodeBuilder(name)
      .Allocatable(StrCat("cpu:", kNodeCpu, ",memory:64Gi,nvidia.com/gpu:", kNodeGpu))
      .Label("nvidia.com/gpu.count", std::to_string(kNodeGpu))
      .Build();
}

// Does the preemptor fit next to `kept` pods (plain resource arithmetic)?
bool FitsWith(const std::vector<const Spec*>& kept, int64_t cpu, int64_t gpu) {
  int64_t c = cpu, g = gpu;
  for (const Spec* s : kept) c += s->cpu, g += s->gpu;
  return c <= kNodeCpu && g <= kNodeGpu;
}

// kube-scheduler's MoreImportantPod on specs.
bool MoreImportant(const Spec* a, const Spec* b) {
  if (a->priority != b->priority) return a->priority > b->priority;
  return a->start < b->start;
}

// Brute force for one node: among every set of eligible pods whose eviction lets the preemptor
// fit, the one that keeps the most important pods (lexicographic over the importance order).
// nullopt when evicting all eligible pods is not enough.
std::optional<std::set<std::string>> BruteForceVictims(const std::vector<Spec>& pods,
                                                       int32_t priority, int64_t cpu, int64_t gpu) {
  std::vector<const Spec*> eligible, fixed;
  for (const Spec& s : pods) (s.priority < priority ? eligible : fixed).push_back(&s);
  std::stable_sort(eligible.begin(), eligible.end(), MoreImportant);
  const size_t n = eligible.size();
  std::optional<uint32_t> best_keep;
  auto lex_better = [&](uint32_t a, uint32_t b) {  // bit i = keep eligible[i]
    for (size_t i = 0; i < n; ++i) {
      const bool ka = a >> i & 1, kb = b >> i & 1;
      if (ka != kb) return ka;
    }
    return false;
  };
  for (uint32_t keep = 0; keep < (1u << n); ++keep) {
    std::vector<const Spec*> kept = fixed;
    for (size_t i = 0; i < n; ++i) {
      if (keep >> i & 1) kept.push_back(eligible[i]);
    }
    if (!FitsWith(kept, cpu, gpu)) continue;
    if (!best_keep || lex_better(keep, *best_keep)) best_keep = keep;
  }
  if (!best_keep) return std::nullopt;
  std::set<std::string> victims;
  for (size_t i = 0; i < n; ++i) {
    if (!(*best_keep >> i & 1)) victims.insert(eligible[i]->key);
  }
  return victims;
}

std::set<std::string> Keys(const std::vector<PreemptionVictim>& victims) {
  std::set<std::string> out;
  for (const PreemptionVictim& v : victims) out.insert(v.pod->Key());
  return out;
}

std::vector<Spec> GenerateNode(std::mt19937_64& rng, const std::string& node, int count) {
  std::vector<Spec> out;
  int64_t cpu = 0, gpu = 0;
  for (int i = 0; i < count; ++i) {
    Spec s{.key = StrCat("default/", node, "-p", i),
           .priority = static_cast<int32_t>(rng() % 5) * 10,
           .cpu = 1 + static_cast<int64_t>(rng() % 3),
           .gpu = static_cast<int64_t>(rng() % 2),
           .start = 1000 + static_cast<int64_t>(rng() % 50)};
    if (cpu + s.cpu > kNodeCpu || gpu + s.gpu > kNodeGpu) break;
    cpu += s.cpu;
    gpu += s.gpu;
    out.push_back(std::move(s));
  }
  return out;
}

TEST_CASE("victims on one node: the fewest, least important pods brute force finds", "[preemption]") {
  std::mt19937_64 rng(20261123);
  int with_candidate = 0, without = 0;
  for (int round = 0; round < 400; ++round) {
    CAPTURE(round);
    World w;
    w.handle.AddNode(SmallNode("n1"));
    const std::vector<Spec> specs = GenerateNode(rng, "n1", 1 + static_cast<int>(rng() % 7));
    for (const Spec& s : specs) w.handle.AddPod(Running(s, "n1"));
    const int32_t priority = static_cast<int32_t>(rng() % 5) * 10 + 5;
    const int64_t cpu = 1 + static_cast<int64_t>(rng() % kNodeCpu);
    const int64_t gpu = static_cast<int64_t>(rng() % (kNodeGpu + 1));
    const Pod pod = PodBuilder("preemptor").Requests(StrCat("cpu:", cpu, ",nvidia.com/gpu:", gpu))
                        .Priority(priority).Build();
    CycleState state = w.PreFiltered(pod);
    const Context ctx = w.Ctx();
    std::optional<Candidate> got =
        preemption::SelectVictimsOnNode(ctx, state, pod, *w.handle.snapshot().Get("n1"));
    std::optional<std::set<std::string>> want = BruteForceVictims(specs, priority, cpu, gpu);
    REQUIRE(got.has_value() == want.has_value());
    if (!want) {
      ++without;
      continue;
    }
    ++with_candidate;
    CHECK(Keys(got->victims) == *want);
    CHECK(got->pdb_violations == 0);
    for (const PreemptionVictim& v : got->victims) {
      CHECK(v.pod->PriorityValue() < priority);
      CHECK(v.reason == preemption::kLowerPriority);
    }
    // Never more than needed: sparing any one victim leaves the pod without room.
    for (const std::string& spared : *want) {
      std::vector<const Spec*> kept;
      for (const Spec& s : specs) {
        if (!want->contains(s.key) || s.key == spared) kept.push_back(&s);
      }
      CHECK_FALSE(FitsWith(kept, cpu, gpu));
    }
  }
  // The family exercises both outcomes.
  CHECK(with_candidate > 100);
  CHECK(without > 20);
}

// The expected best candidate from brute-force victims, by kube-scheduler's criteria.
struct Expected {
  std::string node;
  std::set<std::string> victims;
};

std::tuple<int64_t, int64_t, size_t, int64_t> Cost(const std::vector<const Spec*>& victims) {
  int64_t highest = std::numeric_limits<int64_t>::min(), sum = 0;
  for (const Spec* s : victims) {
    highest = std::max<int64_t>(highest, s->priority);
    sum += s->priority + (int64_t{1} << 31);
  }
  int64_t earliest_of_highest = std::numeric_limits<int64_t>::max();
  for (const Spec* s : victims) {
    if (s->priority == highest) earliest_of_highest = std::min(earliest_of_highest, s->start);
  }
  // Later start is better: negate so that smaller is better throughout.
  return {highest, sum, victims.size(), victims.empty() ? 0 : -earliest_of_highest};
}

TEST_CASE("the candidate node: kube-scheduler's order over brute-force victims", "[preemption]") {
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int round = 0; round < 300; ++round) {
    CAPTURE(round);
    World w;
    const int nodes = 2 + static_cast<int>(rng() % 3);
    std::map<std::string, std::vector<Spec>> by_node;
    for (int n = 1; n <= nodes; ++n) {
      const std::string name = StrCat("n", n);
      w.handle.AddNode(SmallNode(name));
      by_node[name] = GenerateNode(rng, name, 2 + static_cast<int>(rng() % 5));
      for (const Spec& s : by_node[name]) w.handle.AddPod(Running(s, name));
    }
    const int32_t priority = static_cast<int32_t>(rng() % 4) * 10 + 15;
    const int64_t cpu = 2 + static_cast<int64_t>(rng() % (kNodeCpu - 1));
    const int64_t gpu = static_cast<int64_t>(rng() % (kNodeGpu + 1));
    const Pod pod = PodBuilder("preemptor").Requests(StrCat("cpu:", cpu, ",nvidia.com/gpu:", gpu))
                        .Priority(priority).Build();
    CycleState state = w.PreFiltered(pod);
    FilterOutcome f = w.fw->FindFeasibleNodes(state, pod, w.handle.snapshot().nodes());
    if (!f.feasible.empty()) continue;  // preemption runs only when nothing fits
    std::optional<Expected> want;
    std::optional<std::tuple<int64_t, int64_t, size_t, int64_t>> want_cost;
    for (const auto& [name, specs] : by_node) {  // name order: ties keep the first
      auto victims = BruteForceVictims(specs, priority, cpu, gpu);
      if (!victims) continue;
      std::vector<const Spec*> chosen;
      for (const Spec& s : specs) {
        if (victims->contains(s.key)) chosen.push_back(&s);
      }
      auto cost = Cost(chosen);
      if (!want_cost || cost < *want_cost) {
        want_cost = cost;
        want = Expected{name, *victims};
      }
    }
    const Context ctx = w.Ctx();
    std::vector<Candidate> got = preemption::FindCandidates(ctx, state, pod, f.rejected);
    REQUIRE(got.empty() == !want.has_value());
    if (!want) continue;
    ++checked;
    CHECK(got.front().node == want->node);
    CHECK(Keys(got.front().victims) == want->victims);
  }
  CHECK(checked > 100);
}

// Nodes of random pods: priorities from a few values (some pods without spec.priority), some
// terminating; the preemptor's priority and request drawn so that some nodes hold victims.
TEST_CASE("the victim index and candidate limits: the candidates of the walk over every node",
          "[preemption]") {
  std::mt19937_64 rng(2024);
  int compared = 0, skipped = 0, limited = 0;
  for (int round = 0; round < 200; ++round) {
    CAPTURE(round);
    World w;
    const int nodes = 5 + static_cast<int>(rng() % 40);
    const bool terminating = round % 2 == 0;  // some rounds without any terminating pod
    int64_t next = 0;
    for (int n = 0; n < nodes; ++n) {
      const std::string name = StrCat("n", n);
      w.handle.AddNode(SmallNode(name));
      for (int k = 0, pods = 2 + static_cast<int>(rng() % 3); k < pods; ++k) {
        Spec spec{StrCat("default/r", next++), static_cast<int32_t>(rng() % 3) * 100, 2 + static_cast<int64_t>(rng() % 2),
                  static_cast<int64_t>(rng() % 2), static_cast<int64_t>(rng() % 100)};
        Pod p = Running(spec, name);
        if (rng() % 10 == 0) p.priority.reset();  // resolved at use: PriorityOf gives 0
        if (terminating && rng() % 12 == 0) p.meta.deletion_timestamp = absl::FromUnixSeconds(1);
        w.handle.AddPod(std::move(p));
      }
    }
    const int32_t priority = static_cast<int32_t>(rng() % 4) * 100;
    const Pod pod = PodBuilder("preemptor").Requests(StrCat("cpu:", 6 + rng() % 3, ",nvidia.com/gpu:", rng() % 5))
                        .Priority(priority).Build();
    CycleState state = w.PreFiltered(pod);
    FilterOutcome f = w.fw->FindFeasibleNodes(state, pod, w.handle.snapshot().nodes());
    if (!f.feasible.empty()) continue;
    preemption::VictimIndex index;
    index.Sync(w.handle.snapshot());
    Context full = w.Ctx();
    full.priority_floor = 0;  // FakeHandle's: a pod without spec.priority has priority 0
    full.seed = rng();
    full.limits = {.min_percentage = static_cast<int32_t>(rng() % 101),
                   .min_absolute = static_cast<int32_t>(rng() % 6)};
    if (full.limits.min_percentage == 0 && full.limits.min_absolute == 0) full.limits.min_absolute = 1;
    Context indexed = full;
    indexed.index = &index;
    const std::vector<Candidate> want = preemption::FindCandidates(full, state, pod, f.rejected);
    const std::vector<Candidate> got = preemption::FindCandidates(indexed, state, pod, f.rejected);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CHECK(got[i].node == want[i].node);
      CHECK(Keys(got[i].victims) == Keys(want[i].victims));
    }
    ++compared;
    const preemption::VictimIndex::Query q{.priority = priority, .floor = 0};
    if (!index.MayHaveVictims(q)) {
      ++skipped;
      CHECK(want.empty());
    }
    // kube-scheduler's limit: no more candidates than asked for (none here violates a budget).
    const size_t wanted = full.limits.For(static_cast<size_t>(nodes));
    CHECK(want.size() <= wanted);
    Context unlimited = full;
    unlimited.limits = {};
    const size_t all = preemption::FindCandidates(unlimited, state, pod, f.rejected).size();
    CHECK(want.size() == std::min(all, wanted));
    limited += all > wanted;
  }
  CHECK(compared > 100);
  CHECK(skipped > 5);
  CHECK(limited > 5);
}

TEST_CASE("the victim index follows the snapshot: lowest priority, terminating, unresolved",
          "[preemption]") {
  World w;
  for (const std::string name : {"a", "b", "c"}) w.handle.AddNode(SmallNode(name));
  w.handle.AddPod(PodBuilder("hi").Requests("cpu:1").Priority(500).Node("a").Build());
  w.handle.AddPod(PodBuilder("mid").Requests("cpu:1").Priority(200).Node("b").Build());
  preemption::VictimIndex index;
  index.Sync(w.handle.snapshot());
  REQUIRE(index.InStepWith(w.handle.snapshot()));
  auto visited = [&](int32_t priority, int32_t floor, uint32_t offset = 0) {
    std::vector<uint32_t> out;
    index.ForEachFrom(offset, {.priority = priority, .floor = floor}, [&](uint32_t pos) {
      out.push_back(pos);
      return true;
    });
    return out;
  };
  CHECK_FALSE(index.MayHaveVictims({.priority = 200}));
  CHECK(visited(200, 0).empty());
  CHECK(visited(201, 0) == std::vector<uint32_t>{1});
  CHECK(visited(501, 0) == std::vector<uint32_t>{0, 1});
  CHECK(visited(501, 0, 1) == std::vector<uint32_t>{1, 0});  // from the offset, wrapping
  CHECK(index.MayHaveVictims({.priority = 0, .any_priority = true}));
  CHECK(index.CountFor({.priority = 0, .any_priority = true}) == 3);
  // A pod without spec.priority counts by the floor; a terminating pod counts whatever it is.
  Pod unresolved = PodBuilder("free").Requests("cpu:1").Node("c").Build();
  unresolved.priority.reset();
  w.handle.AddPod(unresolved);
  CHECK_FALSE(index.InStepWith(w.handle.snapshot()));
  index.Sync(w.handle.snapshot());
  CHECK(visited(150, 100) == std::vector<uint32_t>{2});
  CHECK(visited(150, 150).empty());
  Pod leaving = PodBuilder("leaving").Requests("cpu:1").Priority(900).Node("a").Build();
  leaving.meta.deletion_timestamp = absl::FromUnixSeconds(5);
  w.handle.AddPod(leaving);
  index.Sync(w.handle.snapshot());
  CHECK(visited(0, 0) == std::vector<uint32_t>{0});
}

TEST_CASE("PodDisruptionBudgets: protected pods are reprieved first and violations counted",
          "[preemption]") {
  std::mt19937_64 rng(99);
  int violating_rounds = 0;
  for (int round = 0; round < 300; ++round) {
    CAPTURE(round);
    World w;
    w.handle.AddNode(SmallNode("n1"));
    std::vector<Spec> specs = GenerateNode(rng, "n1", 2 + static_cast<int>(rng() % 6));
    PodDisruptionBudget pdb;
    pdb.meta.name = "budget";
    pdb.meta.namespace_ = "default";
    pdb.selector = LabelSelector{.match_labels = {{"app", "protected"}}};
    pdb.disruptions_allowed = static_cast<int32_t>(rng() % 2);
    std::set<std::string> protected_keys;
    for (const Spec& s : specs) {
      Pod p = Running(s, "n1");
      if (rng() % 2 == 0) {
        p.meta.labels["app"] = "protected";
        protected_keys.insert(s.key);
      }
      w.handle.AddPod(std::move(p));
    }
    const int32_t priority = 100;  // every pod is a potential victim
    const int64_t cpu = 1 + static_cast<int64_t>(rng() % kNodeCpu);
    const Pod pod = PodBuilder("preemptor").Requests(StrCat("cpu:", cpu)).Priority(priority).Build();
    CycleState state = w.PreFiltered(pod);
    const Context ctx = w.Ctx({pdb});
    std::optional<Candidate> got =
        preemption::SelectVictimsOnNode(ctx, state, pod, *w.handle.snapshot().Get("n1"));
    REQUIRE(got.has_value());  // everything may go, and the pod fits an empty node
    const std::set<std::string> victims = Keys(got->victims);
    // The pod fits without its victims, and sparing any one of them would not do.
    std::vector<const Spec*> kept;
    for (const Spec& s : specs) {
      if (!victims.contains(s.key)) kept.push_back(&s);
    }
    CHECK(FitsWith(kept, cpu, 0));
    for (const std::string& spared : victims) {
      std::vector<const Spec*> with = kept;
      for (const Spec& s : specs) {
        if (s.key == spared) with.push_back(&s);
      }
      CHECK_FALSE(FitsWith(with, cpu, 0));
    }
    // Violations: protected victims beyond what the budget allows.
    int64_t protected_victims = 0;
    for (const std::string& v : victims) protected_victims += protected_keys.contains(v);
    const int64_t want = std::max<int64_t>(0, protected_victims - pdb.disruptions_allowed);
    CHECK(got->pdb_violations == want);
    violating_rounds += want > 0;
    // Protected pods go first in the eviction order, so a 429 comes before anything is lost.
    bool seen_unprotected = false;
    for (const PreemptionVictim& v : preemption::EvictionOrder(ctx.pdbs, got->victims)) {
      const bool prot = protected_keys.contains(v.pod->Key());
      CHECK_FALSE((prot && seen_unprotected));
      seen_unprotected |= !prot;
    }
  }
  CHECK(violating_rounds > 20);
}

TEST_CASE("a candidate without budget violations wins over a cheaper one with", "[preemption]") {
  World w;
  w.handle.AddNode(SmallNode("n1"));
  w.handle.AddNode(SmallNode("n2"));
  Pod a = Running({.key = "default/a", .priority = 1, .cpu = 8, .gpu = 0, .start = 10}, "n1");
  a.meta.labels["app"] = "db";
  w.handle.AddPod(a);
  w.handle.AddPod(Running({.key = "default/b", .priority = 50, .cpu = 8, .gpu = 0, .start = 10}, "n2"));
  PodDisruptionBudget pdb;
  pdb.meta = {.name = "db", .namespace_ = "default"};
  pdb.selector = LabelSelector{.match_labels = {{"app", "db"}}};
  const Pod pod = PodBuilder("p").Requests("cpu:4").Priority(100).Build();
  CycleState state = w.PreFiltered(pod);
  FilterOutcome f = w.fw->FindFeasibleNodes(state, pod, w.handle.snapshot().nodes());
  SECTION("the budget allows none: the higher-priority victim on n2") {
    auto got = preemption::FindCandidates(w.Ctx({pdb}), state, pod, f.rejected);
    REQUIRE(got.size() == 2);
    CHECK(got[0].node == "n2");
    CHECK(got[1].pdb_violations == 1);
  }
  SECTION("the budget allows one: the lowest priority wins") {
    pdb.disruptions_allowed = 1;
    auto got = preemption::FindCandidates(w.Ctx({pdb}), state, pod, f.rejected);
    REQUIRE(got.size() == 2);
    CHECK(got[0].node == "n1");
  }
}

TEST_CASE("gangs are evicted whole or not at all", "[preemption][gang]") {
  World w;
  for (const char* n : {"n1", "n2", "n3"}) w.handle.AddNode(SmallNode(n));
  // Gang g1 (priority 1) has a pod on n1 and on n2; n3 holds one pod of priority 5.
  w.handle.AddPod(Running({.key = "default/g1-a", .priority = 1, .cpu = 8, .gpu = 0, .start = 1}, "n1"));
  w.handle.AddPod(Running({.key = "default/g1-b", .priority = 1, .cpu = 2, .gpu = 0, .start = 1}, "n2"));
  w.handle.AddPod(Running({.key = "default/solo", .priority = 5, .cpu = 8, .gpu = 0, .start = 1}, "n3"));
  w.gang_label["default/g1-a"] = "g1";
  w.gang_label["default/g1-b"] = "g1";
  const Pod pod = PodBuilder("p").Requests("cpu:8").Priority(10).Build();
  CycleState state = w.PreFiltered(pod);
  FilterOutcome f = w.fw->FindFeasibleNodes(state, pod, w.handle.snapshot().nodes());
  REQUIRE(f.feasible.empty());

  SECTION("a victim's gang mates elsewhere are victims too, and count in the cost") {
    auto on_n1 = preemption::SelectVictimsOnNode(w.Ctx(), state, pod, *w.handle.snapshot().Get("n1"));
    REQUIRE(on_n1.has_value());
    CHECK(Keys(on_n1->victims) == std::set<std::string>{"default/g1-a", "default/g1-b"});
    // Two victims of priority 1 (on n1 or n2, the same gang) against one of priority 5: the
    // lower highest priority wins; n1 and n2 cost the same, so the name decides.
    auto got = preemption::FindCandidates(w.Ctx(), state, pod, f.rejected);
    REQUIRE(got.size() == 3);
    CHECK(got[0].node == "n1");
    CHECK(Keys(got[1].victims) == Keys(got[0].victims));
    CHECK(got[2].node == "n3");
  }
  SECTION("a gang with a member the pod may not evict is no victim at all") {
    w.handle.AddPod(Running({.key = "default/g1-c", .priority = 20, .cpu = 1, .gpu = 0, .start = 1}, "n2"));
    w.gang_label["default/g1-c"] = "g1";
    CycleState s2 = w.PreFiltered(pod);
    auto on_n1 = preemption::SelectVictimsOnNode(w.Ctx(), s2, pod, *w.handle.snapshot().Get("n1"));
    CHECK_FALSE(on_n1.has_value());
    FilterOutcome f2 = w.fw->FindFeasibleNodes(s2, pod, w.handle.snapshot().nodes());
    auto got = preemption::FindCandidates(w.Ctx(), s2, pod, f2.rejected);
    REQUIRE(got.size() == 1);
    CHECK(got[0].node == "n3");
  }
}

TEST_CASE("preemptionPolicy Never and terminating victims make a pod wait", "[preemption]") {
  World w;
  w.handle.AddNode(SmallNode("n1"));
  Pod leaving = Running({.key = "default/old", .priority = 1, .cpu = 8, .gpu = 0, .start = 1}, "n1");
  leaving.meta.deletion_timestamp = absl::FromUnixSeconds(50);
  w.handle.AddPod(leaving);
  Pod pod = PodBuilder("p").Requests("cpu:8").Priority(10).Build();
  std::string why;
  const Context ctx = w.Ctx();
  CHECK(preemption::EligibleToPreempt(ctx, pod, {}, &why));
  pod.nominated_node_name = "n1";
  CHECK_FALSE(preemption::EligibleToPreempt(ctx, pod, {}, &why));
  CHECK(why == "not eligible due to a terminating pod on the nominated node.");
  pod.nominated_node_name.clear();
  pod.preemption_policy = PreemptionPolicy::kNever;
  CHECK_FALSE(preemption::EligibleToPreempt(ctx, pod, {}, &why));
  CHECK(why == "not eligible due to preemptionPolicy=Never.");
}

// Issue 18, item 12: two reclaimers on one node. The first one's victim terminates while it is
// nominated there; the second must evict one pod for its one CPU, not a second for the room the
// first one's victim is freeing (kube-scheduler counts that room twice), and never "evict" the
// terminating pod again.
TEST_CASE("a terminating victim's room is counted once, for the pod nominated to it", "[preemption]") {
  World w;
  w.handle.AddNode(SmallNode("n1"));
  Pod leaving = Running({.key = "default/old", .priority = 0, .cpu = 1, .gpu = 0, .start = 1}, "n1");
  leaving.meta.deletion_timestamp = absl::FromUnixSeconds(50);
  w.handle.AddPod(leaving);
  for (int i = 0; i < 7; ++i) {
    w.handle.AddPod(Running({.key = StrCat("default/b", i), .priority = 0, .cpu = 1, .gpu = 0,
                             .start = 10 + i},
                            "n1"));
  }
  Context ctx = w.Ctx();
  Pod first = PodBuilder("first").Requests("cpu:1").Priority(10).Build();
  first.nominated_node_name = "n1";
  ctx.nominations = std::make_shared<const Nominations>(
      Nominations{.pods = {{"n1", {std::make_shared<const Pod>(first)}}}});
  const Pod second = PodBuilder("second").Requests("cpu:1").Priority(10).Build();
  const CycleState state = w.PreFiltered(second);
  const NodeInfo& n1 = *w.handle.snapshot().Get("n1");

  // Filtering: the node is full now, and will be full once `old` has gone to `first`.
  CHECK_FALSE(w.fw->RunFiltersWithNominatedPods(state, second, n1, ctx.nominated()).ok());
  auto c = preemption::SelectVictimsOnNode(ctx, state, second, n1);
  REQUIRE(c.has_value());
  REQUIRE(c->victims.size() == 1);
  CHECK(c->victims[0].pod->Key() == "default/b6");  // the least important: started last

  // Without the nomination, the room `old` frees is enough: a candidate without victims.
  ctx.nominations = nullptr;
  c = preemption::SelectVictimsOnNode(ctx, state, second, n1);
  REQUIRE(c.has_value());
  CHECK(c->victims.empty());
}

TEST_CASE("a pod may take room beside a nominated pod once that pod's victims are counted gone",
          "[preemption]") {
  World w;
  w.handle.AddNode(SmallNode("n1"));  // 8 CPUs
  Pod leaving = Running({.key = "default/old", .priority = 0, .cpu = 2, .gpu = 0, .start = 1}, "n1");
  leaving.meta.deletion_timestamp = absl::FromUnixSeconds(50);
  w.handle.AddPod(leaving);
  w.handle.AddPod(Running({.key = "default/keep", .priority = 0, .cpu = 3, .gpu = 0, .start = 2}, "n1"));
  Pod first = PodBuilder("first").Requests("cpu:2").Priority(10).Build();
  NominatedPodMap nominated;
  nominated["n1"].push_back(std::make_shared<const Pod>(first));
  const NodeInfo& n1 = *w.handle.snapshot().Get("n1");
  // 3 free now; once `old` leaves, `first` takes its 2 and 3 remain: a 3-CPU pod fits both views.
  const Pod fits = PodBuilder("fits").Requests("cpu:3").Priority(10).Build();
  CHECK(w.fw->RunFiltersWithNominatedPods(w.PreFiltered(fits), fits, n1, &nominated).ok());
  // The node as it is still counts: `old` holds its room until it is gone.
  const Pod big = PodBuilder("big").Requests("cpu:4").Priority(10).Build();
  CHECK_FALSE(w.fw->RunFiltersWithNominatedPods(w.PreFiltered(big), big, n1, &nominated).ok());
  // A less important pod does not see the nomination: it is checked against the node as it is.
  const Pod low = PodBuilder("low").Requests("cpu:3").Priority(5).Build();
  CHECK(w.fw->RunFiltersWithNominatedPods(w.PreFiltered(low), low, n1, &nominated).ok());
  // The future view is what holds the room: a 3-CPU pod beside two nominated 2-CPU pods does not fit.
  Pod second = PodBuilder("second").Requests("cpu:2").Priority(10).Build();
  nominated["n1"].push_back(std::make_shared<const Pod>(second));
  CHECK_FALSE(w.fw->RunFiltersWithNominatedPods(w.PreFiltered(fits), fits, n1, &nominated).ok());
}

TEST_CASE("anti-affinity: evicting the pod that repels the preemptor is enough", "[preemption]") {
  World w;
  w.handle.AddNode(SmallNode("n1"));
  // A low-priority pod whose required anti-affinity rejects pods labelled app=web on the node,
  // and a high-priority one that takes room but does not repel.
  Pod repeller = Running({.key = "default/repeller", .priority = 1, .cpu = 1, .gpu = 0, .start = 1}, "n1");
  repeller.pod_anti_affinity.required.push_back(PodAffinityTerm{
      .label_selector = LabelSelector{.match_labels = {{"app", "web"}}},
      .topology_key = "kubernetes.io/hostname"});
  w.handle.AddPod(repeller);
  w.handle.AddPod(Running({.key = "default/filler", .priority = 2, .cpu = 2, .gpu = 0, .start = 1}, "n1"));
  Node n = SmallNode("n1");
  n.meta.labels["kubernetes.io/hostname"] = "n1";
  w.handle.AddNode(n);
  Pod pod = PodBuilder("web").Requests("cpu:1").Priority(10).Build();
  pod.meta.labels["app"] = "web";
  CycleState state = w.PreFiltered(pod);
  FilterOutcome f = w.fw->FindFeasibleNodes(state, pod, w.handle.snapshot().nodes());
  REQUIRE(f.feasible.empty());
  auto got = preemption::FindCandidates(w.Ctx(), state, pod, f.rejected);
  REQUIRE(got.size() == 1);
  CHECK(Keys(got[0].victims) == std::set<std::string>{"default/repeller"});
}

// Found by the composition property: a nominated pod's required anti-affinity must keep the pods
// it repels off its node, also when no running pod has anti-affinity (InterPodAffinity's PreFilter
// then skips its Filter, and adding the nominated pod used to leave it skipped).
TEST_CASE("a nominated pod's anti-affinity holds its node against the pods it repels", "[preemption]") {
  World w;
  Node n = SmallNode("n1");
  n.meta.labels["kubernetes.io/hostname"] = "n1";
  w.handle.AddNode(n);
  Pod nominated = PodBuilder("loner").Requests("cpu:1").Priority(10).Build();
  nominated.pod_anti_affinity.required.push_back(PodAffinityTerm{
      .label_selector = LabelSelector{.match_labels = {{"app", "web"}}},
      .topology_key = "kubernetes.io/hostname"});
  NominatedPodMap map;
  map["n1"].push_back(std::make_shared<const Pod>(nominated));
  const NodeInfo& n1 = *w.handle.snapshot().Get("n1");
  Pod web = PodBuilder("web").Requests("cpu:1").Priority(5).Build();
  web.meta.labels["app"] = "web";
  const Status st = w.fw->RunFiltersWithNominatedPods(w.PreFiltered(web), web, n1, &map);
  CHECK_FALSE(st.ok());
  CHECK(st.plugin() == "InterPodAffinity");
  // A pod it does not repel is not kept off.
  Pod batch = PodBuilder("batch").Requests("cpu:1").Priority(5).Build();
  batch.meta.labels["app"] = "batch";
  CHECK(w.fw->RunFiltersWithNominatedPods(w.PreFiltered(batch), batch, n1, &map).ok());
}

// The PreFilter extensions make pod-to-pod rules right under removal: after RemovePod of some
// pods (through Framework::RunPreFilterExtensionRemovePod, on a state computed with them), every
// filter answers on every node as it does for a fresh PreFilter on a cluster without them.
TEST_CASE("PreFilter extensions: removing pods equals never having had them", "[preemption]") {
  std::mt19937_64 rng(1123);
  const std::vector<std::string> zones = {"z1", "z2", "z3"};
  for (int round = 0; round < 200; ++round) {
    CAPTURE(round);
    const int nodes = 3 + static_cast<int>(rng() % 4);
    std::vector<Node> node_list;
    for (int n = 0; n < nodes; ++n) {
      const std::string name = StrCat("n", n);
      node_list.push_back(NodeBuilder(name)
                              .Allocatable("cpu:64,memory:256Gi,pods:110")
                              .Label("kubernetes.io/hostname", name)
                              .Label("topology.kubernetes.io/zone", zones[rng() % zones.size()])
                              .Build());
    }
    std::vector<Pod> pods;
    for (int i = 0; i < 12; ++i) {
      Pod p = PodBuilder(StrCat("p", i)).Requests("cpu:1").Priority(1).Node(StrCat("n", rng() % nodes)).Build();
      p.meta.labels["app"] = rng() % 2 ? "web" : "db";
      if (rng() % 4 == 0) {  // repels web pods from its node
        p.pod_anti_affinity.required.push_back(PodAffinityTerm{
            .label_selector = LabelSelector{.match_labels = {{"app", "web"}}},
            .topology_key = "kubernetes.io/hostname"});
      }
      pods.push_back(std::move(p));
    }
    Pod incoming = PodBuilder("incoming").Requests("cpu:1").Priority(10).Build();
    incoming.meta.labels["app"] = "web";
    incoming.topology_spread_constraints.push_back(TopologySpreadConstraint{
        .max_skew = 1 + static_cast<int32_t>(rng() % 2),
        .topology_key = "topology.kubernetes.io/zone",
        .label_selector = LabelSelector{.match_labels = {{"app", "web"}}}});
    if (rng() % 2) {
      incoming.pod_anti_affinity.required.push_back(PodAffinityTerm{
          .label_selector = LabelSelector{.match_labels = {{"app", "db"}}},
          .topology_key = "kubernetes.io/hostname"});
    }
    std::set<size_t> removed;
    for (size_t i = 0; i < pods.size(); ++i) {
      if (rng() % 3 == 0) removed.insert(i);
    }

    World full, without;
    for (const Node& n : node_list) {
      full.handle.AddNode(n);
      without.handle.AddNode(n);
    }
    for (size_t i = 0; i < pods.size(); ++i) {
      full.handle.AddPod(pods[i]);
      if (!removed.contains(i)) without.handle.AddPod(pods[i]);
    }
    CycleState state = full.PreFiltered(incoming);
    for (size_t i : removed) {
      const NodeInfo* node = full.handle.snapshot().Get(pods[i].node_name);
      REQUIRE(full.fw->RunPreFilterExtensionRemovePod(state, incoming, pods[i], *node).ok());
    }
    CycleState fresh = without.PreFiltered(incoming);
    for (const NodeInfo* n : without.handle.snapshot().nodes()) {
      CAPTURE(n->name());
      // The node as the dry run sees it: the full node without the removed pods.
      NodeInfo dry = *full.handle.snapshot().Get(n->name());
      for (size_t i : removed) dry.RemovePod(pods[i].Key());
      const Status want = without.fw->RunFilters(fresh, incoming, *n);
      const Status got = full.fw->RunFilters(state, incoming, dry);
      CHECK(got.code() == want.code());
      CHECK(got.reasons() == want.reasons());
    }
  }
}

// Volcano #4607: a gang of 4 one-GPU members, ten low-priority two-pod jobs spread so that each
// node holds one pod of several jobs. Evicting one pod from each of many jobs would be cheapest
// per node; a whole job's pods must go together, so the plan takes whole jobs and as few as it
// can.
TEST_CASE("a gang preemptor takes whole jobs, never one pod from each of many", "[preemption][gang]") {
  World w;
  for (int n = 1; n <= 4; ++n) w.handle.AddNode(SmallNode(StrCat("n", n)));
  // Jobs j0..j7, two pods of 1 GPU each; job j spreads over nodes (j % 4) and ((j + 1) % 4).
  for (int j = 0; j < 8; ++j) {
    for (int k = 0; k < 2; ++k) {
      const std::string key = StrCat("default/j", j, "-", k);
      const std::string node = StrCat("n", 1 + (j + k) % 4);
      w.handle.AddPod(Running({.key = key, .priority = 1, .cpu = 1, .gpu = 1, .start = 10 + j}, node));
      w.gang_label[key] = StrCat("j", j);
    }
  }
  std::vector<PodRef> members;
  std::vector<CycleState> states(4);
  std::vector<const CycleState*> state_ptrs;
  for (int i = 0; i < 4; ++i) {
    members.push_back(std::make_shared<const Pod>(
        PodBuilder(StrCat("train-", i)).Requests("cpu:1,nvidia.com/gpu:2").Priority(100).Build()));
    REQUIRE(w.fw->RunPreFilter(states[i], *members[i]).ok());
    state_ptrs.push_back(&states[i]);
  }
  preemption::GangPreemptionPlan plan = preemption::PlanGangPreemption(w.Ctx(), members, state_ptrs, 4);
  REQUIRE(plan.feasible);
  REQUIRE(plan.targets.size() == 4);
  // Every job a victim belongs to is evicted whole.
  std::map<std::string, int> per_job;
  for (const PreemptionVictim& v : plan.victims) ++per_job[w.gang_label[v.pod->Key()]];
  for (const auto& [job, n] : per_job) {
    CAPTURE(job);
    CHECK(n == 2);
  }
  // 8 GPUs needed; each job frees 2: exactly 4 jobs, not 8 half-jobs.
  CHECK(per_job.size() == 4);
  // The members fit where they go once the victims are gone.
  std::map<std::string, int64_t> gpus_used;
  std::set<std::string> gone = Keys(plan.victims);
  for (const NodeInfo* n : w.handle.snapshot().nodes()) {
    for (const PodRef& p : n->pods()) {
      if (!gone.contains(p->Key())) gpus_used[n->name()] += p->requests.Get(kNvidiaGpu) / 1000;
    }
  }
  for (const auto& t : plan.targets) gpus_used[t.node] += 2;
  for (const auto& [node, used] : gpus_used) CHECK(used <= kNodeGpu);
}

TEST_CASE("gang preemptors on generated clusters: whole gangs, lower priority, room for all",
          "[preemption][gang]") {
  std::mt19937_64 rng(4607);
  int feasible = 0;
  for (int round = 0; round < 150; ++round) {
    CAPTURE(round);
    World w;
    const int nodes = 2 + static_cast<int>(rng() % 3);
    std::map<std::string, int64_t> free_gpus;
    for (int n = 1; n <= nodes; ++n) {
      w.handle.AddNode(SmallNode(StrCat("n", n)));
      free_gpus[StrCat("n", n)] = kNodeGpu;
    }
    int next = 0;
    for (int job = 0; job < 8; ++job) {
      const int size = 1 + static_cast<int>(rng() % 3);
      const int32_t priority = static_cast<int32_t>(rng() % 3) * 10;
      for (int k = 0; k < size; ++k) {
        std::string node = StrCat("n", 1 + static_cast<int>(rng() % nodes));
        if (free_gpus[node] == 0) continue;
        --free_gpus[node];
        const std::string key = StrCat("default/p", next++);
        w.handle.AddPod(Running({.key = key, .priority = priority, .cpu = 1, .gpu = 1, .start = job}, node));
        if (size > 1) w.gang_label[key] = StrCat("job", job);
      }
    }
    const int m = 1 + static_cast<int>(rng() % 4);
    const int32_t priority = 15;
    std::vector<PodRef> members;
    std::vector<CycleState> states(m);
    std::vector<const CycleState*> state_ptrs;
    for (int i = 0; i < m; ++i) {
      members.push_back(std::make_shared<const Pod>(
          PodBuilder(StrCat("g-", i)).Requests("cpu:1,nvidia.com/gpu:2").Priority(priority).Build()));
      REQUIRE(w.fw->RunPreFilter(states[i], *members[i]).ok());
      state_ptrs.push_back(&states[i]);
    }
    auto plan = preemption::PlanGangPreemption(w.Ctx(), members, state_ptrs, m);
    if (!plan.feasible) continue;
    ++feasible;
    CHECK(static_cast<int>(plan.targets.size()) == m);
    const std::set<std::string> gone = Keys(plan.victims);
    CHECK(gone.size() == plan.victims.size());  // each victim once
    std::map<std::string, int64_t> used;
    for (const NodeInfo* n : w.handle.snapshot().nodes()) {
      for (const PodRef& p : n->pods()) {
        if (gone.contains(p->Key())) {
          CHECK(p->PriorityValue() < priority);
          // Its gang goes with it.
          auto g = w.gang_label.find(p->Key());
          if (g != w.gang_label.end()) {
            for (const auto& [key, gang] : w.gang_label) {
              if (gang == g->second) CHECK(gone.contains(key));
            }
          }
        } else {
          used[n->name()] += p->requests.Get(kNvidiaGpu) / 1000;
        }
      }
    }
    // Minimal: every victim unit (a pod, or a job's pods) is needed. With any one back, the
    // room left (2 GPUs a member, per node) is short of the members.
    std::map<std::string, std::vector<PodRef>> units;
    for (const PreemptionVictim& v : plan.victims) {
      auto g = w.gang_label.find(v.pod->Key());
      units[g != w.gang_label.end() ? g->second : v.pod->Key()].push_back(v.pod);
    }
    for (const auto& [unit, pods] : units) {
      CAPTURE(unit);
      std::map<std::string, int64_t> with_unit = used;  // the pods that stay, without the members
      for (const PodRef& p : pods) with_unit[p->node_name] += p->requests.Get(kNvidiaGpu) / 1000;
      int64_t room = 0;
      for (const NodeInfo* n : w.handle.snapshot().nodes()) room += (kNodeGpu - with_unit[n->name()]) / 2;
      CHECK(room < m);
    }
    for (const auto& t : plan.targets) used[t.node] += 2;
    for (const auto& [node, u] : used) CHECK(u <= kNodeGpu);
  }
  CHECK(feasible > 30);
}

// Issue 18, item 5: the loner's 2 GPUs on w-2 looked cheapest for the first member, but the
// whole gang evicted for the second frees w-0 and w-1, where both members fit: the loner stays.
TEST_CASE("a gang preemptor spares victims that later victims made unneeded", "[preemption][gang]") {
  World w;
  for (int n = 0; n < 3; ++n) w.handle.AddNode(SmallNode(StrCat("w-", n)));
  for (int k = 0; k < 4; ++k) {
    const std::string key = StrCat("default/low-", k);
    w.handle.AddPod(Running({.key = key, .priority = 1, .cpu = 1, .gpu = 2, .start = 10}, StrCat("w-", k / 2)));
    w.gang_label[key] = "low";
  }
  w.handle.AddPod(Running({.key = "default/loner", .priority = 1, .cpu = 1, .gpu = 2, .start = 5}, "w-2"));
  std::vector<PodRef> members;
  std::vector<CycleState> states(2);
  std::vector<const CycleState*> state_ptrs;
  for (int i = 0; i < 2; ++i) {
    members.push_back(std::make_shared<const Pod>(
        PodBuilder(StrCat("hp-", i)).Requests("cpu:1,nvidia.com/gpu:4").Priority(100).Build()));
    REQUIRE(w.fw->RunPreFilter(states[i], *members[i]).ok());
    state_ptrs.push_back(&states[i]);
  }
  preemption::GangPreemptionPlan plan = preemption::PlanGangPreemption(w.Ctx(), members, state_ptrs, 2);
  REQUIRE(plan.feasible);
  CHECK(Keys(plan.victims) ==
        std::set<std::string>{"default/low-0", "default/low-1", "default/low-2", "default/low-3"});
  std::set<std::string> nodes;
  for (const auto& t : plan.targets) nodes.insert(t.node);
  CHECK(nodes == std::set<std::string>{"w-0", "w-1"});
}

// Issue 18, item 7: a compact gang is planned within one rack; no rack can host it, so
// nothing is evicted (the gang would stay pending after the evictions anyway).
TEST_CASE("a compact gang preempts within one domain of its topology key, or not at all",
          "[preemption][gang]") {
  World w;
  auto rack_node = [&](std::string name, std::string rack) {
    w.handle.AddNode(NodeBuilder(name)
                         .Allocatable("cpu:16,memory:64Gi,nvidia.com/gpu:8")
                         .Label("nvidia.com/gpu.count", "8")
                         .Label("rack", rack)
                         .Build());
  };
  rack_node("a-0", "a");
  rack_node("a-1", "a");
  rack_node("b-0", "b");
  rack_node("b-1", "b");
  w.handle.AddPod(Running({.key = "default/low-a", .priority = 1, .cpu = 1, .gpu = 8, .start = 1}, "a-0"));
  w.handle.AddPod(Running({.key = "default/low-b", .priority = 1, .cpu = 1, .gpu = 8, .start = 1}, "b-1"));
  auto gang = [&](int size, std::vector<CycleState>& states, std::vector<const CycleState*>& ptrs) {
    std::vector<PodRef> members;
    states.resize(size);
    for (int i = 0; i < size; ++i) {
      members.push_back(std::make_shared<const Pod>(
          PodBuilder(StrCat("big-", i)).Requests("cpu:1,nvidia.com/gpu:8").Priority(100).Build()));
      REQUIRE(w.fw->RunPreFilter(states[i], *members[i]).ok());
      ptrs.push_back(&states[i]);
    }
    return members;
  };
  SECTION("three 8-GPU members, two nodes a rack: not feasible, no victim") {
    std::vector<CycleState> states;
    std::vector<const CycleState*> ptrs;
    auto members = gang(3, states, ptrs);
    auto plan = preemption::PlanGangPreemption(w.Ctx(), members, ptrs, 3, "rack");
    CHECK_FALSE(plan.feasible);
    CHECK(plan.victims.empty());
    CHECK(plan.message ==
          "preemption: evicting lower-priority pods would make room for 2 of the 3 members still "
          "needed within one rack domain");
    // Without the topology key the same gang would evict (and then stay pending).
    CHECK(preemption::PlanGangPreemption(w.Ctx(), members, ptrs, 3).feasible);
  }
  SECTION("two members: one rack, one victim") {
    std::vector<CycleState> states;
    std::vector<const CycleState*> ptrs;
    auto members = gang(2, states, ptrs);
    auto plan = preemption::PlanGangPreemption(w.Ctx(), members, ptrs, 2, "rack");
    REQUIRE(plan.feasible);
    CHECK(plan.victims.size() == 1);
    std::set<std::string> racks;
    for (const auto& t : plan.targets) racks.insert(t.node.substr(0, 1));
    CHECK(racks.size() == 1);
  }
}

// The memo keeps a dry run's answer while the node, the pods nominated there and the budgets
// stay the same: between attempts, each of them changes at random, and every FindCandidates
// with the memo must equal one without it (victims, their order, violations, the ranking).
TEST_CASE("kept dry runs: the same candidates as fresh ones while nodes, nominations and budgets change",
          "[preemption]") {
  std::mt19937_64 rng(4242);
  auto roll = [&rng](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  int64_t kept = 0, compared = 0;
  for (int round = 0; round < 200; ++round) {
    CAPTURE(round);
    World w;
    const int nodes = 2 + roll(4);
    for (int n = 0; n < nodes; ++n) w.handle.AddNode(SmallNode(StrCat("n", n)));
    int next = 0;
    auto add_running = [&](const std::string& node) {
      Pod p = Running({.key = StrCat("default/r", next), .priority = roll(5), .cpu = 1 + roll(3),
                       .gpu = roll(2), .start = next},
                      node);
      ++next;
      p.meta.labels["app"] = roll(2) == 0 ? "a" : "b";
      w.handle.AddPod(std::move(p));
    };
    for (int i = 0; i < 3 * nodes; ++i) add_running(StrCat("n", roll(nodes)));
    // Gangs of two on two nodes: a victim's mate elsewhere may end while its node stays.
    for (int g = 0; g < nodes / 2; ++g) {
      for (int m = 0; m < 2; ++m) {
        w.gang_label[StrCat("default/r", next)] = StrCat("g", g);
        add_running(StrCat("n", (2 * g + m) % nodes));
      }
    }
    Nominator nominator;
    std::vector<PodDisruptionBudget> pdbs;
    preemption::CandidateMemo memo;
    for (int step = 0; step < 16; ++step) {
      CAPTURE(step);
      switch (roll(5)) {
        case 0:
          add_running(StrCat("n", roll(nodes)));
          break;
        case 1: {  // a running pod ends
          const NodeInfo& node = *w.handle.snapshot().nodes()[static_cast<size_t>(roll(nodes))];
          if (!node.pods().empty()) w.handle.RemovePod(node.pods()[static_cast<size_t>(roll(static_cast<int>(node.pods().size())))]->Key());
          break;
        }
        case 2: {  // a budget over one app appears, or allows another number
          PodDisruptionBudget b;
          b.meta.namespace_ = "default";
          b.meta.name = roll(2) == 0 ? "pdb-a" : "pdb-b";
          b.selector = LabelSelector{.match_labels = {{"app", b.meta.name.substr(4)}}};
          b.disruptions_allowed = roll(3);
          std::erase_if(pdbs, [&](const PodDisruptionBudget& o) { return o.meta.name == b.meta.name; });
          pdbs.push_back(std::move(b));
          break;
        }
        default: {  // a pod is nominated somewhere, or its nomination moves or goes
          // Named like the preemptors too: a preemptor may be nominated itself.
          Pod p = PodBuilder(StrCat(roll(2) == 0 ? "waiting" : "pre", roll(3))).Requests(StrCat("cpu:", 1 + roll(3))).Priority(roll(7)).Build();
          nominator.Set(std::make_shared<const Pod>(std::move(p)), roll(3) == 0 ? "" : StrCat("n", roll(nodes)));
          break;
        }
      }
      const Pod pod = PodBuilder(StrCat("pre", roll(3)))
                          .Requests(StrCat("cpu:", 2 + roll(2), ",nvidia.com/gpu:", roll(2)))
                          .Priority(3 + roll(2))
                          .Build();
      const CycleState state = w.PreFiltered(pod);
      Context fresh = w.Ctx(pdbs);
      fresh.nominations = nominator.Snapshot();
      Context memoized = fresh;
      memoized.memo = &memo;
      NodeStatusMap rejected;
      for (const NodeInfo* n : w.handle.snapshot().nodes()) {
        rejected.emplace(n->name(), Status::Unschedulable("full"));
      }
      const std::vector<Candidate> want = preemption::FindCandidates(fresh, state, pod, rejected);
      const std::vector<Candidate> got = preemption::FindCandidates(memoized, state, pod, rejected);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        CHECK(got[i].node == want[i].node);
        CHECK(got[i].pdb_violations == want[i].pdb_violations);
        REQUIRE(got[i].victims.size() == want[i].victims.size());
        for (size_t v = 0; v < want[i].victims.size(); ++v) {
          CHECK(got[i].victims[v].pod->Key() == want[i].victims[v].pod->Key());
        }
      }
      ++compared;
    }
    kept += memo.stats().kept;
  }
  // The memo answered often: the comparisons are not all of fresh dry runs.
  CAPTURE(compared);
  CHECK(kept > 300);
}

TEST_CASE("property: move plans found with the kept movable index equal those found reading every "
          "node, as pods come and go", "[preemption][consolidation]") {
  std::mt19937_64 rng(20261127);
  World w;
  const int nodes = 12;
  for (int i = 0; i < nodes; ++i) w.handle.AddNode(SmallNode(StrCat("n", i)));
  Context ctx = w.Ctx();
  ctx.victim_rule = [](const Pod& p, std::string* reason) {
    if (!p.meta.annotations.contains("movable")) return false;
    *reason = "Consolidation";
    return true;
  };
  preemption::MovableIndex index;
  std::vector<std::string> running;
  int serial = 0, compared = 0, with_plans = 0;
  for (int step = 0; step < 400; ++step) {
    // A change: a pod starts on a node with room, or one ends.
    if (running.empty() || rng() % 3 != 0) {
      const std::string node = StrCat("n", rng() % nodes);
      PodBuilder b(StrCat("p", serial++));
      b.Requests(StrCat("cpu:1,nvidia.com/gpu:", 1 + rng() % 2)).Priority(100).Node(node);
      if (rng() % 4 != 0) b.Annotation("movable", "true");
      Pod p = b.Build();
      const NodeInfo* info = w.handle.snapshot().Get(node);
      if (info->gpus().total_free_milli() < gpu::ReadGpuRequest(p).total_milli()) continue;
      running.push_back(p.Key());
      w.handle.AddPod(std::move(p));
    } else {
      const size_t i = rng() % running.size();
      w.handle.RemovePod(running[i]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
    const Pod pod = PodBuilder("waiting").Requests(StrCat("cpu:1,nvidia.com/gpu:", 2 + rng() % 3)).Priority(100).Build();
    CycleState state = w.PreFiltered(pod);
    FilterOutcome f = w.fw->FindFeasibleNodes(state, pod, w.handle.snapshot().nodes());
    if (!f.feasible.empty()) continue;
    index.Sync(ctx, "rules");
    const std::vector<preemption::MovePlan> kept = preemption::FindMovePlans(ctx, state, pod, f.rejected, {.max_plans = 3}, &index).value();
    const std::vector<preemption::MovePlan> fresh = preemption::FindMovePlans(ctx, state, pod, f.rejected, {.max_plans = 3}).value();
    REQUIRE(kept.size() == fresh.size());
    for (size_t i = 0; i < kept.size(); ++i) {
      CHECK(kept[i].node == fresh[i].node);
      REQUIRE(kept[i].moves.size() == fresh[i].moves.size());
      for (size_t m = 0; m < kept[i].moves.size(); ++m) {
        CHECK(kept[i].moves[m].pod->Key() == fresh[i].moves[m].pod->Key());
      }
    }
    int64_t free = 0;
    for (const NodeInfo* n : w.handle.snapshot().nodes()) free += n->gpus().total_free_milli();
    CHECK(index.free_gpu_milli() == free);
    ++compared;
    with_plans += !kept.empty();
  }
  CHECK(compared > 50);
  CHECK(with_plans > 5);
}

}  // namespace preemption_test
}  // namespace tessel
