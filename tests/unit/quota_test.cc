// Queues and quota: decoding with field errors, pods onto queues, Kueue's borrowing rules as
// seeded properties over generated cohorts, and fair-share ordering. (Whom reclaim evicts is
// the victim policy's: tests/unit/queue_quota_test.cc.)
#include <catch2/catch.hpp>

#include <random>

#include "nlohmann/json.hpp"
#include "absl/time/time.h"
#include "scheduler/testing/builders.h"
#include "scheduler/quota/queue_store.h"
#include "scheduler/quota/quota_tracker.h"
#include "scheduler/quota/quota_usage.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace quota_test {

using nlohmann::json;
using testing::PodBuilder;
using testing::Res;

Queue MakeQueue(std::string name, std::string cohort, std::string_view nominal) {
  Queue q;
  q.meta.name = std::move(name);
  q.cohort = std::move(cohort);
  q.nominal = Res(nominal);
  return q;
}

QueueDirectory Directory(std::vector<Queue> queues) {
  QueueDirectory d;
  REQUIRE(d.Set(std::move(queues)).ok());
  return d;
}

// Puts a Queue object into the store, decoded (the test stops if it does not decode).
absl::Status PutQueue(QueueStore& store, const json& object) {
  absl::StatusOr<Queue> queue = DecodeQueue(object);
  REQUIRE(queue.ok());
  return store.Put(*std::move(queue));
}

TEST_CASE("Queue decodes every field", "[quota]") {
  auto q = DecodeQueue(json::parse(R"({
    "apiVersion": "tessel.io/v1alpha1", "kind": "Queue",
    "metadata": {"name": "team-a"},
    "spec": {"namespaces": ["a1", "a2"], "cohort": "research",
             "nominalQuota": {"nvidia.com/gpu": "20", "cpu": "200"},
             "borrowingLimit": {"nvidia.com/gpu": "10", "cpu": "0"},
             "lendingLimit": {"nvidia.com/gpu": "1.5"},
             "preemption": {"reclaimWithinCohort": "LowerPriority", "withinQueue": "LowerPriority"},
             "weight": "2", "disruption": {"movable": true, "minRunSeconds": 900}}})"));
  REQUIRE(q.ok());
  CHECK(q->name() == "team-a");
  CHECK(q->namespaces == std::vector<std::string>{"a1", "a2"});
  CHECK(q->cohort == "research");
  CHECK(q->nominal == Res("nvidia.com/gpu:20,cpu:200"));
  CHECK(q->borrowing_limit == ResourceLimits{{"nvidia.com/gpu", 10000}, {"cpu", 0}});
  CHECK(q->lending_limit == ResourceLimits{{"nvidia.com/gpu", 1500}});
  CHECK(q->reclaim_within_cohort == ReclaimPolicy::kLowerPriority);
  CHECK(q->within_queue == WithinQueuePolicy::kLowerPriority);
  CHECK(q->weight_milli == 2000);
  CHECK(q->movable == true);
  CHECK(q->min_run_seconds == 900);
  auto unset = DecodeQueue(json::parse(R"({"kind": "Queue", "metadata": {"name": "b"}, "spec": {}})"));
  REQUIRE(unset.ok());
  CHECK_FALSE(unset->movable.has_value());
  CHECK_FALSE(unset->min_run_seconds.has_value());
}

