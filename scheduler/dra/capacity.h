// Consumable capacity (KEP-5075): how much of each capacity of a device one request consumes,
// after the device's requestPolicy (default, valid values, valid range with step) has rounded
// the requested amount, and whether that still fits beside what other shares consume. All
// amounts are milli-units (objects.h), so a fractional range rounds exactly.
//
//   std::optional<Amounts> take = ConsumedCapacity(device, ask.capacity_requests);
//   if (take && FitsCapacity(device, *take, already_consumed)) ...
#pragma once

#include <optional>

#include "scheduler/dra/objects.h"

namespace tessel::dra {

// What a request consumes of one capacity: `requested` rounded up by the policy, or the policy's
// default (else the whole capacity) when the request names no amount. nullopt when the policy
// refuses the amount (above the range's max or above every valid value).
std::optional<int64_t> ConsumedAmount(const DeviceCapacity& capacity, std::optional<int64_t> requested);

// What a request consumes of every capacity of the device; nullopt when it asks for a capacity
// the device does not have, or a policy refuses an amount.
std::optional<Amounts> ConsumedCapacity(const Device& device, const Amounts& requests);

// `consumed` + `already` stays within each capacity's value.
bool FitsCapacity(const Device& device, const Amounts& consumed, const Amounts& already);

// `into` += `add`, name by name (saturating at INT64_MAX, which no capacity reaches).
void AddAmounts(Amounts& into, const Amounts& add);
// `from` -= `sub`, name by name.
void SubtractAmounts(Amounts& from, const Amounts& sub);

}  // namespace tessel::dra
