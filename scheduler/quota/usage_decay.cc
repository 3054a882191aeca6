// Exact integer exponential decay of queue usage (usage_decay.h states the rounding).
#include "scheduler/quota/usage_decay.h"

#include <array>

#include "nlohmann/json.hpp"
#include "scheduler/util/api_time.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace {

constexpr uint64_t ISqrt(uint64_t n) {  // floor(sqrt(n))
  uint64_t root = 0;
  for (int bit = 31; bit >= 0; --bit) {
    const uint64_t trial = root | (uint64_t{1} << bit);
    if (trial * trial <= n) root = trial;
  }
  return root;
}

// kRoots[b] = 2^(-2^b/1024) in Q32, b = 0..9: kRoots[9] = 2^(-1/2) = isqrt(2^63) / 2^32, and each
// one below it the square root of the one above (isqrt(c * 2^32)), floors.
constexpr std::array<uint64_t, 10> MakeRoots() {
  std::array<uint64_t, 10> roots{};
  roots[9] = ISqrt(uint64_t{1} << 63);
  for (int b = 8; b >= 0; --b) roots[b] = ISqrt(roots[b + 1] << 32);
  return roots;
}
constexpr std::array<uint64_t, 10> kRoots = MakeRoots();

constexpr uint64_t MulQ32(uint64_t a, uint64_t b) {  // both <= 2^32: the product fits 64 bits
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b + (uint64_t{1} << 31)) >> 32);
}

// Floor division (also for negative numerators).
constexpr __int128 FloorDiv(__int128 a, __int128 b) {
  __int128 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

constexpr int kFractionBits = 16;

}  // namespace

uint64_t DecayFactorQ32(int64_t steps) {
  if (steps <= 0) return kDecayOne;
  const int64_t whole = steps / kDecayStepsPerHalfLife;
  if (whole >= 40) return 0;
  const int64_t frac = steps % kDecayStepsPerHalfLife;
  uint64_t f = kDecayOne;
  for (int b = 0; b < 10; ++b) {
    if ((frac >> b) & 1) f = MulQ32(f, kRoots[b]);
  }
  if (whole == 0) return f;
  return (f + (uint64_t{1} << (whole - 1))) >> whole;
}

__int128 DecayToward(__int128 old, int64_t current, uint64_t factor_q32, int fraction_bits) {
  const __int128 f = static_cast<__int128>(factor_q32);
  const __int128 sum = old * f + (static_cast<__int128>(current) << fraction_bits) *
                                     (static_cast<__int128>(kDecayOne) - f);
  return FloorDiv(sum + (static_cast<__int128>(1) << 31), static_cast<__int128>(kDecayOne));
}

UsageDecay::UsageDecay(absl::Duration half_life)
    : half_life_ms_(std::max<int64_t>(1, absl::ToInt64Milliseconds(half_life))) {}

int64_t UsageDecay::StepOf(absl::Time t) const {
  const __int128 ms = absl::ToUnixMillis(t);
  __int128 scaled = ms * kDecayStepsPerHalfLife;
  __int128 step = scaled / half_life_ms_;
  if (scaled % half_life_ms_ < 0) --step;  // floor before the epoch too
  return static_cast<int64_t>(step);
}

Resources UsageDecay::Decayed(std::string_view queue) const {
  auto it = decayed_.find(queue);
  return it == decayed_.end() ? Resources{} : it->second;
}

namespace {

// Moves `precise` over `steps` toward `held` (resources of either).
void DecayQueue(std::map<std::string, __int128, std::less<>>& precise, const Resources* held,
                int64_t steps) {
  const uint64_t f = DecayFactorQ32(steps);
  if (held != nullptr) {
    for (const auto& [r, amount] : held->Entries()) (void)precise[r];
  }
  for (auto it = precise.begin(); it != precise.end();) {
    it->second = DecayToward(it->second, held != nullptr ? held->Get(it->first) : 0, f, kFractionBits);
    it = it->second == 0 ? precise.erase(it) : std::next(it);
  }
}

}  // namespace

bool UsageDecay::Restore(const std::string& queue, const Resources& decayed, absl::Time computed_at) {
  // After the first advance, only a queue with no history here (its Queue came late, e.g. its
  // CRD was installed while the scheduler ran): what this process counted is kept otherwise.
  if (step_.has_value()) {
    auto held = held_.find(queue);
    if (precise_.contains(queue) || (held != held_.end() && !held->second.IsZero())) return false;
  }
  Precise& precise = precise_[queue];
  precise.clear();
  for (const auto& [r, amount] : decayed.Entries()) {
    precise[r] = static_cast<__int128>(amount) << kFractionBits;
  }
  if (step_.has_value()) {
    // Brought to the last advance at once, toward nothing held (no pod counted for it here).
    DecayQueue(precise, nullptr, *step_ - StepOf(computed_at));
    if (precise.empty()) precise_.erase(queue);
  } else {
    restored_[queue] = StepOf(computed_at);
  }
  Round();
  return true;
}