TEST_CASE("Queue decoding errors name the object and the field", "[quota]") {
  struct Case {
    std::string spec;
    std::string want;
  };
  const std::vector<Case> cases = {
      {R"({"nominalQuota": {"nvidia.com/gpu": "many"}})",
       "Queue q: spec.nominalQuota.nvidia.com/gpu: quantity \"many\" is not valid"},
      {R"({"namespaces": ["a", 3]})", "Queue q: spec.namespaces[1]: expected a namespace name"},
      {R"({"cohort": "c", "nominalQuota": {"cpu": "1"}, "lendingLimit": {"cpu": "2"}})",
       "Queue q: spec.lendingLimit.cpu: lends 2 but the nominal quota is 1"},
      {R"({"borrowingLimit": {"cpu": "2"}})",
       "Queue q: spec.borrowingLimit: is only meaningful with spec.cohort"},
      {R"({"preemption": {"reclaimWithinCohort": "Sometimes"}})",
       "Queue q: spec.preemption.reclaimWithinCohort: \"Sometimes\" is not one of Never, "
       "LowerPriority, Any"},
      {R"({"weight": "0"})", "Queue q: spec.weight: must be positive"},
      {R"({"nominalQuota": {"cpu": "-1"}})", "Queue q: spec.nominalQuota.cpu"},
      {R"({"disruption": {"minRunSeconds": -5}})", "Queue q: spec.disruption.minRunSeconds: must not be negative"},
      {R"({"disruption": {"movable": "yes"}})", "Queue q: spec.disruption.movable"},
  };
  for (const Case& c : cases) {
    INFO(c.spec);
    json object = {{"kind", "Queue"}, {"metadata", {{"name", "q"}}}, {"spec", json::parse(c.spec)}};
    auto q = DecodeQueue(object);
    REQUIRE_FALSE(q.ok());
    CHECK_THAT(std::string(q.status().message()), Catch::StartsWith(c.want));
  }
}

Pod LabelledPod(std::string ns, std::string queue) {
  Pod p = testing::PodBuilder("p", std::move(ns)).Build();
  if (!queue.empty()) p.meta.labels[std::string(kQueueLabel)] = std::move(queue);
  return p;
}

std::string QueueOf(const QueueDirectory& d, const Pod& pod) {
  const Queue* q = d.QueueFor(pod).queue;
  return q == nullptr ? "" : q->name();
}

TEST_CASE("pods map to queues by namespace; the label chooses a queue only where it admits the "
          "namespace; a missing labelled queue is named",
          "[quota]") {
  Queue a = MakeQueue("team-a", "", "nvidia.com/gpu:4");
  a.namespaces = {"ns-a"};
  Queue b = MakeQueue("team-b", "", "nvidia.com/gpu:4");
  b.namespaces = {"ns-b"};
  QueueDirectory d = Directory({a, b});
  CHECK(QueueOf(d, LabelledPod("ns-a", "")) == "team-a");
  CHECK(QueueOf(d, LabelledPod("ns-b", "team-b")) == "team-b");  // its own queue, by spec.namespaces

  // A pod of team-a labelled team-b: team-b admits no namespace but ns-b, so the label is
  // refused; the pod stays team-a's (charged there if it runs), and the lookup says why.
  QueueDirectory::Lookup hijack = d.QueueFor(LabelledPod("ns-a", "team-b"));
  CHECK(QueueOf(d, LabelledPod("ns-a", "team-b")) == "team-a");
  CHECK(hijack.missing.empty());
  CHECK(hijack.refused ==
        "the pod's label tessel.io/queue names Queue \"team-b\", which does not admit namespace "
        "\"ns-a\": neither its spec.namespaces nor its spec.namespaceSelector selects it");
  QueueDirectory::Lookup stray = d.QueueFor(LabelledPod("elsewhere", "team-b"));
  CHECK(stray.queue == nullptr);
  CHECK_FALSE(stray.refused.empty());

  Pod typo = LabelledPod("ns-a", "team-typo");
  CHECK(d.QueueFor(typo).queue == nullptr);
  CHECK(d.QueueFor(typo).missing == "team-typo");
  auto free = d.QueueFor(testing::PodBuilder("p", "elsewhere").Build());
  CHECK(free.queue == nullptr);
  CHECK(free.missing.empty());
  CHECK(free.refused.empty());

  Queue clash = MakeQueue("team-c", "", "cpu:1");
  clash.namespaces = {"ns-a"};
  QueueDirectory bad;
  absl::Status st = bad.Set({a, clash});
  CHECK(st.message() ==
        "Queue team-c: spec.namespaces: namespace \"ns-a\" already belongs to the older Queue "
        "team-a; this queue does not get it (its other namespaces stay)");
}

