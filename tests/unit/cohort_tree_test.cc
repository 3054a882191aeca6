// Cohorts as a tree (scheduler/quota/cohort.h): decoding with field errors, the quota flowing
// down Kueue's hierarchical cohorts (worked examples), bad trees failing closed, and a seeded
// property over generated 2-3 level trees whose verdicts an independent checker recomputes
// from the objects alone: a request fits exactly when, after it, no limit on any path breaks.
#include <catch2/catch.hpp>

#include <functional>
#include <optional>
#include <random>

#include "nlohmann/json.hpp"
#include "quota_tree_model.h"
#include "scheduler/quota/queue_store.h"
#include "scheduler/quota/quota_tracker.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace cohort_tree_test {

using nlohmann::json;
using testing::PodBuilder;
using testing::Res;

constexpr std::string_view kGpu = "nvidia.com/gpu";

Cohort MustCohort(const json& object) {
  absl::StatusOr<Cohort> c = DecodeCohort(object);
  INFO(c.status().message());
  REQUIRE(c.ok());
  return *std::move(c);
}

Queue MustQueue(const json& object) {
  absl::StatusOr<Queue> q = DecodeQueue(object);
  INFO(q.status().message());
  REQUIRE(q.ok());
  return *std::move(q);
}

json CohortJson(std::string_view name, std::string_view parent, json spec = json::object()) {
  if (!parent.empty()) spec["parent"] = parent;
  return {{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Cohort"}, {"metadata", {{"name", name}}}, {"spec", spec}};
}

json QueueJson(std::string_view name, std::string_view cohort, json spec) {
  spec["namespaces"] = json::array({name});
  if (!cohort.empty()) spec["cohort"] = cohort;
  return {{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"}, {"metadata", {{"name", name}}}, {"spec", spec}};
}

json Gpus(int64_t n) { return {{std::string(kGpu), std::to_string(n)}}; }

Resources GpuRequest(int64_t n) { return Res(StrCat("nvidia.com/gpu:", n)); }

TEST_CASE("Cohort decodes its parent, quotas, limits and weight", "[quota][cohort]") {
  Cohort c = MustCohort(CohortJson("dept-a", "org",
                                   {{"nominalQuota", Gpus(4)},
                                    {"borrowingLimit", Gpus(2)},
                                    {"lendingLimit", Gpus(6)},
                                    {"weight", "3"}}));
  CHECK(c.name() == "dept-a");
  CHECK(c.parent == "org");
  CHECK(c.nominal == GpuRequest(4));
  CHECK(c.borrowing_limit == ResourceLimits{{std::string(kGpu), 2000}});
  // A cohort may lend more than its own quota: it lends from its whole subtree.
  CHECK(c.lending_limit == ResourceLimits{{std::string(kGpu), 6000}});
  CHECK(c.weight_milli == 3000);

  Cohort bare = MustCohort(json{{"kind", "Cohort"}, {"metadata", {{"name", "org"}}}});
  CHECK(bare.parent.empty());
  CHECK(bare.nominal.IsZero());
}

TEST_CASE("Cohort decoding errors name the object and the field", "[quota][cohort]") {
  auto error = [](const json& object) {
    absl::StatusOr<Cohort> c = DecodeCohort(object);
    REQUIRE_FALSE(c.ok());
    return std::string(c.status().message());
  };
  CHECK(error(CohortJson("a", "a")) == "Cohort a: spec.parent: names the cohort itself");
  CHECK(error(CohortJson("org", "", {{"borrowingLimit", Gpus(1)}})) ==
        "Cohort org: spec.borrowingLimit: is only meaningful with spec.parent");
  CHECK(error(CohortJson("org", "", {{"lendingLimit", Gpus(1)}})) ==
        "Cohort org: spec.lendingLimit: is only meaningful with spec.parent");
  CHECK(error(CohortJson("d", "org", {{"nominalQuota", {{"nvidia.com/gpu", "-1"}}}})).starts_with(
      "Cohort d: spec.nominalQuota"));
  CHECK(error(CohortJson("d", "org", {{"weight", "0"}})) == "Cohort d: spec.weight: must be positive");
  CHECK(error(CohortJson("d", "org",
                         {{"nominalQuota", Gpus(1)},
                          {"resourceGroups",
                           json::array({{{"coveredResources", {"nvidia.com/gpu"}},
                                         {"flavors", json::array({{{"name", "spot"},
                                                                   {"resources", json::array({{{"name", "nvidia.com/gpu"},
                                                                                               {"nominalQuota", "2"}}})}}})}}})}})) ==
        "Cohort d: spec.nominalQuota: a Cohort has either flat quotas or spec.resourceGroups, not both");
}

// org (no quota) <- dept-a (own 4) <- a1 (2), a2 (2); org <- dept-b <- b1 (6).
struct OrgTree {
  std::vector<Queue> queues;
  std::vector<Cohort> cohorts;
  QueueDirectory dir;
  explicit OrgTree(json dept_a_spec = json::object(), json b1_spec = json::object()) {
    dept_a_spec["nominalQuota"] = Gpus(4);
    b1_spec["nominalQuota"] = Gpus(6);
    cohorts = {MustCohort(CohortJson("org", "")), MustCohort(CohortJson("dept-a", "org", dept_a_spec)),
               MustCohort(CohortJson("dept-b", "org"))};
    queues = {MustQueue(QueueJson("a1", "dept-a", {{"nominalQuota", Gpus(2)}})),
              MustQueue(QueueJson("a2", "dept-a", {{"nominalQuota", Gpus(2)}})),
              MustQueue(QueueJson("b1", "dept-b", b1_spec))};
    REQUIRE(dir.Set(queues, {}, {}, {}, CohortObjects{.cohorts = cohorts}).ok());
  }
  int64_t AvailableGpus(const QuotaTracker& t, std::string_view queue) const {
    return t.Available(dir.tree().QueueNode(queue), kGpu) / 1000;
  }
};

TEST_CASE("quota flows down the tree: a subtree uses its own quota, then its ancestors' pools",
          "[quota][cohort]") {
  SECTION("no limits: every queue may take the whole organisation's 14 GPUs") {
    OrgTree org;
    QuotaTracker t(&org.dir);
    CHECK(org.AvailableGpus(t, "a1") == 14);
    CHECK(org.AvailableGpus(t, "b1") == 14);
    t.AddUsage("a1", GpuRequest(9));
    // a1 took its 2, dept-a's own 4, a2's 2 and 1 of b1's 6.
    CHECK(org.AvailableGpus(t, "b1") == 5);
    CHECK(org.AvailableGpus(t, "a2") == 5);
    CHECK(t.Check("b1", GpuRequest(5)).fits);
    QuotaVerdict v = t.Check("b1", GpuRequest(6));
    CHECK_FALSE(v.fits);
    CHECK(v.reason == "queue b1: nvidia.com/gpu 6 of nominal 6; other queues of the cohort org borrow 1 of its quota");
    CHECK(t.Borrowed("a1") == GpuRequest(7));
    const int dept_a = org.dir.tree().CohortNode("dept-a");
    CHECK(t.BorrowedOfNode(dept_a) == GpuRequest(1));  // beyond dept-a's 8
    CHECK(t.SubtreeUsage(dept_a) == GpuRequest(9));
  }
  SECTION("a cohort's borrowing limit caps its whole subtree") {
    OrgTree org(json{{"borrowingLimit", Gpus(1)}});
    QuotaTracker t(&org.dir);
    CHECK(org.AvailableGpus(t, "a1") == 9);  // dept-a's 8 + 1
    t.AddUsage("a2", GpuRequest(8));
    CHECK(org.AvailableGpus(t, "a1") == 1);
    QuotaVerdict v = t.Check("a1", GpuRequest(2));
    CHECK_FALSE(v.fits);
    CHECK(v.reason == "queue a1: nvidia.com/gpu 2 of nominal 2; the cohort dept-a may borrow at most 1 beyond "
                      "its own quota, and does");
    CHECK(org.AvailableGpus(t, "b1") == 6);  // b1 keeps its own
  }
  SECTION("a lending limit keeps the rest of a queue's quota for itself") {
    OrgTree org(json::object(), json{{"lendingLimit", Gpus(2)}});
    QuotaTracker t(&org.dir);
    CHECK(org.AvailableGpus(t, "a1") == 10);  // dept-a's 8 + b1's 2 lent
    CHECK(org.AvailableGpus(t, "b1") == 14);  // its guaranteed 4, then the pool's 10
    t.AddUsage("a1", GpuRequest(10));
    CHECK(org.AvailableGpus(t, "b1") == 4);
    CHECK(t.Check("b1", GpuRequest(4)).fits);
    CHECK_FALSE(t.Check("b1", GpuRequest(5)).fits);
  }
}

TEST_CASE("flat cohorts named by Queues alone keep their old rules", "[quota][cohort]") {
  QueueDirectory dir;
  REQUIRE(dir.Set({MustQueue(QueueJson("a", "research", {{"nominalQuota", Gpus(4)}})),
                   MustQueue(QueueJson("b", "research", {{"nominalQuota", Gpus(4)}, {"lendingLimit", Gpus(1)}})),
                   MustQueue(QueueJson("solo", "", {{"nominalQuota", Gpus(2)}}))})
              .ok());
  QuotaTracker t(&dir);
  CHECK(t.Check("a", GpuRequest(5)).fits);
  CHECK(t.Check("a", GpuRequest(5)).borrows);
  QuotaVerdict v = t.Check("a", GpuRequest(6));
  CHECK_FALSE(v.fits);
  CHECK(v.reason == "queue a: nvidia.com/gpu 6 of nominal 4; the cohort research has 1 to lend");
  QuotaVerdict solo = t.Check("solo", GpuRequest(3));
  CHECK(solo.reason == "queue solo: nvidia.com/gpu 3 of nominal 2; it is in no cohort, so it cannot borrow");
  CHECK(dir.tree().Problems().empty());
}

TEST_CASE("a bad tree fails closed: the queues below a cycle or an undecodable cohort hold their pods",
          "[quota][cohort]") {
  QueueStore store;
  REQUIRE(store.Put(MustQueue(QueueJson("team-a", "dept-a", {{"nominalQuota", Gpus(2)}}))).ok());
  REQUIRE(store.Put(MustQueue(QueueJson("team-z", "", {{"nominalQuota", Gpus(2)}}))).ok());
  const Pod a = PodBuilder("p", "team-a").Build();
  const Pod z = PodBuilder("p", "team-z").Build();
  CHECK(store.directory()->QueueFor(a).refused.empty());

  store.PutCohort(MustCohort(CohortJson("dept-a", "org")));
  store.PutCohort(MustCohort(CohortJson("org", "dept-a")));
  QueueDirectory::Lookup held = store.directory()->QueueFor(a);
  REQUIRE(held.queue != nullptr);
  CHECK(held.refused == "Cohort dept-a: spec.parent: the cohorts' parents form a cycle (dept-a -> org -> dept-a); "
                        "Queue team-a is below it, so its pods wait until the cohort tree is fixed");
  CHECK(store.directory()->QueueFor(z).refused.empty());  // other trees are unaffected
  std::map<std::string, std::string> problems = store.CohortProblems();
  CHECK(problems.size() == 2);
  CHECK(problems.contains("org"));

  store.DeleteCohort("org");  // the cycle is gone: org is a name only, a root with no quota
  CHECK(store.directory()->QueueFor(a).refused.empty());
  CHECK(store.CohortProblems().empty());

  // A cohort that never decoded holds its queues; one with a good version keeps it.
  store.DeleteCohort("dept-a");
  absl::Status st = store.PutUndecodableCohort("dept-a", absl::InvalidArgumentError("Cohort dept-a: spec.weight: must be positive"));
  CHECK(st.message() == "Cohort dept-a: spec.weight: must be positive; the queues below it hold their pods until it decodes");
  CHECK(store.directory()->QueueFor(a).refused ==
        "Cohort dept-a: spec.weight: must be positive; the Cohort does not decode; Queue team-a is below it, so its "
        "pods wait until the cohort tree is fixed");
  store.PutCohort(MustCohort(CohortJson("dept-a", "")));
  CHECK(store.directory()->QueueFor(a).refused.empty());
  st = store.PutUndecodableCohort("dept-a", absl::InvalidArgumentError("Cohort dept-a: spec.weight: must be positive"));
  CHECK(std::string(st.message()).ends_with("its last valid version stays in force"));
  CHECK(store.directory()->QueueFor(a).refused.empty());
  CHECK(store.CohortProblems().contains("dept-a"));
}

// ---- The property: generated trees, verdicts against an independent checker -----------------

// The checker's own reading of the objects (quota_tree_model.h): no CohortTree, no QuotaTracker.
using Model = testing::QuotaTreeModel;

TEST_CASE("property: over generated 2-3 level trees, a request fits exactly when no limit on any "
          "path breaks",
          "[quota][cohort]") {
  for (uint32_t seed = 1; seed <= 150; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    Model model;
    std::vector<Cohort> cohorts;
    std::vector<Queue> queues;
    auto limits = [&](json& spec, Model::Node& n, bool may) {
      if (!may) return;
      if (pick(0, 2) == 0) {
        n.borrowing_limit = pick(0, 4);
        spec["borrowingLimit"] = Gpus(*n.borrowing_limit);
      }
      if (pick(0, 2) == 0) {
        n.lending_limit = pick(0, n.queue ? static_cast<int>(n.nominal) : 6);
        spec["lendingLimit"] = Gpus(*n.lending_limit);
      }
    };
    // Roots, departments below some roots, queues below any cohort (or none).
    std::vector<std::string> cohort_names;
    const int roots = pick(1, 2);
    for (int r = 0; r < roots; ++r) {
      Model::Node n{.name = StrCat("root", r), .nominal = pick(0, 1) * pick(0, 4)};
      json spec = {{"nominalQuota", Gpus(n.nominal)}};
      cohorts.push_back(MustCohort(CohortJson(n.name, "", spec)));
      model.nodes.push_back(n);
      cohort_names.push_back(n.name);
      for (int d = pick(0, 2); d > 0; --d) {
        Model::Node dept{.name = StrCat("dept", r, "-", d), .parent = n.name, .nominal = pick(0, 3)};
        json dspec = {{"nominalQuota", Gpus(dept.nominal)}};
        limits(dspec, dept, true);
        cohorts.push_back(MustCohort(CohortJson(dept.name, n.name, dspec)));
        model.nodes.push_back(dept);
        cohort_names.push_back(dept.name);
      }
    }
    const int nqueues = pick(2, 5);
    for (int i = 0; i < nqueues; ++i) {
      const std::string parent = pick(0, 5) == 0 ? "" : cohort_names[pick(0, static_cast<int>(cohort_names.size()) - 1)];
      Model::Node q{.name = StrCat("q", i), .queue = true, .parent = parent, .nominal = pick(0, 5)};
      json spec = {{"nominalQuota", Gpus(q.nominal)}};
      limits(spec, q, !parent.empty());
      queues.push_back(MustQueue(QueueJson(q.name, parent, spec)));
      model.nodes.push_back(q);
    }
    QueueDirectory dir;
    REQUIRE(dir.Set(queues, {}, {}, {}, CohortObjects{.cohorts = cohorts}).ok());
    QuotaTracker tracker(&dir);
    for (int step = 0; step < 40; ++step) {
      const std::string q = StrCat("q", pick(0, nqueues - 1));
      const int64_t asked = pick(1, 4);
      INFO("seed " << seed << " step " << step << " queue " << q << " asks " << asked);
      const QuotaVerdict v = tracker.Check(q, GpuRequest(asked));
      Model after = model;
      after.usage[q] += asked;
      CHECK(v.fits == after.Holds());
      CHECK(tracker.Available(dir.tree().QueueNode(q), kGpu) / 1000 >= (v.fits ? asked : 0));
      if (v.fits) {
        tracker.AddUsage(q, GpuRequest(asked));
        model = after;
      } else if (pick(0, 1) == 0) {  // something finishes
        const std::string done = StrCat("q", pick(0, nqueues - 1));
        const int64_t back = std::min<int64_t>(model.usage[done], pick(1, 3));
        tracker.SubUsage(done, GpuRequest(back));
        model.usage[done] -= back;
      }
      REQUIRE(model.Holds());
    }
  }
}

}  // namespace cohort_tree_test
}  // namespace tessel
