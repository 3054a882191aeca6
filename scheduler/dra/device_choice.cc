// KeepWholeDevices: count what each alternative leaves whole, keep the most.
#include "scheduler/dra/device_choice.h"

#include <set>
#include <tuple>

namespace tessel::dra {

namespace {

using CounterSetKey = std::pair<int, std::string>;  // pool index, counter set

bool ConsumesAny(const CounterConsumption& use) {
  for (const auto& [name, amount] : use.counters) {
    if (amount > 0) return true;
  }
  return false;
}

}  // namespace

WholeLeft MeasureWholeLeft(const NodeDevices& devices, const AllocatedDevices& allocated,
                           const std::vector<Pick>& picks) {
  std::set<DeviceId> held;
  std::set<CounterSetKey> touched;
  auto hold = [&](int pool, const DeviceId& id, const Device& device) {
    held.insert(id);
    for (const CounterConsumption& use : device.consumes_counters) {
      if (ConsumesAny(use)) touched.insert({pool, use.counter_set});
    }
  };
  for (size_t p = 0; p < devices.pools.size(); ++p) {
    for (const PoolDevice& d : devices.pools[p].all_devices) {
      if (allocated.Holds(d.id)) hold(static_cast<int>(p), d.id, *d.device);
    }
  }
  for (const Pick& pick : picks) {
    if (pick.admin_access) continue;
    const Candidate& c = devices.candidates[pick.candidate];
    hold(c.pool, c.id, *c.device);
  }
  WholeLeft out;
  for (size_t p = 0; p < devices.pools.size(); ++p) {
    for (const auto& [name, counters] : devices.pools[p].counter_sets) {
      if (!touched.contains({static_cast<int>(p), name})) ++out.counter_sets;
    }
  }
  for (const Candidate& c : devices.candidates) {
    if (held.contains(c.id)) continue;
    bool whole = true;
    for (const CounterConsumption& use : c.device->consumes_counters) {
      if (touched.contains({c.pool, use.counter_set})) whole = false;
    }
    if (!whole) continue;
    ++out.devices;
    if (c.device->consumes_counters.empty()) ++out.plain_devices;
  }
  return out;
}

int64_t PackingScore(const NodeDevices& devices, const AllocatedDevices& allocated, const std::vector<Pick>& picks) {
  const int64_t total = MeasureWholeLeft(devices, AllocatedDevices(), {}).units();
  if (total == 0) return 0;
  const int64_t before = MeasureWholeLeft(devices, allocated, {}).units();
  const int64_t after = MeasureWholeLeft(devices, allocated, picks).units();
  return (before < total ? 50 : 0) + (total - after) * 50 / total;
}

size_t KeepWholeDevices::Choose(const NodeDevices& devices, const AllocatedDevices& allocated,
                                const std::vector<Alternative>& alternatives) const {
  size_t best = 0;
  WholeLeft best_left = MeasureWholeLeft(devices, allocated, alternatives[0].picks);
  for (size_t i = 1; i < alternatives.size(); ++i) {
    WholeLeft left = MeasureWholeLeft(devices, allocated, alternatives[i].picks);
    if (left > best_left) {
      best = i;
      best_left = left;
    }
  }
  return best;
}

}  // namespace tessel::dra
