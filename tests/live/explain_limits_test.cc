// The admin API's explain, bounded (issue 37, defect 5): explains wait for the scheduling loop at
// most max_waiting at a time (beyond: RESOURCE_EXHAUSTED), a caller that gives up is answered
// CANCELLED at once and frees its place, and the loop, when it runs, answers the ones still
// waiting. A real Scheduler on the core harness; the loop is run by the test thread.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "harness/core_harness.h"
#include "scheduler/server/admin_service.h"
#include "scheduler/testing/builders.h"

namespace tessel::server {
namespace explain_limits_test {

using testing::CoreHarness;
using testing::NodeBuilder;
using testing::PodBuilder;

// One explain on a thread of its own, as a gRPC handler would run it.
struct PendingExplain {
  PendingExplain(SchedulerAdminBackend& backend, std::string key) {
    thread = std::thread([this, &backend, key] {
      CallControl control{.cancelled = [this] { return gave_up.load(); }};
      result = backend.Explain(key, control);
      done.store(true);
    });
  }
  ~PendingExplain() {
    if (thread.joinable()) thread.join();
  }
  absl::StatusOr<Explanation> Wait() {
    thread.join();
    return result;
  }
  std::atomic<bool> gave_up{false}, done{false};
  absl::StatusOr<Explanation> result = absl::UnknownError("not run");
  std::thread thread;
};

// Waits (at most a minute) until `n` explains wait for the loop.
bool Waiting(const SchedulerAdminBackend& backend, int n) {
  for (int i = 0; i < 6000 && backend.ExplainsWaiting() != n; ++i) absl::SleepFor(absl::Milliseconds(10));
  return backend.ExplainsWaiting() == n;
}

TEST_CASE("explain: at most max_waiting wait for the loop; a caller that gives up is let go", "[admin][explain]") {
  CoreHarness h;
  h.AddNode(NodeBuilder("gpu-0").Allocatable("cpu:8,memory:32Gi,nvidia.com/gpu:1").Build());
  h.AddPod(PodBuilder("big", "team-a").Requests("cpu:1,nvidia.com/gpu:4").Build());
  h.RunUntilIdle();
  SchedulerAdminBackend backend(h.s.get(), nullptr, ExplainLimits{.timeout = absl::Minutes(5), .max_waiting = 2});

  PendingExplain first(backend, "team-a/big");
  REQUIRE(Waiting(backend, 1));
  PendingExplain second(backend, "team-a/big");
  REQUIRE(Waiting(backend, 2));
  absl::StatusOr<Explanation> refused = backend.Explain("team-a/big", CallControl{});
  CHECK(refused.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(refused.status().message() == "explain: 2 explains already wait for the scheduling loop; retry later");

  first.gave_up.store(true);
  absl::StatusOr<Explanation> cancelled = first.Wait();
  CHECK(cancelled.status().code() == absl::StatusCode::kCancelled);
  CHECK_FALSE(second.done.load());  // the loop has not run: the other still waits

  // Its place is free again: a third is taken, and waits beside the second.
  REQUIRE(Waiting(backend, 1));
  PendingExplain third(backend, "team-a/big");
  REQUIRE(Waiting(backend, 2));
  h.RunUntilIdle();  // the loop runs the queued explains (the abandoned one costs nothing)
  for (PendingExplain* e : {&second, &third}) {
    absl::StatusOr<Explanation> answered = e->Wait();
    REQUIRE(answered.ok());
    CHECK(answered->pod == "team-a/big");
    CHECK(answered->state == "pending");
    CHECK_THAT(answered->message, Catch::Contains("Insufficient nvidia.com/gpu"));
  }
  CHECK(backend.ExplainsWaiting() == 0);
}

}  // namespace explain_limits_test
}  // namespace tessel::server
