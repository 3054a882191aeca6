// Fairness over time (issue 40, item 3): every queue's usage decayed with a half-life, so that
// the fair share can weigh what a team used recently beside what it uses now (KAI-Scheduler's
// time-based fair share, Kueue's admission fair sharing).
//
// The decayed usage D of a queue, per resource, is an exponentially weighted average of its
// usage U over time: over an interval dt in which the queue held U,
//   D <- D * f + U * (1 - f),   f = 2^(-dt / halfLife)
// so a queue that holds U for one half-life from D = 0 reaches U/2, and one that stops decays by
// half every half-life. Exact integers only (no floating point on the accounting path):
//   * time is counted in steps of halfLife/1024 on the wall clock's epoch (step index
//     floor(unixMillis * 1024 / halfLifeMillis)), so advancing in several calls covers exactly
//     the steps of one call: the time between advances is never rounded away;
//   * f = 2^(-steps/1024) in Q32 fixed point: 2^-(steps/1024 whole) times the product of the
//     constants 2^(-2^b/1024) for the set bits b of steps%1024; each constant is the floor of an
//     integer square root (2^(-1/2) = isqrt(2^63) / 2^32, the next isqrt of it times 2^32, ...),
//     each product and the final shift rounded to nearest, halves up;
//   * D is kept with 16 more bits than the usage (D * 2^16, in 128 bits), and
//     D * f + U * (2^32 - f) is rounded to nearest, halves up, at that precision: advancing
//     often loses at most 2^-16 of a unit per step (at most 0.01 of the resource's smallest unit
//     in all). decayed() rounds to nearest (halves up) to the usage's units (milli for GPUs and
//     CPUs). A queue that always held U keeps D = U exactly.
// The usage held over an interval is the one passed at the interval's start (the usage sampled
// at the previous Advance). A queue starts from 0, or from the value Restore gives it (read back
// from its status after a restart).
//
//   UsageDecay decay(absl::Seconds(3600));
//   decay.Advance(clock.Now(), usage_per_queue);   // once per cycle, or as often as wanted
//   const QueueUsage& d = decay.decayed();
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json_fwd.hpp"
#include "scheduler/quota/quota_usage.h"

namespace tessel {

inline constexpr int64_t kDecayStepsPerHalfLife = 1024;
inline constexpr uint64_t kDecayOne = uint64_t{1} << 32;  // 1.0 in Q32

// 2^(-steps/1024) in Q32 (kDecayOne is 1.0), rounded as stated above; 0 from 40 half-lives on.
uint64_t DecayFactorQ32(int64_t steps);
// old * f + current * (1 - f), f in Q32, rounded to nearest (halves up). `old` and the result
// carry `fraction_bits` more bits than `current`.
__int128 DecayToward(__int128 old, int64_t current, uint64_t factor_q32, int fraction_bits = 0);

// What a Queue's status keeps of it, so that a restart keeps the history:
//   status.fairSharing: {decayedUsage: {nvidia.com/gpu: "5625m", ...},   // quantities
//                        decayedUsageComputedAt: "2026-11-28T20:00:00Z"}
// The time is written to the second, rounded down: a restored value decays from up to a second
// earlier than it was computed (the error is at most one second's decay).
struct DecayedUsageRecord {
  Resources decayed;
  absl::Time computed_at;
  bool operator==(const DecayedUsageRecord&) const = default;
};
nlohmann::json DecayedUsageStatus(const DecayedUsageRecord& record);
// A cohort's decayed usage: the sum of `decayed` over the queues below the cohort named `cohort`
// at any depth (QueueIsBelow), computed when theirs was. A cohort's value is derived, never kept.
DecayedUsageRecord DecayedUsageBelow(const std::map<std::string, DecayedUsageRecord>& decayed,
                                     const std::vector<CohortReport>& cohorts,
                                     const std::vector<QueueReport>& queues, std::string_view cohort);
// Reads status.fairSharing of a Queue object: nullopt when it has none, an error naming the
// object and the field when it does not read ("Queue team-a: status.fairSharing.decayedUsage.cpu:
// ...").
absl::StatusOr<std::optional<DecayedUsageRecord>> ReadDecayedUsageStatus(const nlohmann::json& object);

class UsageDecay {
 public:
  // `half_life` is at least one second (the QueueQuota arg usageHalfLifeSeconds checks it).
  explicit UsageDecay(absl::Duration half_life);

  // Moves every queue's decayed usage over the steps from the last advance to `now`, toward the
  // usage it held since then (passed at the last advance), then records `usage` for the next
  // interval. The first advance only records. A time before the last advance changes nothing
  // but the recorded usage.
  void Advance(absl::Time now, const QueueUsage& usage);
  // Sets a queue's decayed usage as it was at `computed_at` (read back from its status after a
  // restart). At the first advance it moves from there over the steps to that advance toward
  // the usage passed then (the pods kept running while no scheduler counted them). After the
  // first advance only a queue with no history here (its Queue came late): it moves at once to
  // the last advance, toward nothing held; for any other queue it returns false, changing nothing.
  bool Restore(const std::string& queue, const Resources& decayed, absl::Time computed_at);

  const QueueUsage& decayed() const { return decayed_; }
  Resources Decayed(std::string_view queue) const;
  // When the decayed usage was last advanced (nullopt before the first advance).
  std::optional<absl::Time> computed_at() const { return computed_at_; }
  absl::Duration half_life() const { return absl::Milliseconds(half_life_ms_); }

 private:
  int64_t StepOf(absl::Time t) const;
  void Round();  // decayed_ from precise_

  int64_t half_life_ms_;
  std::optional<int64_t> step_;  // the step of the last advance
  std::optional<absl::Time> computed_at_;
  QueueUsage held_;              // the usage passed at the last advance
  QueueUsage decayed_;           // precise_, rounded to the usage's units
  // Per queue and resource, D * 2^16.
  using Precise = std::map<std::string, __int128, std::less<>>;
  std::map<std::string, Precise, std::less<>> precise_;
  std::map<std::string, int64_t, std::less<>> restored_;  // queue -> the step it was restored at
};

}  // namespace tessel