void UsageDecay::Round() {
  decayed_.clear();
  for (const auto& [queue, precise] : precise_) {
    Resources rounded;
    for (const auto& [r, amount] : precise) {
      rounded.Set(r, static_cast<int64_t>(
                         FloorDiv(amount + (static_cast<__int128>(1) << (kFractionBits - 1)),
                                  static_cast<__int128>(1) << kFractionBits)));
    }
    if (!rounded.Entries().empty()) decayed_[queue] = std::move(rounded);
  }
}

void UsageDecay::Advance(absl::Time now, const QueueUsage& usage) {
  const int64_t step = StepOf(now);
  if (!step_.has_value()) {
    // The first advance: restored queues move from the time their status was written.
    for (const auto& [queue, at] : restored_) {
      auto held = usage.find(queue);
      DecayQueue(precise_[queue], held != usage.end() ? &held->second : nullptr, step - at);
    }
    restored_.clear();
  } else if (step > *step_) {
    for (const auto& [queue, amount] : held_) (void)precise_[queue];
    for (auto it = precise_.begin(); it != precise_.end();) {
      auto held = held_.find(it->first);
      DecayQueue(it->second, held != held_.end() ? &held->second : nullptr, step - *step_);
      it = it->second.empty() ? precise_.erase(it) : std::next(it);
    }
  } else {
    held_ = usage;
    return;
  }
  step_ = step;
  computed_at_ = now;
  held_ = usage;
  Round();
}

DecayedUsageRecord DecayedUsageBelow(const std::map<std::string, DecayedUsageRecord>& decayed,
                                     const std::vector<CohortReport>& cohorts,
                                     const std::vector<QueueReport>& queues, std::string_view cohort) {
  DecayedUsageRecord sum;
  if (!decayed.empty()) sum.computed_at = decayed.begin()->second.computed_at;
  for (const QueueReport& q : queues) {
    auto it = decayed.find(q.name);
    if (it == decayed.end() || !QueueIsBelow(cohorts, q, cohort)) continue;
    (void)sum.decayed.Add(it->second.decayed);
    sum.computed_at = it->second.computed_at;
  }
  return sum;
}

nlohmann::json DecayedUsageStatus(const DecayedUsageRecord& record) {
  nlohmann::json usage = nlohmann::json::object();
  for (const auto& [r, amount] : record.decayed.Entries()) usage[r] = FormatResourceQuantity(r, amount);
  return {{"decayedUsage", std::move(usage)},
          {"decayedUsageComputedAt", FormatRfc3339(record.computed_at)}};
}

absl::StatusOr<std::optional<DecayedUsageRecord>> ReadDecayedUsageStatus(const nlohmann::json& object) {
  const nlohmann::json* status = object.is_object() && object.contains("status") ? &object["status"] : nullptr;
  if (status == nullptr || !status->is_object() || !status->contains("fairSharing")) return std::nullopt;
  std::string name;
  if (object.contains("metadata") && object["metadata"].is_object()) {
    name = object["metadata"].value("name", "");
  }
  const std::string kind = object.value("kind", std::string("Queue"));
  auto error = [&](const std::string& field, const std::string& what) {
    return absl::InvalidArgumentError(StrCat(kind, " ", name, ": status.fairSharing", field, ": ", what));
  };
  const nlohmann::json& fair = (*status)["fairSharing"];
  if (fair.is_null()) return std::nullopt;
  if (!fair.is_object()) return error("", "must be an object");
  DecayedUsageRecord record;
  const auto at = fair.find("decayedUsageComputedAt");
  if (at == fair.end() || !at->is_string()) return error(".decayedUsageComputedAt", "must be an RFC 3339 time");
  std::string parse_error;
  if (!absl::ParseTime(absl::RFC3339_full, at->get<std::string>(), &record.computed_at, &parse_error)) {
    return error(".decayedUsageComputedAt", StrCat("\"", at->get<std::string>(), "\" is not an RFC 3339 time"));
  }
  const auto usage = fair.find("decayedUsage");
  if (usage == fair.end()) return record;
  if (!usage->is_object()) return error(".decayedUsage", "must be a map of resource quantities");
  for (const auto& [r, q] : usage->items()) {
    if (!q.is_string()) return error(StrCat(".decayedUsage.", r), "must be a quantity string");
    absl::StatusOr<int64_t> amount = ParseResourceQuantity(r, q.get<std::string>());
    if (!amount.ok()) return error(StrCat(".decayedUsage.", r), std::string(amount.status().message()));
    if (*amount < 0) return error(StrCat(".decayedUsage.", r), "must not be negative");
    record.decayed.Set(r, *amount);
  }
  return record;
}

}  // namespace tessel
