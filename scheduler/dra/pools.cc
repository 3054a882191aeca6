// Gathering a node's devices from the slices of each pool's newest complete generation.
#include "scheduler/dra/pools.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "scheduler/dra/capacity.h"
#include "scheduler/util/strings.h"

namespace tessel::dra {

namespace {

using PoolKey = std::pair<std::string, std::string>;  // driver, pool

bool SliceHasNodeSelection(const ResourceSlice& slice) {
  const NodeSelection& s = slice.node_selection;
  return !s.node_name.empty() || s.all_nodes || s.node_selector.has_value();
}

// The device's node selection when it is usable from the node, else nullptr.
const NodeSelection* UsableFrom(const Node& node, const ResourceSlice& slice, const Device& device) {
  if (slice.per_device_node_selection) {
    return device.node_selection.Matches(node) ? &device.node_selection : nullptr;
  }
  if (SliceHasNodeSelection(slice) && slice.node_selection.Matches(node)) return &slice.node_selection;
  return nullptr;
}

std::string Validate(const std::vector<const ResourceSlice*>& slices, Pool& pool) {
  std::set<std::string, std::less<>> names;
  for (const ResourceSlice* slice : slices) {
    for (const CounterSet& set : slice->shared_counters) {
      if (!pool.counter_sets.emplace(set.name, set.counters).second) {
        return StrCat("counter set \"", set.name, "\" is defined twice");
      }
    }
  }
  for (const ResourceSlice* slice : slices) {
    for (const Device& device : slice->devices) {
      if (!names.insert(device.name).second) {
        return StrCat("device \"", device.name, "\" is published twice");
      }
      for (const CounterConsumption& use : device.consumes_counters) {
        auto set = pool.counter_sets.find(use.counter_set);
        if (set == pool.counter_sets.end()) {
          return StrCat("device \"", device.name, "\" consumes counter set \"", use.counter_set,
                        "\", which the pool does not define");
        }
        for (const auto& [counter, amount] : use.counters) {
          if (!set->second.contains(counter)) {
            return StrCat("device \"", device.name, "\" consumes counter \"", counter, "\" of set \"",
                          use.counter_set, "\", which the set does not define");
          }
        }
      }
    }
  }
  return "";
}

}  // namespace

NodeDevices GatherNodeDevices(const Node& node, const std::vector<const ResourceSlice*>& slices) {
  // The newest generation of each pool, and its slices.
  std::map<PoolKey, std::vector<const ResourceSlice*>> newest;
  for (const ResourceSlice* slice : slices) {
    std::vector<const ResourceSlice*>& current = newest[{slice->driver, slice->pool}];
    if (!current.empty() && current.front()->pool_generation > slice->pool_generation) continue;
    if (!current.empty() && current.front()->pool_generation < slice->pool_generation) current.clear();
    current.push_back(slice);
  }
  NodeDevices out;
  for (auto& [key, pool_slices] : newest) {
    std::sort(pool_slices.begin(), pool_slices.end(),
              [](const ResourceSlice* a, const ResourceSlice* b) { return a->meta.name < b->meta.name; });
    const ResourceSlice* unreadable = nullptr;  // a slice of the pool that did not decode
    for (const ResourceSlice* s : pool_slices) {
      if (!s->undecodable.empty() && unreadable == nullptr) unreadable = s;
    }
    const bool relevant = unreadable != nullptr ||
                          std::any_of(pool_slices.begin(), pool_slices.end(), [&](const ResourceSlice* s) {
                            return std::any_of(s->devices.begin(), s->devices.end(),
                                               [&](const Device& d) { return UsableFrom(node, *s, d) != nullptr; });
                          });
    if (!relevant) continue;
    Pool pool{.driver = key.first, .name = key.second};
    if (unreadable != nullptr) {
      // Its devices are unknown: the pool serves nothing until the slice decodes (fail closed,
      // for this pool only).
      pool.invalid_reason = unreadable->undecodable;  // names the slice and the field
    } else {
      pool.incomplete = static_cast<int64_t>(pool_slices.size()) != pool_slices.front()->pool_slice_count;
      if (!pool.incomplete) pool.invalid_reason = Validate(pool_slices, pool);
    }
    const int index = static_cast<int>(out.pools.size());
    for (const ResourceSlice* slice : pool_slices) {
      for (const Device& device : slice->devices) {
        DeviceId id{.driver = key.first, .pool = key.second, .device = device.name};
        pool.all_devices.push_back({.id = id, .device = &device});
        if (!pool.usable()) continue;
        if (const NodeSelection* selection = UsableFrom(node, *slice, device)) {
          out.candidates.push_back(
              {.id = id, .device = &device, .slice = slice, .pool = index, .selection = selection});
        }
      }
    }
    out.pools.push_back(std::move(pool));
  }
  return out;
}

void AllocatedDevices::Add(const AllocationResult& allocation) {
  for (const DeviceResult& result : allocation.devices) {
    if (result.admin_access) continue;
    if (result.share_id.empty()) {
      exclusive.insert(result.device);
    } else {
      AddAmounts(shared[result.device], result.consumed_capacity);
    }
  }
}

void AllocatedDevices::Remove(const AllocationResult& allocation) {
  for (const DeviceResult& result : allocation.devices) {
    if (result.admin_access) continue;
    if (result.share_id.empty()) {
      exclusive.erase(result.device);
      continue;
    }
    auto it = shared.find(result.device);
    if (it == shared.end()) continue;
    for (const auto& [name, amount] : result.consumed_capacity) it->second[name] -= amount;
  }
}

}  // namespace tessel::dra