TEST_CASE("spec.namespaceSelector admits namespaces by their labels, as Kueue's", "[quota]") {
  const NamespaceLabelMap namespaces = {{"lab", {{"share", "team-b"}, {"tier", "research"}}},
                                        {"ns-a", {{"tier", "prod"}}}};
  Queue a = MakeQueue("team-a", "", "nvidia.com/gpu:4");
  a.namespaces = {"ns-a"};
  Queue b = MakeQueue("team-b", "", "nvidia.com/gpu:4");
  b.namespaces = {"ns-b"};
  struct Case {
    std::string name;
    std::optional<LabelSelector> selector;
    std::map<std::string, std::string> want;  // namespace of a pod labelled team-b -> its queue
  };
  using Op = LabelSelectorRequirement::Operator;
  const std::vector<Case> cases = {
      {"nil: only spec.namespaces", std::nullopt,
       {{"lab", ""}, {"ns-a", "team-a"}, {"ns-b", "team-b"}, {"unknown", ""}}},
      {"matchLabels", LabelSelector{.match_labels = {{"share", "team-b"}}},
       {{"lab", "team-b"}, {"ns-a", "team-a"}, {"ns-b", "team-b"}, {"unknown", ""}}},
      {"matchExpressions",
       LabelSelector{.match_expressions = {{.key = "tier", .op = Op::kIn, .values = {"research", "prod"}}}},
       {{"lab", "team-b"}, {"ns-a", "team-b"}, {"ns-b", "team-b"}, {"unknown", ""}}},
      {"{}: every namespace, known or not", LabelSelector{},
       {{"lab", "team-b"}, {"ns-a", "team-b"}, {"ns-b", "team-b"}, {"unknown", "team-b"}}},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      b.namespace_selector = c.selector;
      QueueDirectory d;
      REQUIRE(d.Set({a, b}, namespaces).ok());
      for (const auto& [ns, want] : c.want) {
        CAPTURE(ns);
        CHECK(QueueOf(d, LabelledPod(ns, "team-b")) == want);
        CHECK(d.QueueFor(LabelledPod(ns, "team-b")).refused.empty() == (want == "team-b"));
        CHECK(d.Admits("team-b", ns) == (want == "team-b"));
      }
      // The selector admits; it does not claim: unlabelled pods stay with their namespace.
      CHECK(QueueOf(d, LabelledPod("lab", "")) == "");
      CHECK(QueueOf(d, LabelledPod("ns-a", "")) == "team-a");
    }
  }
}

TEST_CASE("Queue decodes spec.namespaceSelector; a bad one is an error naming the field",
          "[quota]") {
  auto q = DecodeQueue(json::parse(R"({"kind": "Queue", "metadata": {"name": "q",
      "creationTimestamp": "2026-03-01T10:00:00Z"},
      "spec": {"namespaceSelector": {"matchLabels": {"team": "a"},
               "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["prod"]}]}}})"));
  REQUIRE(q.ok());
  REQUIRE(q->namespace_selector.has_value());
  CHECK(q->namespace_selector->match_labels == StringMap{{"team", "a"}});
  REQUIRE(q->namespace_selector->match_expressions.size() == 1);
  CHECK(q->meta.creation_timestamp == absl::FromUnixSeconds(1772359200));
  auto empty = DecodeQueue(json::parse(
      R"({"kind": "Queue", "metadata": {"name": "q"}, "spec": {"namespaceSelector": {}}})"));
  REQUIRE(empty.ok());
  CHECK(empty->namespace_selector.has_value());
  CHECK(empty->namespace_selector->empty());
  auto bad = DecodeQueue(json::parse(R"({"kind": "Queue", "metadata": {"name": "q"},
      "spec": {"namespaceSelector": {"matchExpressions": [{"key": "t", "operator": "Near"}]}}})"));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()),
             Catch::StartsWith("Queue q: spec.namespaceSelector.matchExpressions[0].operator: "
                               "unknown operator \"Near\""));
}

