// KeepWholeDevices: count what each alternative leaves whole, keep the most. LeastFragmentation:
// the node's GPU units after each alternative, measured by FGD.
#include "scheduler/dra/device_choice.h"

#include <algorithm>
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

std::vector<int64_t> UnitFreeMilli(const NodeDevices& devices, const AllocatedDevices& allocated,
                                   const std::vector<Pick>& picks) {
  // What is taken: devices held whole, capacity consumed by shares, counters consumed.
  std::set<DeviceId> whole;
  std::map<DeviceId, Amounts> shared = allocated.shared;
  std::map<CounterSetKey, Amounts> consumed;
  std::set<DeviceId> counted;  // a device's counters are consumed once however many shares it has
  auto take_counters = [&](int pool, const DeviceId& id, const Device& device) {
    if (!counted.insert(id).second) return;
    for (const CounterConsumption& use : device.consumes_counters) {
      Amounts& sum = consumed[{pool, use.counter_set}];
      for (const auto& [name, amount] : use.counters) sum[name] += amount;
    }
  };
  for (size_t p = 0; p < devices.pools.size(); ++p) {
    for (const PoolDevice& d : devices.pools[p].all_devices) {
      if (allocated.exclusive.contains(d.id)) whole.insert(d.id);
      if (allocated.Holds(d.id)) take_counters(static_cast<int>(p), d.id, *d.device);
    }
  }
  for (const Pick& pick : picks) {
    if (pick.admin_access) continue;
    const Candidate& c = devices.candidates[pick.candidate];
    if (pick.shared) {
      Amounts& sum = shared[c.id];
      for (const auto& [name, amount] : pick.consumed_capacity) sum[name] += amount;
    } else {
      whole.insert(c.id);
    }
    take_counters(c.pool, c.id, *c.device);
  }
  // The smallest share left of `total` after `used`, in milli; 1000 when nothing is counted.
  auto share_left = [](const auto& totals, const Amounts* used, auto value_of) {
    int64_t left = gpu::kMilliPerGpu;
    for (const auto& [name, total_entry] : totals) {
      const int64_t total = value_of(total_entry);
      if (total <= 0) continue;
      int64_t taken = 0;
      if (used != nullptr) {
        if (auto it = used->find(name); it != used->end()) taken = it->second;
      }
      const int64_t rest = std::clamp<int64_t>(total - taken, 0, total);
      // rest * 1000 / total without overflow for quantities up to 2^63 / 1000 and beyond.
      const int64_t milli = static_cast<int64_t>(static_cast<__int128>(rest) * gpu::kMilliPerGpu / total);
      left = std::min(left, milli);
    }
    return left;
  };
  std::vector<int64_t> out;
  for (size_t p = 0; p < devices.pools.size(); ++p) {
    const Pool& pool = devices.pools[p];
    if (!pool.usable()) continue;
    for (const auto& [name, counters] : pool.counter_sets) {
      auto it = consumed.find({static_cast<int>(p), name});
      out.push_back(share_left(counters, it == consumed.end() ? nullptr : &it->second,
                               [](int64_t v) { return v; }));
    }
  }
  for (size_t p = 0; p < devices.pools.size(); ++p) {
    const Pool& pool = devices.pools[p];
    if (!pool.usable()) continue;
    for (const PoolDevice& d : pool.all_devices) {
      if (!d.device->consumes_counters.empty()) continue;
      if (whole.contains(d.id)) {
        out.push_back(0);
      } else if (auto it = shared.find(d.id); it != shared.end()) {
        out.push_back(share_left(d.device->capacity, &it->second, [](const DeviceCapacity& c) { return c.value; }));
      } else {
        out.push_back(gpu::kMilliPerGpu);
      }
    }
  }
  return out;
}

size_t LeastFragmentation::Choose(const NodeDevices& devices, const AllocatedDevices& allocated,
                                  const std::vector<Alternative>& alternatives) const {
  if (workload_.empty()) return KeepWholeDevices().Choose(devices, allocated, alternatives);
  auto measure = [&](const Alternative& a) {
    const std::vector<int64_t> units = UnitFreeMilli(devices, allocated, a.picks);
    int64_t left = 0;
    for (int64_t u : units) left += u;
    const gpu::NodeShape shape = gpu::NodeShape::OfFree(units, node_.cpu_free, node_.model);
    // The least taken first: FGD counts a node's idle GPU as fragmented for the classes that use
    // no GPU, so between allocations that take different amounts it would favour the larger one
    // (two whole GPUs over two halves of one, for a claim of two devices any size). Then the
    // least fragmentation, then the most left whole (negated: smaller wins).
    const WholeLeft whole = MeasureWholeLeft(devices, allocated, a.picks);
    return std::tuple(-left, workload_.NodeFrag(shape), -whole.counter_sets, -whole.devices, -whole.plain_devices);
  };
  size_t best = 0;
  auto best_key = measure(alternatives[0]);
  for (size_t i = 1; i < alternatives.size(); ++i) {
    auto key = measure(alternatives[i]);
    if (key < best_key) {
      best = i;
      best_key = key;
    }
  }
  return best;
}

}  // namespace tessel::dra
