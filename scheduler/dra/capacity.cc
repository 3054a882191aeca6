// Consumable capacity: rounding by the request policy, and the fit check.
#include "scheduler/dra/capacity.h"

#include "scheduler/util/saturating.h"

namespace tessel::dra {

namespace {

// The amount as the policy accepts it: a range rounds up to min + n*step; valid values round up
// to the next listed value.
std::optional<int64_t> Round(const CapacityRequestPolicy& policy, int64_t requested) {
  if (policy.range_min.has_value()) {
    const int64_t min = *policy.range_min;
    int64_t value = requested;
    if (value < min) {
      value = min;
    } else if (policy.range_step.has_value()) {
      const int64_t step = *policy.range_step;
      const int64_t added = value - min;
      int64_t n = added / step + (added % step != 0 ? 1 : 0);
      int64_t grown = 0;
      if (__builtin_mul_overflow(n, step, &grown) || __builtin_add_overflow(min, grown, &value)) {
        return std::nullopt;
      }
    }
    if (policy.range_max.has_value() && value > *policy.range_max) return std::nullopt;
    return value;
  }
  if (!policy.valid_values.empty()) {
    for (int64_t valid : policy.valid_values) {
      if (requested <= valid) return valid;
    }
    return std::nullopt;
  }
  return requested;
}

}  // namespace

std::optional<int64_t> ConsumedAmount(const DeviceCapacity& capacity, std::optional<int64_t> requested) {
  const std::optional<CapacityRequestPolicy>& policy = capacity.request_policy;
  if (!requested.has_value()) {
    // The default is valid by validation; without one a request takes the whole capacity.
    return policy.has_value() && policy->default_amount.has_value() ? *policy->default_amount
                                                                    : capacity.value;
  }
  if (!policy.has_value()) return *requested;
  return Round(*policy, *requested);
}

std::optional<Amounts> ConsumedCapacity(const Device& device, const Amounts& requests) {
  for (const auto& [name, amount] : requests) {
    if (!device.capacity.contains(name)) return std::nullopt;
  }
  Amounts out;
  for (const auto& [name, capacity] : device.capacity) {
    auto it = requests.find(name);
    std::optional<int64_t> requested;
    if (it != requests.end()) requested = it->second;
    std::optional<int64_t> amount = ConsumedAmount(capacity, requested);
    if (!amount.has_value()) return std::nullopt;
    out[name] = *amount;
  }
  return out;
}

bool FitsCapacity(const Device& device, const Amounts& consumed, const Amounts& already) {
  for (const auto& [name, capacity] : device.capacity) {
    int64_t total = 0;
    if (auto it = consumed.find(name); it != consumed.end()) total = it->second;
    if (auto it = already.find(name); it != already.end()) total = SaturatingAdd(total, it->second);
    if (total > capacity.value) return false;
  }
  return true;
}

void AddAmounts(Amounts& into, const Amounts& add) {
  for (const auto& [name, amount] : add) into[name] = SaturatingAdd(into[name], amount);
}

void SubtractAmounts(Amounts& from, const Amounts& sub) {
  for (const auto& [name, amount] : sub) from[name] -= amount;
}

}  // namespace tessel::dra