json QueueJson(std::string name, std::string created, json namespaces, std::string gpus = "4") {
  return json{{"apiVersion", "tessel.io/v1alpha1"},
              {"kind", "Queue"},
              {"metadata", {{"name", std::move(name)}, {"uid", "uid-" + created},
                            {"creationTimestamp", std::move(created)}}},
              {"spec", {{"namespaces", std::move(namespaces)}, {"nominalQuota", {{"nvidia.com/gpu", gpus}}}}}};
}

TEST_CASE("a newer Queue listing an older queue's namespace does not get it, and the older "
          "queue stays in force",
          "[quota]") {
  // team-b is older; the newcomer sorts before it by name and lists one of team-b's namespaces.
  const json team_b = QueueJson("team-b", "2026-01-01T00:00:00Z", {"b-train", "b-eval"});
  const json newcomer = QueueJson("aaa-newcomer", "2026-06-01T00:00:00Z", {"b-eval", "new"});
  const std::string want =
      "Queue aaa-newcomer: spec.namespaces: namespace \"b-eval\" already belongs to the older "
      "Queue team-b; this queue does not get it (its other namespaces stay)";
  // Either order of arrival (informers list by name, so the newcomer may come first); the
  // error comes with whichever of the two arrives second.
  const bool older_last = GENERATE(false, true);
  CAPTURE(older_last);
  QueueStore store;
  REQUIRE(PutQueue(store, older_last ? newcomer : team_b).ok());
  CHECK(PutQueue(store, older_last ? team_b : newcomer).message() == want);
  std::shared_ptr<const QueueDirectory> d = store.directory();
  CHECK(QueueOf(*d, LabelledPod("b-eval", "")) == "team-b");
  CHECK(QueueOf(*d, LabelledPod("b-train", "")) == "team-b");
  CHECK(QueueOf(*d, LabelledPod("new", "")) == "aaa-newcomer");
  // The contested namespace does not let its pods choose the newcomer either.
  CHECK_FALSE(d->QueueFor(LabelledPod("b-eval", "aaa-newcomer")).refused.empty());
  CHECK(store.Problems() == std::map<std::string, std::string>{{"aaa-newcomer", want}});
  const std::vector<NamespaceConflict> events = store.TakeNewConflicts();
  REQUIRE(events.size() == 1);
  CHECK(events[0] == NamespaceConflict{.namespace_ = "b-eval", .kept_by = "team-b",
                                       .refused = "aaa-newcomer",
                                       .refused_uid = "uid-2026-06-01T00:00:00Z"});
  CHECK(store.TakeNewConflicts().empty());  // once while it lasts

  SECTION("the conflict ends when the older queue goes, and the newcomer gets the namespace") {
    store.Delete("team-b");
    CHECK(QueueOf(*store.directory(), LabelledPod("b-eval", "")) == "aaa-newcomer");
    CHECK(store.Problems().empty());
    CHECK_FALSE(PutQueue(store, team_b).ok());  // back, and still the older one
    CHECK(QueueOf(*store.directory(), LabelledPod("b-eval", "")) == "team-b");
    CHECK(store.TakeNewConflicts().size() == 1);  // handed out again
  }
  SECTION("the same creation time: the first by name keeps it") {
    QueueStore tie;
    REQUIRE(PutQueue(tie, QueueJson("zz", "2026-01-01T00:00:00Z", {"ns"})).ok());
    CHECK_FALSE(PutQueue(tie, QueueJson("yy", "2026-01-01T00:00:00Z", {"ns", "y"})).ok());
    CHECK(QueueOf(*tie.directory(), LabelledPod("ns", "")) == "yy");
    CHECK(QueueOf(*tie.directory(), LabelledPod("y", "")) == "yy");
    CHECK(tie.Problems().count("zz") == 1);
  }
}

