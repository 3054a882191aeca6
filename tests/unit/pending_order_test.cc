// The order of pending pods across team queues (plugins/queue_quota/pending_order.h): among the
// queues' heads, one its queue holds within its nominal quota goes first, then the higher
// priority, then the queue with the lower weighted share, then the QueueSort order.
#include <catch2/catch.hpp>

#include "nlohmann/json.hpp"
#include "plugins/queue_quota/pending_order.h"
#include "scheduler/quota/cohort.h"
#include "scheduler/quota/quota_tracker.h"
#include "scheduler/testing/builders.h"

namespace tessel::queue_quota {
namespace pending_order_test {

using nlohmann::json;
using testing::PodBuilder;
using testing::Res;

Queue MustQueue(std::string_view name, json spec) {
  spec["namespaces"] = json::array({name});
  absl::StatusOr<Queue> q = DecodeQueue(
      {{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"}, {"metadata", {{"name", name}}}, {"spec", spec}});
  INFO(q.status().message());
  REQUIRE(q.ok());
  return *std::move(q);
}

json Gpus(int64_t n) { return {{"nvidia.com/gpu", std::to_string(n)}}; }

// `gpus` whole GPUs under the quota key `key` (flavored or not), in milli-GPU.
Resources GpuMilli(int64_t gpus, std::string_view key = "nvidia.com/gpu") {
  Resources r;
  r.Set(key, gpus * 1000);
  return r;
}

QueuedPodInfo Head(std::string_view ns, int32_t priority, std::string_view gpus = "1") {
  return {.pod = std::make_shared<const Pod>(
              PodBuilder("p", std::string(ns)).Priority(priority).Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus)).Build())};
}

size_t Choose(const std::vector<QueuedPodInfo>& heads, const QueueDirectory& dir, const QuotaTracker& usage) {
  std::vector<const QueuedPodInfo*> ptrs;
  for (const QueuedPodInfo& h : heads) ptrs.push_back(&h);
  return ChooseNextPending(ptrs, dir, usage);
}

TEST_CASE("pending order: within nominal quota first, then priority, then the lower share", "[quota][queue]") {
  // a and b share the cohort c (4 GPUs each); w borrows with weight 2.
  QueueDirectory dir;
  REQUIRE(dir.Set({MustQueue("a", {{"cohort", "c"}, {"nominalQuota", Gpus(4)}}),
                   MustQueue("b", {{"cohort", "c"}, {"nominalQuota", Gpus(4)}}),
                   MustQueue("w", {{"cohort", "c"}, {"nominalQuota", Gpus(4)}, {"weight", "2"}})})
              .ok());
  QuotaTracker usage(&dir);
  usage.AddUsage("a", GpuMilli(4));  // a is at its nominal quota: its next pod borrows

  SECTION("a pod its queue holds within nominal quota goes before an older, higher-priority borrower") {
    CHECK(Choose({Head("a", 100), Head("b", 0)}, dir, usage) == 1);
  }
  SECTION("both within nominal quota: the higher priority, then the QueueSort order") {
    CHECK(Choose({Head("b", 0), Head("w", 5)}, dir, usage) == 1);
    CHECK(Choose({Head("b", 0), Head("w", 0)}, dir, usage) == 0);
  }
  SECTION("both borrow at one priority: the queue with the lower weighted share first") {
    usage.AddUsage("b", GpuMilli(5));  // borrows 1
    usage.AddUsage("w", GpuMilli(6));  // borrows 2 at weight 2: the same share as b's 1
    usage.AddUsage("a", GpuMilli(2));  // borrows 2 at weight 1
    CHECK(usage.WeightedDominantShare("a") > usage.WeightedDominantShare("b"));
    CHECK(usage.WeightedDominantShare("w") == usage.WeightedDominantShare("b"));
    CHECK(Choose({Head("a", 0), Head("b", 0)}, dir, usage) == 1);
    CHECK(Choose({Head("w", 0), Head("b", 0)}, dir, usage) == 0);  // tied: the QueueSort order
  }
  SECTION("with usage decay, the share now decides and the decayed share breaks its ties") {
    usage.AddUsage("a", GpuMilli(1));  // a and b borrow 1 each now: tied, b first by the order
    usage.AddUsage("b", GpuMilli(5));
    CHECK(Choose({Head("b", 0), Head("a", 0)}, dir, usage) == 0);
    QuotaTracker decayed(&dir);
    decayed.AddUsage("b", GpuMilli(8));  // b borrowed 4 over the half-lives past, a nothing
    std::vector<QueuedPodInfo> heads = {Head("b", 0), Head("a", 0)};
    std::vector<const QueuedPodInfo*> ptrs = {&heads[0], &heads[1]};
    CHECK(ChooseNextPending(ptrs, dir, usage, &decayed) == 1);
    // b now borrows 2 and a 1: a goes first, whatever b's past. (Ordered by the share now plus
    // the decayed share, b went first and took a GPU beyond its share now, which fair-share
    // preemption by the shares now then took back.)
    usage.AddUsage("b", GpuMilli(1));
    QuotaTracker a_past(&dir);
    a_past.AddUsage("a", GpuMilli(12));
    CHECK(ChooseNextPending(ptrs, dir, usage, &a_past) == 1);
  }
  SECTION("a pod in no queue counts as within its quota") {
    CHECK(Choose({Head("a", 0), Head("elsewhere", 0)}, dir, usage) == 1);
  }
  SECTION("a pod larger than what is left of its nominal quota borrows") {
    CHECK(Choose({Head("b", 0, "5"), Head("w", 0, "4")}, dir, usage) == 1);
  }
}

// In a tree the heads are compared where their queues' paths part, as fair-share preemption
// compares a preemptor's side with its victim's: the department first, then the team.
TEST_CASE("pending order: in a tree of cohorts, queues are ordered by the shares of the subtrees "
          "where their paths part",
          "[quota][queue][cohort]") {
  // org (8 GPUs of its own) over dept-a (a1, a2: 4 each) and dept-b (b: 8).
  auto cohort = [](std::string_view name, std::string_view parent, int64_t gpus) {
    json spec = {{"nominalQuota", Gpus(gpus)}};
    if (!parent.empty()) spec["parent"] = parent;
    absl::StatusOr<Cohort> c = DecodeCohort(
        {{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Cohort"}, {"metadata", {{"name", name}}}, {"spec", spec}});
    REQUIRE(c.ok());
    return *std::move(c);
  };
  QueueDirectory dir;
  REQUIRE(dir.Set({MustQueue("a1", {{"cohort", "dept-a"}, {"nominalQuota", Gpus(4)}}),
                   MustQueue("a2", {{"cohort", "dept-a"}, {"nominalQuota", Gpus(4)}}),
                   MustQueue("b", {{"cohort", "dept-b"}, {"nominalQuota", Gpus(8)}})},
                  {}, {}, {},
                  CohortObjects{.cohorts = {cohort("org", "", 8), cohort("dept-a", "org", 0), cohort("dept-b", "org", 0)}})
              .ok());
  QuotaTracker usage(&dir);
  // a1 borrows 6, a2 holds its 4 (no share of its own; its next pod borrows), b borrows 1: of
  // org's 8, dept-a borrows 6 and dept-b 1.
  usage.AddUsage("a1", GpuMilli(10));
  usage.AddUsage("a2", GpuMilli(4));
  usage.AddUsage("b", GpuMilli(9));
  const CohortTree& tree = dir.tree();
  REQUIRE(usage.WeightedDominantShare("a2") < usage.WeightedDominantShare("b"));
  REQUIRE(usage.ShareOfNode(tree.CohortNode("dept-a")) > usage.ShareOfNode(tree.CohortNode("dept-b")));
  // a2's own share is the lower, but dept-a's is above dept-b's: b's pod goes first. (Judged by
  // the queues' shares, a2's pod went first and b's took it back by fair-share preemption.)
  CHECK(Choose({Head("a2", 0), Head("b", 0)}, dir, usage) == 1);
  // Within one department, the teams' shares decide.
  CHECK(Choose({Head("a1", 0), Head("a2", 0)}, dir, usage) == 1);
}

TEST_CASE("pending order: a flavored queue is within nominal quota when one flavor of each group holds the pod",
          "[quota][queue]") {
  auto flavor = [](std::string_view name, int64_t gpus) {
    return json{{"name", name}, {"resources", json::array({{{"name", "nvidia.com/gpu"}, {"nominalQuota", std::to_string(gpus)}}})}};
  };
  QueueDirectory dir;
  REQUIRE(dir.Set({MustQueue("f", {{"cohort", "c"},
                                   {"resourceGroups", json::array({{{"coveredResources", {"nvidia.com/gpu"}},
                                                                    {"flavors", {flavor("reserved", 2), flavor("spot", 4)}}}})}})})
              .ok());
  QuotaTracker usage(&dir);
  const Queue& f = *dir.Find("f");
  usage.AddUsage("f", GpuMilli(2, "nvidia.com/gpu@reserved"));  // reserved is full, spot is not
  CHECK(WithinNominalQuota(usage, f, GpuMilli(3)));
  CHECK_FALSE(WithinNominalQuota(usage, f, GpuMilli(5)));  // no flavor holds 5
  usage.AddUsage("f", GpuMilli(2, "nvidia.com/gpu@spot"));
  CHECK_FALSE(WithinNominalQuota(usage, f, GpuMilli(3)));
  CHECK(WithinNominalQuota(usage, f, Res("cpu:4")));  // CPU is in no group: not limited
}

TEST_CASE("pending order: pods group by namespace, whatever labels they carry", "[quota][queue]") {
  CHECK(PendingGroupOf(PodBuilder("p", "ns").Build()) == "ns");
  // A label value is the pod author's to choose: it makes no group of its own.
  CHECK(PendingGroupOf(PodBuilder("p", "ns").Label("tessel.io/queue", "team-a").Build()) == "ns");
  CHECK(PendingGroupOf(PodBuilder("q", "ns").Label("tessel.io/queue", "team-b").Build()) == "ns");
}

}  // namespace pending_order_test
}  // namespace tessel::queue_quota
