// Usage decayed over time (scheduler/quota/usage_decay.h): the fixed-point factor, the decay
// toward the usage held, advancing in steps, and the value restored after a restart. Every
// expected value is exact (computed by hand from the stated rounding).
#include <catch2/catch.hpp>

#include "nlohmann/json.hpp"
#include "scheduler/quota/usage_decay.h"

namespace tessel {
namespace usage_decay_test {

Resources Gpus(int64_t milli) {
  Resources r;
  r.Set(kNvidiaGpu, milli);
  return r;
}

TEST_CASE("decay factor: 2^(-steps/1024) in Q32, exact", "[quota][decay]") {
  CHECK(DecayFactorQ32(0) == kDecayOne);
  CHECK(DecayFactorQ32(-5) == kDecayOne);
  CHECK(DecayFactorQ32(1024) == kDecayOne / 2);      // one half-life: exactly a half
  CHECK(DecayFactorQ32(2048) == kDecayOne / 4);
  CHECK(DecayFactorQ32(512) == 3037000499);          // floor(2^31.5) = isqrt(2^63)
  CHECK(DecayFactorQ32(1536) == 1518500250);         // 3037000499 / 2, rounded half up
  CHECK(DecayFactorQ32(1) == 4292061009);            // the 10th square root of 2^(-1/2)
  CHECK(DecayFactorQ32(1023) == 2148937770);
  CHECK(DecayFactorQ32(40 * 1024) == 0);
  // Monotonic over a range of steps.
  for (int64_t s = 1; s < 3000; ++s) CHECK(DecayFactorQ32(s) <= DecayFactorQ32(s - 1));
}

TEST_CASE("decay toward the usage held: rounded to nearest, a steady usage stays exact",
          "[quota][decay]") {
  auto toward = [](int64_t old, int64_t current, uint64_t f, int bits = 0) {
    return static_cast<int64_t>(DecayToward(old, current, f, bits));
  };
  CHECK(toward(0, 8000, kDecayOne / 2) == 4000);   // 4000.0
  CHECK(toward(1, 0, kDecayOne / 2) == 1);         // 0.5 rounds up
  CHECK(toward(3, 0, kDecayOne / 4) == 1);         // 0.75 rounds up
  CHECK(toward(1, 0, kDecayOne / 4) == 0);         // 0.25 rounds down
  CHECK(toward(4000, 4000, DecayFactorQ32(7)) == 4000);
  CHECK(toward(8000, 8000, 0) == 8000);
  CHECK(toward(8000, 0, kDecayOne) == 8000);
  // With fraction bits, `old` and the result carry them: 1.5 * 2^-1 + 3 * 2^-1 = 2.25.
  CHECK(toward(3 << 15, 3, kDecayOne / 2, 16) == 9 << 14);
}

TEST_CASE("usage decays with its half-life: a queue that ran and stopped", "[quota][decay]") {
  UsageDecay decay(absl::Seconds(60));
  const absl::Time t0 = absl::FromUnixSeconds(600);
  const QueueUsage running = {{"team-a", Gpus(8000)}};
  decay.Advance(t0, running);  // only records what team-a holds from now on
  CHECK(decay.decayed().empty());
  CHECK(decay.computed_at() == t0);
  decay.Advance(t0 + absl::Seconds(60), running);
  CHECK(decay.Decayed("team-a").Get(kNvidiaGpu) == 4000);
  decay.Advance(t0 + absl::Seconds(120), {});  // held 8 GPUs until now, stops
  CHECK(decay.Decayed("team-a").Get(kNvidiaGpu) == 6000);
  decay.Advance(t0 + absl::Seconds(180), {});
  CHECK(decay.Decayed("team-a").Get(kNvidiaGpu) == 3000);
  decay.Advance(t0 + absl::Seconds(240), {});
  CHECK(decay.Decayed("team-a").Get(kNvidiaGpu) == 1500);
  CHECK(decay.computed_at() == t0 + absl::Seconds(240));
  // Time that goes back changes nothing but the usage recorded for the next interval.
  decay.Advance(t0, {});
  CHECK(decay.Decayed("team-a").Get(kNvidiaGpu) == 1500);
  CHECK(decay.computed_at() == t0 + absl::Seconds(240));
  // After 40 half-lives nothing is left, and the queue is dropped.
  decay.Advance(t0 + absl::Seconds(240 + 60 * 40), {});
  CHECK(decay.decayed().empty());
}

TEST_CASE("usage decay: two half-steps give one whole step (the steps are counted on the clock)",
          "[quota][decay]") {
  UsageDecay decay(absl::Seconds(60));
  const absl::Time t0 = absl::FromUnixSeconds(600);
  const QueueUsage running = {{"team-a", Gpus(8000)}};
  decay.Advance(t0, running);
  decay.Advance(t0 + absl::Seconds(30), running);
  CHECK(decay.Decayed("team-a").Get(kNvidiaGpu) == 2343);  // 8000 * (1 - 2^-0.5), rounded
  decay.Advance(t0 + absl::Seconds(60), running);
  CHECK(decay.Decayed("team-a").Get(kNvidiaGpu) == 4000);
  // Advances within one step (60 s / 1024) move nothing and lose no time; advancing every step
  // loses no precision either (the decayed usage keeps 16 more bits than the usage).
  UsageDecay fine(absl::Seconds(60));
  fine.Advance(t0, running);
  for (int ms = 10; ms <= 60000; ms += 10) fine.Advance(t0 + absl::Milliseconds(ms), running);
  CHECK(fine.Decayed("team-a").Get(kNvidiaGpu) == 4000);
}

TEST_CASE("usage decay: a restored value decays from the time it was written", "[quota][decay]") {
  UsageDecay decay(absl::Seconds(60));
  const absl::Time t0 = absl::FromUnixSeconds(600);
  CHECK(decay.Restore("team-a", Gpus(6000), t0));
  CHECK(decay.Restore("team-b", Gpus(2000), t0));
  // One half-life later the first advance moves them toward what they hold now.
  decay.Advance(t0 + absl::Seconds(60), {{"team-a", Gpus(8000)}});
  CHECK(decay.Decayed("team-a").Get(kNvidiaGpu) == 7000);
  CHECK(decay.Decayed("team-b").Get(kNvidiaGpu) == 1000);
  CHECK_FALSE(decay.Restore("team-a", Gpus(0), t0));  // too late: it has history here
  CHECK(decay.Decayed("team-a").Get(kNvidiaGpu) == 7000);
  CHECK_FALSE(decay.Restore("team-b", Gpus(0), t0));  // restored before: history too
  // A Queue seen only after the first advance (its CRD came late): its status is taken, brought
  // to the last advance (one half-life after it was written: half of it).
  decay.Advance(t0 + absl::Seconds(60), {{"team-a", Gpus(8000)}, {"team-late", Gpus(0)}});  // known, nothing held
  CHECK(decay.Restore("team-late", Gpus(4000), t0));
  CHECK(decay.Decayed("team-late").Get(kNvidiaGpu) == 2000);
  decay.Advance(t0 + absl::Seconds(120), {{"team-a", Gpus(8000)}});
  CHECK(decay.Decayed("team-late").Get(kNvidiaGpu) == 1000);
}

TEST_CASE("decayed usage in a Queue's status: written, read back, restored", "[quota][decay]") {
  UsageDecay before(absl::Seconds(60));
  const absl::Time t0 = absl::FromUnixSeconds(600);
  Resources used = Gpus(6000);
  used.Set("cpu", 12500);
  used.Set("memory", int64_t{64} << 30);
  before.Advance(t0, {{"team-a", used}});
  before.Advance(t0 + absl::Seconds(60), {{"team-a", used}});
  const DecayedUsageRecord written{before.Decayed("team-a"), *before.computed_at()};
  CHECK(written.decayed.Get(kNvidiaGpu) == 3000);
  CHECK(written.decayed.Get("cpu") == 6250);
  const nlohmann::json status = DecayedUsageStatus(written);
  CHECK(status.dump() ==
        R"({"decayedUsage":{"cpu":"6250m","memory":"32Gi","nvidia.com/gpu":"3"},)"
        R"("decayedUsageComputedAt":"1970-01-01T00:11:00Z"})");
  const nlohmann::json object = {{"kind", "Queue"}, {"metadata", {{"name", "team-a"}}},
                                 {"status", {{"fairSharing", status}}}};
  absl::StatusOr<std::optional<DecayedUsageRecord>> read = ReadDecayedUsageStatus(object);
  REQUIRE(read.ok());
  REQUIRE(read->has_value());
  CHECK(**read == written);
  // A scheduler that restarts restores it and goes on as the first one would have.
  UsageDecay after(absl::Seconds(60));
  REQUIRE(after.Restore("team-a", (*read)->decayed, (*read)->computed_at));
  before.Advance(t0 + absl::Seconds(120), {{"team-a", used}});
  after.Advance(t0 + absl::Seconds(120), {{"team-a", used}});
  CHECK(after.Decayed("team-a") == before.Decayed("team-a"));
  CHECK(after.Decayed("team-a").Get(kNvidiaGpu) == 4500);

  // No status: nothing to restore. A bad one: an error naming the object and the field.
  CHECK_FALSE(ReadDecayedUsageStatus({{"kind", "Queue"}, {"metadata", {{"name", "q"}}}})->has_value());
  nlohmann::json bad = object;
  bad["status"]["fairSharing"]["decayedUsage"]["cpu"] = "lots";
  CHECK(std::string(ReadDecayedUsageStatus(bad).status().message())
            .starts_with("Queue team-a: status.fairSharing.decayedUsage.cpu: "));
  bad = object;
  bad["status"]["fairSharing"]["decayedUsageComputedAt"] = "yesterday";
  CHECK(ReadDecayedUsageStatus(bad).status().message() ==
        "Queue team-a: status.fairSharing.decayedUsageComputedAt: \"yesterday\" is not an RFC 3339 time");
}

}  // namespace usage_decay_test
}  // namespace tessel