TEST_CASE("a Namespace's labels re-evaluate which queues its pods may choose", "[quota]") {
  QueueStore store;
  json shared = QueueJson("team-a", "2026-01-01T00:00:00Z", {"a"});
  shared["spec"]["namespaceSelector"] = {{"matchLabels", {{"share", "team-a"}}}};
  REQUIRE(PutQueue(store, shared).ok());
  const Pod pod = LabelledPod("lab", "team-a");
  CHECK_FALSE(store.directory()->QueueFor(pod).refused.empty());
  CHECK(store.PutNamespace("lab", {{"share", "team-a"}}));  // now admitted: a new directory
  CHECK(store.directory()->QueueFor(pod).refused.empty());
  CHECK(QueueOf(*store.directory(), pod) == "team-a");
  const std::shared_ptr<const QueueDirectory> before = store.directory();
  CHECK_FALSE(store.PutNamespace("lab", {{"share", "team-a"}, {"x", "y"}}));  // same verdict
  CHECK(store.directory() == before);  // the quota plugin keeps its per-node sums
  CHECK(store.PutNamespace("lab", {}));
  CHECK_FALSE(store.directory()->QueueFor(pod).refused.empty());
  CHECK(store.PutNamespace("lab", {{"share", "team-a"}}));
  CHECK(store.DeleteNamespace("lab"));
  CHECK_FALSE(store.directory()->QueueFor(pod).refused.empty());
  // Labels that arrive before the queue count too.
  QueueStore early;
  CHECK_FALSE(early.PutNamespace("lab", {{"share", "team-a"}}));  // no queue selects yet
  REQUIRE(PutQueue(early, shared).ok());
  CHECK(QueueOf(*early.directory(), pod) == "team-a");
}

TEST_CASE("the greedy team is capped at its nominal quota", "[quota]") {
  // The seed's cluster: 40 GPUs, two teams told to use 20 each; team A asks for 30.
  QueueDirectory d = Directory(
      {MakeQueue("team-a", "", "nvidia.com/gpu:20"), MakeQueue("team-b", "", "nvidia.com/gpu:20")});
  QuotaTracker t(&d);
  int admitted = 0;
  for (int i = 0; i < 30; ++i) {
    if (!t.Check("team-a", Res("nvidia.com/gpu:1")).fits) continue;
    t.Add(StrCat("team-a/j", i), "team-a", Res("nvidia.com/gpu:1"));
    ++admitted;
  }
  CHECK(admitted == 20);
  QuotaVerdict v = t.Check("team-a", Res("nvidia.com/gpu:1"));
  CHECK_FALSE(v.fits);
  CHECK(v.reason ==
        "queue team-a: nvidia.com/gpu 21 of nominal 20; it is in no cohort, so it cannot borrow");
  CHECK(t.Check("team-b", Res("nvidia.com/gpu:20")).fits);
  // Resources no queue lists are not limited.
  CHECK(t.Check("team-a", Res("cpu:1000")).fits);
}

TEST_CASE("a nominal quota of 0 is a limit of none, not no limit", "[quota]") {
  auto q = DecodeQueue(json::parse(R"({"kind": "Queue", "metadata": {"name": "zero"},
                                       "spec": {"nominalQuota": {"nvidia.com/gpu": "0"}}})"));
  REQUIRE(q.ok());
  QueueDirectory d = Directory({*q});
  QuotaTracker t(&d);
  QuotaVerdict v = t.Check("zero", Res("nvidia.com/gpu:1"));
  CHECK_FALSE(v.fits);
  CHECK(v.reason == "queue zero: nvidia.com/gpu 1 of nominal 0; it is in no cohort, so it cannot borrow");
  CHECK(t.Check("zero", Res("cpu:4")).fits);  // unlisted: unlimited
}

