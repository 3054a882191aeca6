// The trace's yardstick for fairness over time (bench/trace/entitlement.h, shares.h): weighted
// water-filling on hand-made trees, worked out by hand, and the share statistics over samples.
#include <catch2/catch.hpp>

#include "bench/trace/entitlement.h"
#include "bench/trace/shares.h"
#include "nlohmann/json.hpp"

namespace tessel::bench {
namespace entitlement_test {

QuotaTreeNode Cohort(const std::string& name, const std::string& parent = "", int64_t gpus = 0, int64_t weight_milli = 1000) {
  return {.name = name, .parent = parent, .nominal_milli = gpus * 1000, .weight_milli = weight_milli};
}

QuotaTreeNode Team(const std::string& name, const std::string& parent, int64_t gpus, int64_t weight_milli = 1000,
                   std::optional<int64_t> borrowing_gpus = std::nullopt) {
  QuotaTreeNode n{.name = name, .parent = parent, .queue = true, .nominal_milli = gpus * 1000, .weight_milli = weight_milli};
  if (borrowing_gpus) n.borrowing_limit_milli = *borrowing_gpus * 1000;
  return n;
}

TEST_CASE("entitlement: one level of water-filling", "[entitlement]") {
  struct Case {
    std::string name;
    std::vector<WaterFillChild> children;
    int64_t capacity;
    std::vector<int64_t> want;
  };
  const std::vector<Case> cases = {
      {"everyone's demand fits: each gets its cap", {{"a", 4000, 1000, 6000}, {"b", 4000, 1000, 1000}}, 8000, {6000, 1000}},
      {"equal weights borrow equally beyond their quotas",
       {{"a", 4000, 1000, 100000}, {"b", 2000, 1000, 100000}}, 12000, {7000, 5000}},
      {"weight 2 borrows twice weight 1", {{"a", 0, 2000, 100000}, {"b", 0, 1000, 100000}}, 12000, {8000, 4000}},
      {"a cap stops a child; the others share the rest", {{"a", 2000, 1000, 3000}, {"b", 2000, 1000, 100000}}, 8000,
       {3000, 5000}},
      {"each gets at least min(demand, quota) whatever the weights",
       {{"a", 6000, 1000, 5000}, {"b", 0, 9000, 100000}}, 8000, {5000, 3000}},
      {"rounding: the leftover milli-GPU goes by name to whom the next step raises",
       {{"b", 0, 1000, 100000}, {"a", 0, 1000, 100000}, {"c", 0, 1000, 100000}}, 1000, {333, 334, 333}},
      {"less than the quotas: the floors are cut in proportion",
       {{"a", 8000, 3000, 100000}, {"b", 8000, 1000, 100000}, {"c", 8000, 1000, 4000}}, 10000, {4000, 4000, 2000}},
      {"no capacity", {{"a", 4000, 1000, 6000}}, 0, {0}},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const std::vector<int64_t> got = WaterFill(c.children, c.capacity);
      CHECK(got == c.want);
      int64_t total = 0, caps = 0;
      for (size_t k = 0; k < got.size(); ++k) {
        CHECK(got[k] <= c.children[k].cap_milli);
        total += got[k];
        caps += c.children[k].cap_milli;
      }
      CHECK(total == std::min(c.capacity, caps));  // nothing is lost to rounding
    }
  }
}

TEST_CASE("entitlement: down a tree of cohorts, by hand", "[entitlement]") {
  // org (own 4) -> dept-x (weight 2) -> q1 (nominal 4), q2 (nominal 0); org -> dept-y -> q3 (4).
  const std::vector<QuotaTreeNode> tree = {Cohort("org", "", 4),       Cohort("dept-x", "org", 0, 2000),
                                           Cohort("dept-y", "org"),    Team("q1", "dept-x", 4),
                                           Team("q2", "dept-x", 0),    Team("q3", "dept-y", 4)};
  SECTION("everyone hungry: the departments borrow org's 4 GPUs 2:1, then each team its department's") {
    const auto e = Entitlements(tree, {{"q1", 100000}, {"q2", 100000}, {"q3", 100000}}, 12000);
    // At org: dept-x 4 + 2L, dept-y 4 + L over 12 GPUs: L = 1.333, so 6.666 and 5.333, the
    // leftover milli-GPU to dept-x. In dept-x: q1 4 + L, q2 L over 6.667: 5.334 and 1.333.
    CHECK(e.at("org") == 12000);
    CHECK(e.at("dept-x") == 6667);
    CHECK(e.at("dept-y") == 5333);
    CHECK(e.at("q1") == 5334);
    CHECK(e.at("q2") == 1333);
    CHECK(e.at("q3") == 5333);
  }
  SECTION("a team without demand gets nothing and its department's share goes to the others") {
    const auto e = Entitlements(tree, {{"q1", 100000}, {"q3", 100000}}, 12000);
    CHECK(e.at("q2") == 0);
    CHECK(e.at("q1") == e.at("dept-x"));
    CHECK(e.at("dept-x") + e.at("dept-y") == 12000);
  }
  SECTION("demand below quota is entitled in full; the rest goes to the hungry") {
    const auto e = Entitlements(tree, {{"q1", 2000}, {"q3", 100000}}, 12000);
    CHECK(e.at("q1") == 2000);
    CHECK(e.at("q3") == 10000);
  }
  SECTION("the cluster caps the root; a smaller cluster than the quotas cuts the floors in proportion") {
    const auto e = Entitlements(tree, {{"q1", 100000}, {"q3", 100000}}, 4000);
    CHECK(e.at("dept-x") == 2000);
    CHECK(e.at("dept-y") == 2000);
  }
  SECTION("the root never borrows beyond its tree's quota, however large the cluster") {
    const auto e = Entitlements(tree, {{"q1", 100000}, {"q2", 100000}, {"q3", 100000}}, 1000000);
    CHECK(e.at("org") == 12000);
  }
}

TEST_CASE("entitlement: limits, queues in no cohort, implicit and broken trees", "[entitlement]") {
  SECTION("a borrowing limit caps a queue; its sibling takes the rest") {
    const auto e = Entitlements({Cohort("lab", "", 4), Team("a", "lab", 2, 1000, 1), Team("b", "lab", 2)},
                                {{"a", 10000}, {"b", 10000}}, 100000);
    CHECK(e.at("a") == 3000);
    CHECK(e.at("b") == 5000);
  }
  SECTION("a queue in no cohort is entitled to its nominal quota at most") {
    const auto e = Entitlements({Team("solo", "", 4)}, {{"solo", 10000}}, 100000);
    CHECK(e.at("solo") == 4000);
  }
  SECTION("a cohort only Queues name is a root without quota of its own") {
    const auto e = Entitlements({Team("a", "lab", 4), Team("b", "lab", 4)}, {{"a", 1000}, {"b", 10000}}, 100000);
    CHECK(e.at("lab") == 8000);
    CHECK(e.at("a") == 1000);
    CHECK(e.at("b") == 7000);
  }
  SECTION("entitlement.h's example: a queue borrows its cohort's own quota, not the cluster beyond the tree") {
    const auto e = Entitlements({Cohort("org", "", 4), Team("a", "org", 4)}, {{"a", 6000}}, 16000);
    CHECK(e.at("a") == 6000);
    CHECK(e.at("org") == 6000);
    CHECK(Entitlements({Cohort("org", "", 4), Team("a", "org", 4)}, {{"a", 60000}}, 16000).at("a") == 8000);
  }
  SECTION("a cycle of parents entitles nobody below it") {
    const auto e = Entitlements({Cohort("x", "y"), Cohort("y", "x"), Team("a", "x", 4)}, {{"a", 1000}}, 100000);
    CHECK(e.at("a") == 0);
  }
}

Sample At(int64_t at, int64_t usage, int64_t demand, int64_t entitlement) {
  Sample s{.at = at};
  s.shares["team"] = {.usage_milli = usage, .demand_milli = demand, .entitlement_milli = entitlement};
  return s;
}

TEST_CASE("shares: deviations, stretches and the time to share over samples", "[entitlement]") {
  TimelineResult r;
  r.quota_tree = {Team("team", "lab", 8)};
  // The team arrives at 100 (its first job), waits, holds 4 of 8 at 200, 8 at 300 (at its share),
  // 12 at 400 (more than 10 % above), 8 again at 500; no demand from 600.
  r.samples = {At(0, 0, 0, 0),          At(100, 0, 8000, 8000),   At(200, 4000, 8000, 8000),
               At(300, 8000, 8000, 8000), At(400, 12000, 12000, 8000), At(500, 8000, 8000, 8000),
               At(600, 0, 0, 0),        At(700, 0, 0, 0)};
  JobOutcome job{.id = "j", .queue = "team", .arrive = 100};
  job.pods_evicted = 2;
  r.jobs = {job};
  const std::vector<ShareStats> stats = ShareStatsOf(r);
  REQUIRE(stats.size() == 2);  // the team, then its implicit cohort
  const ShareStats& t = stats[0];
  CHECK(t.name == "team");
  CHECK(t.queue);
  CHECK(t.depth == 1);
  CHECK(t.step_s == 100);
  CHECK(t.demand_s == 500);
  // |held - entitled| x 100 s: 8 + 4 + 0 + 4 + 0 GPU over 500 s; over 40 entitled GPU x 100 s.
  CHECK(t.mean_abs_dev_milli == 16000 * 100 / 500);
  CHECK(t.mean_abs_dev_per_mille == 16000 * 1000 / 40000);
  CHECK(t.longest_off_s == 200);    // 100 to 300
  CHECK(t.longest_below_s == 200);  // the same stretch; 400 is above, not below
  CHECK(t.first_demand_s == 100);
  CHECK(t.time_to_share_s == 200);  // at least 90 % of its share from 300
  CHECK(t.evictions == 2);
  CHECK(stats[1].name == "lab");
  CHECK_FALSE(stats[1].queue);
  CHECK(stats[1].evictions == 2);

  const nlohmann::json summary = SummarizeShares({.policy = "p", .seeds = {1}, .runs = {r}});
  CHECK(summary["team"]["longest_off_10pct_s"] == 200);
  CHECK(summary["team"]["time_to_share_s"] == 200);
  CHECK(summary["team"]["kind"] == "queue");
  CHECK(summary["team"]["mean_abs_dev_pct"].get<double>() == Approx(40.0));
}

TEST_CASE("shares: a stretch below is owed only while a waiting job would run within the entitlement",
          "[entitlement]") {
  TimelineResult r;
  r.quota_tree = {Team("team", "", 8)};
  auto at = [](int64_t t, int64_t usage, int64_t entitled, int64_t smallest) {
    Sample s = At(t, usage, usage + smallest, entitled);
    s.shares["team"].smallest_waiting_milli = smallest;
    return s;
  };
  // 0-200: 12 of 13.4 entitled, a 2-GPU job waiting: below by more than 10 %, but the job would
  // take it to 14 (the jobs' size, not a wait). 200-500: 8 held, the 2-GPU job would fit: owed.
  // 500: 12 held with a 1-GPU job waiting: owed again (13 <= 13.4); 600: it runs.
  r.samples = {at(0, 12000, 13400, 2000), at(100, 12000, 13400, 2000), at(200, 8000, 13400, 2000),
               at(300, 8000, 13400, 2000), at(400, 8000, 13400, 2000), at(500, 12000, 13400, 1000),
               at(600, 13000, 13400, 0),   at(700, 13000, 13400, 0)};
  r.jobs = {JobOutcome{.id = "j", .queue = "team", .arrive = 0}};
  const ShareStats t = ShareStatsOf(r).front();
  CHECK(t.longest_below_s == 600);  // 0 to 600
  CHECK(t.longest_owed_s == 400);   // 200 to 600
  // Room owed (the others' pods could give it) from 300 to 500 only.
  for (Sample& s : r.samples) s.shares["team"].room_owed = s.at >= 300 && s.at < 500;
  const ShareStats room = ShareStatsOf(r).front();
  CHECK(room.longest_room_owed_s == 200);
  const nlohmann::json summary = SummarizeShares({.policy = "p", .seeds = {1}, .runs = {r}});
  CHECK(summary["team"]["longest_waiting_job_fits_s"] == 400);
  CHECK(summary["team"]["longest_room_owed_s"] == 200);
}

TEST_CASE("shares: a queue that never gets its share has no time to share", "[entitlement]") {
  TimelineResult r;
  r.quota_tree = {Team("team", "", 8)};
  r.samples = {At(0, 0, 8000, 8000), At(100, 4000, 8000, 8000), At(200, 4000, 8000, 8000)};
  r.jobs = {JobOutcome{.id = "j", .queue = "team", .arrive = 0}};
  const ShareStats t = ShareStatsOf(r).front();
  CHECK(t.time_to_share_s == -1);
  CHECK(t.longest_below_s == 200);  // to the last sample: still below
}

}  // namespace entitlement_test
}  // namespace tessel::bench
