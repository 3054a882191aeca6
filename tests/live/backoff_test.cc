// Backoff growth and jitter bounds; token-bucket pacing (QPS and burst) on an explicit clock.
#include <catch2/catch.hpp>

#include "scheduler/kube/backoff.h"
#include "scheduler/kube/client.h"

namespace tessel::kube {
namespace backoff_test {

TEST_CASE("backoff doubles up to the cap, with bounded jitter, and resets") {
  Backoff b({.initial = absl::Milliseconds(100), .max = absl::Seconds(1), .factor = 2, .jitter = 0.1},
            /*seed=*/7);
  const std::vector<int64_t> base_ms = {100, 200, 400, 800, 1000, 1000};
  for (int64_t want : base_ms) {
    const int64_t got = absl::ToInt64Milliseconds(b.Next());
    CHECK(got >= want);
    CHECK(got <= want + want / 10);
  }
  b.Reset();
  CHECK(absl::ToInt64Milliseconds(b.Next()) < 111);
}

TEST_CASE("token bucket: a burst passes at once, then tokens come at the QPS rate") {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  TokenBucket bucket(/*qps=*/50, /*burst=*/100, t0);
  for (int i = 0; i < 100; ++i) REQUIRE(bucket.Reserve(t0) == absl::ZeroDuration());
  // The 101st waits one token's time (20 ms), the 102nd two.
  CHECK(bucket.Reserve(t0) == absl::Milliseconds(20));
  CHECK(bucket.Reserve(t0) == absl::Milliseconds(40));
  // A second later the debt is paid and 48 tokens saved up.
  const absl::Time t1 = t0 + absl::Seconds(1);
  for (int i = 0; i < 48; ++i) REQUIRE(bucket.Reserve(t1) == absl::ZeroDuration());
  CHECK(bucket.Reserve(t1) > absl::ZeroDuration());
}

TEST_CASE("token bucket: TryTake never goes into debt; qps 0 is unlimited") {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  TokenBucket bucket(1, 2, t0);
  CHECK(bucket.TryTake(t0));
  CHECK(bucket.TryTake(t0));
  CHECK_FALSE(bucket.TryTake(t0));
  CHECK(bucket.TryTake(t0 + absl::Seconds(1)));
  TokenBucket unlimited(0, 1, t0);
  for (int i = 0; i < 1000; ++i) REQUIRE(unlimited.Reserve(t0) == absl::ZeroDuration());
}

TEST_CASE("responses: retryable codes and Kubernetes Status messages") {
  CHECK(IsRetryableCode(0));
  CHECK(IsRetryableCode(429));
  CHECK(IsRetryableCode(500));
  CHECK(IsRetryableCode(503));
  CHECK_FALSE(IsRetryableCode(404));
  CHECK_FALSE(IsRetryableCode(409));
  Response conflict{.code = 409,
                    .body = R"({"kind":"Status","status":"Failure","message":"pod p is already assigned to node \"n\"","reason":"Conflict","code":409})"};
  CHECK(conflict.ErrorMessage() == "pod p is already assigned to node \"n\"");
  absl::Status st = conflict.ToStatus("bind pod ns/p");
  CHECK(absl::IsAlreadyExists(st));
  CHECK(std::string(st.message()) == "bind pod ns/p: HTTP 409: pod p is already assigned to node \"n\"");
  CHECK(absl::IsNotFound(Response{.code = 404, .body = "nope"}.ToStatus("x")));
  CHECK(Response{.code = 201}.ToStatus("x").ok());
}

}  // namespace backoff_test
}  // namespace tessel::kube