TEST_CASE("idle quota of the cohort is borrowed, and the refusal says how much is left", "[quota]") {
  Queue a = MakeQueue("team-a", "research", "nvidia.com/gpu:20");
  Queue b = MakeQueue("team-b", "research", "nvidia.com/gpu:20");
  QueueDirectory d = Directory({a, b});
  QuotaTracker t(&d);
  for (int i = 0; i < 8; ++i) {  // team A: 8 jobs of 4 GPUs = 32, borrowing 12 of B's
    QuotaVerdict v = t.Check("team-a", Res("nvidia.com/gpu:4"));
    REQUIRE(v.fits);
    CHECK(v.borrows == (i >= 5));
    t.Add(StrCat("team-a/j", i), "team-a", Res("nvidia.com/gpu:4"));
  }
  CHECK(t.Borrowed("team-a") == Res("nvidia.com/gpu:12"));
  QuotaVerdict v = t.Check("team-a", Res("nvidia.com/gpu:9"));
  CHECK(v.reason == "queue team-a: nvidia.com/gpu 41 of nominal 20; the cohort research has 8 to lend");
  // B, below its nominal, is refused what A borrows of its share (reclaim is the victim policy's).
  CHECK_FALSE(t.Check("team-b", Res("nvidia.com/gpu:16")).fits);
  CHECK(t.Check("team-b", Res("nvidia.com/gpu:8")).fits);
}

// --- Generated properties -------------------------------------------------------------------

// A running pod that holds quota.
struct QuotaWorkload {
  std::string key;
  std::string queue;
  int32_t priority = 0;
  absl::Time start_time = absl::UnixEpoch();
  Resources usage;
};

struct World {
  std::vector<Queue> queues;
  std::vector<QuotaWorkload> running;
};

World RandomWorld(std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  World w;
  const int n = pick(1, 5);
  for (int i = 0; i < n; ++i) {
    Queue q = MakeQueue(StrCat("q", i), pick(0, 3) == 0 ? "" : StrCat("c", pick(0, 1)),
                        StrCat("nvidia.com/gpu:", pick(0, 16), ",cpu:", pick(0, 64)));
    if (!q.cohort.empty() && pick(0, 1)) q.borrowing_limit["nvidia.com/gpu"] = pick(0, 8) * 1000;
    if (!q.cohort.empty() && pick(0, 2) == 0) {
      q.lending_limit["nvidia.com/gpu"] = pick(0, int(q.nominal.Get("nvidia.com/gpu") / 1000)) * 1000;
    }
    q.reclaim_within_cohort = static_cast<ReclaimPolicy>(pick(0, 2));
    q.within_queue = static_cast<WithinQueuePolicy>(pick(0, 1));
    q.weight_milli = pick(1, 4) * 500;
    w.queues.push_back(q);
  }
  return w;
}

// Admits random requests one by one, each only when Check says it fits.
void Fill(std::mt19937_64& rng, const World& world, QuotaTracker& t,
          std::vector<QuotaWorkload>& running) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int i = 0; i < 60; ++i) {
    const Queue& q = world.queues[pick(0, int(world.queues.size()) - 1)];
    // Fractions too: 250-milli steps of a GPU.
    Resources r = Res(StrCat("cpu:", pick(0, 8)));
    r.Set("nvidia.com/gpu", pick(0, 16) * 250);
    if (!t.Check(q.name(), r).fits) continue;
    QuotaWorkload w{.key = StrCat(q.name(), "/w", i), .queue = q.name(), .priority = pick(0, 3),
                    .start_time = absl::FromUnixSeconds(pick(0, 1000)), .usage = r};
    t.Add(w.key, w.queue, w.usage);
    running.push_back(w);
  }
}

