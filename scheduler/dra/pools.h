// The devices a node can use, gathered from ResourceSlices as kube-scheduler gathers them: per
// pool (driver + pool name) only the newest generation counts, and only when all of its
// resourceSliceCount slices are there (an incomplete pool allocates nothing, and fails a request
// for "All" devices). A device is usable from a node when its slice (or, with
// perDeviceNodeSelection, the device itself) names the node, selects it by labels, or is for all
// nodes. A pool whose devices repeat a name or consume counters it does not define is invalid.
//
//   NodeDevices devices = GatherNodeDevices(node, slices);
//   for (const Candidate& c : devices.candidates) ...   // in search order: pool, slice name, index
#pragma once

#include <set>
#include <string>
#include <vector>

#include "scheduler/api/objects.h"
#include "scheduler/dra/objects.h"

namespace tessel::dra {

struct PoolDevice {
  DeviceId id;
  const Device* device = nullptr;
};

// A pool with at least one device usable from the node.
struct Pool {
  std::string driver;
  std::string name;
  bool incomplete = false;     // a slice of the newest generation is missing
  std::string invalid_reason;  // non-empty when the pool is invalid
  std::map<std::string, Amounts, std::less<>> counter_sets;  // sharedCounters: what there is
  // Every device of the pool, usable from the node or not: an allocated device consumes its
  // counters wherever it is used.
  std::vector<PoolDevice> all_devices;
  bool usable() const { return !incomplete && invalid_reason.empty(); }
  std::string Describe() const { return driver + "/" + name; }
};

// A device usable from the node.
struct Candidate {
  DeviceId id;
  const Device* device = nullptr;
  const ResourceSlice* slice = nullptr;
  int pool = 0;  // index into NodeDevices::pools
  // The node selection that made it usable (the slice's, or the device's own).
  const NodeSelection* selection = nullptr;
};

struct NodeDevices {
  std::vector<Pool> pools;            // sorted by driver, then pool name
  std::vector<Candidate> candidates;  // devices of usable pools, in search order
};

// `slices` must outlive the result (it points into them).
NodeDevices GatherNodeDevices(const Node& node, const std::vector<const ResourceSlice*>& slices);

// What allocated claims hold: devices held whole, and the shares of devices that allow multiple
// allocations. Claims reserved for other pods hold their devices; admin access holds nothing.
struct AllocatedDevices {
  std::set<DeviceId> exclusive;
  std::map<DeviceId, Amounts> shared;  // device -> the capacity its shares consume in total
  void Add(const AllocationResult& allocation);
  // Takes back what Add added: an exclusive device is free again; a share gives back the capacity
  // it consumed, but its device stays held (other shares may remain).
  void Remove(const AllocationResult& allocation);
  bool Holds(const DeviceId& id) const { return exclusive.contains(id) || shared.contains(id); }
};

}  // namespace tessel::dra