TEST_CASE("property: admitted usage never breaks nominal, borrowing and lending limits",
          "[quota][property]") {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    World world = RandomWorld(rng);
    QueueDirectory d = Directory(world.queues);
    QuotaTracker t(&d);
    Fill(rng, world, t, world.running);
    for (const Queue& q : world.queues) {
      for (std::string r : {"nvidia.com/gpu", "cpu"}) {
        const int64_t used = t.Usage(q.name()).Get(r);
        bool governed = false;
        int64_t pool = 0, pool_use = 0;
        for (const Queue& m : world.queues) {
          if (!(&m == &q || (!q.cohort.empty() && m.cohort == q.cohort))) continue;
          governed |= m.nominal.Get(r) > 0 || m.borrowing_limit.contains(r);
          const int64_t lendable =
              m.lending_limit.contains(r) ? m.lending_limit.at(r) : m.nominal.Get(r);
          pool += lendable;
          pool_use += std::max<int64_t>(0, t.Usage(m.name()).Get(r) - (m.nominal.Get(r) - lendable));
        }
        if (!governed) continue;
        if (q.cohort.empty()) CHECK(used <= q.nominal.Get(r));
        if (q.borrowing_limit.contains(r)) {
          CHECK(used <= q.nominal.Get(r) + q.borrowing_limit.at(r));
        }
        if (!q.cohort.empty()) CHECK(pool_use <= pool);
        // What a queue keeps back from lending is always there for it.
        const int64_t guaranteed =
            q.nominal.Get(r) - (q.lending_limit.contains(r) ? q.lending_limit.at(r) : q.nominal.Get(r));
        if (used < guaranteed) {
          Resources rest;
          rest.Set(r, guaranteed - used);
          CHECK(t.Check(q.name(), rest).fits);
        }
      }
    }
  }
}

TEST_CASE("borrowing is ordered by weighted dominant share", "[quota]") {
  Queue a = MakeQueue("a", "c", "nvidia.com/gpu:10,cpu:10");
  Queue b = MakeQueue("b", "c", "nvidia.com/gpu:10,cpu:10");
  Queue idle = MakeQueue("idle", "c", "nvidia.com/gpu:20,cpu:20");
  b.weight_milli = 2000;
  QueueDirectory d = Directory({a, b, idle});
  QuotaTracker t(&d);
  t.Add("a/1", "a", Res("nvidia.com/gpu:14,cpu:10"));  // borrows 4 of 40 GPUs: 100 per mille
  t.Add("b/1", "b", Res("nvidia.com/gpu:14,cpu:16"));  // borrows 6 of 40 CPUs: 150, weight 2
  CHECK(t.WeightedDominantShare("a") == 100);
  CHECK(t.WeightedDominantShare("b") == 75);
  CHECK(t.WeightedDominantShare("idle") == 0);
}

TEST_CASE("fair shares compare exactly, part by part, largest first", "[quota]") {
  // 3,000 GPUs and 30 CPUs in the pool (the idle queue lends them all); a and b borrow.
  Queue a = MakeQueue("a", "lab", "nvidia.com/gpu:0,cpu:0");
  Queue b = MakeQueue("b", "lab", "nvidia.com/gpu:0,cpu:0");
  Queue c = MakeQueue("c", "lab", "nvidia.com/gpu:0,cpu:0");
  Queue idle = MakeQueue("idle", "lab", "nvidia.com/gpu:3000,cpu:30");
  b.weight_milli = 2000;
  QueueDirectory d = Directory({a, b, c, idle});
  const CohortTree& tree = d.tree();
  auto compare = [&](const QuotaTracker& t, std::string_view x, std::string_view y) {
    return FairShare::Compare(t.FairShareOfNode(tree.QueueNode(x)), t.FairShareOfNode(tree.QueueNode(y)));
  };
  QuotaTracker t(&d);
  SECTION("below a per mille, as exactly as above it") {
    t.Add("a/1", "a", Res("nvidia.com/gpu:1"));  // 1/3000: 0 per mille
    t.Add("c/1", "c", Res("nvidia.com/gpu:2"));  // 2/3000: 0 per mille too
    CHECK(t.WeightedDominantShare("a") == t.WeightedDominantShare("c"));
    CHECK(compare(t, "a", "c") < 0);
    CHECK(compare(t, "c", "a") > 0);
  }
  SECTION("equal shares by weight are equal") {
    t.Add("a/1", "a", Res("nvidia.com/gpu:1"));
    t.Add("b/1", "b", Res("nvidia.com/gpu:2"));  // twice a's, at twice its weight
    CHECK(compare(t, "a", "b") == 0);
  }
  SECTION("a tie of dominant shares goes to the next largest part") {
    t.Add("a/1", "a", Res("cpu:12,nvidia.com/gpu:300"));  // 400 and 100 per mille
    t.Add("c/1", "c", Res("cpu:12"));                      // 400
    CHECK(t.WeightedDominantShare("a") == t.WeightedDominantShare("c"));
    CHECK(compare(t, "a", "c") > 0);
    CHECK(compare(t, "c", "c") == 0);
  }
  SECTION("a share above another's whatever the parts below") {
    t.Add("a/1", "a", Res("cpu:13"));                      // 433
    t.Add("c/1", "c", Res("cpu:12,nvidia.com/gpu:1200"));  // 400 and 400
    CHECK(compare(t, "a", "c") > 0);
  }
}

TEST_CASE("what a queue lends: the cohort's borrowing split among the idle lenders", "[quota]") {
  Queue a = MakeQueue("a", "c", "nvidia.com/gpu:10");
  Queue b = MakeQueue("b", "c", "nvidia.com/gpu:10");
  Queue c = MakeQueue("c", "c", "nvidia.com/gpu:20");
  b.lending_limit = {{"nvidia.com/gpu", 2000}};  // lends at most 2 of its 10
  Queue alone = MakeQueue("alone", "", "nvidia.com/gpu:4");
  QueueDirectory d = Directory({a, b, c, alone});
  QuotaTracker t(&d);
  t.Add("a/1", "a", Res("nvidia.com/gpu:15"));  // borrows 5
  t.Add("b/1", "b", Res("nvidia.com/gpu:4"));   // 6 unused, but lends at most 2
  t.Add("c/1", "c", Res("nvidia.com/gpu:14"));  // 6 unused
  // Idle lendable quota: b 2, c 6 (8 in all); the 5 borrowed split 2:6, floored.
  CHECK(t.Lent("a") == Resources());
  CHECK(t.Lent("b").Get(kNvidiaGpu) == 1250);
  CHECK(t.Lent("c").Get(kNvidiaGpu) == 3750);
  CHECK(t.Lent("b").Get(kNvidiaGpu) + t.Lent("c").Get(kNvidiaGpu) == t.Borrowed("a").Get(kNvidiaGpu));
  CHECK(t.Lendable("b").Get(kNvidiaGpu) == 2000);
  CHECK(t.Lendable("c").Get(kNvidiaGpu) == 20000);
  CHECK(t.Lent("alone") == Resources());
  CHECK(t.Lendable("alone") == Resources());
  t.Remove("a/1");  // nobody borrows: nobody lends
  CHECK(t.Lent("c") == Resources());
}

TEST_CASE("queue reports count pending and admitted pods and the oldest wait", "[quota]") {
  Queue a = MakeQueue("a", "c", "nvidia.com/gpu:2");
  a.namespaces = {"team-a"};
  Queue b = MakeQueue("b", "c", "nvidia.com/gpu:2");
  b.namespaces = {"team-b"};
  QueueDirectory d = Directory({a, b});
  Pod p1 = PodBuilder("p1", "team-a").Created(300).Build();
  Pod p2 = PodBuilder("p2", "team-a").Created(100).Build();
  Pod other = PodBuilder("x", "elsewhere").Created(50).Build();
  const QueueUsage usage{{"a", Res("nvidia.com/gpu:3")}};
  const std::vector<QueueReport> r = ReportQueues(d, usage, {&p1, &p2, &other}, {{"a", 3}});
  REQUIRE(r.size() == 2);
  CHECK(r[0].name == "a");
  CHECK(r[0].pending_pods == 2);
  CHECK(r[0].admitted_pods == 3);
  CHECK(r[0].oldest_pending == absl::FromUnixSeconds(100));
  CHECK(r[0].borrowed.Get(kNvidiaGpu) == 1000);
  CHECK(r[1].lent.Get(kNvidiaGpu) == 1000);
  CHECK(r[1].pending_pods == 0);
  CHECK_FALSE(r[1].oldest_pending.has_value());
}

}  // namespace quota_test
}  // namespace tessel
