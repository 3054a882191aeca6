// Choosing among complete allocations. The allocator can enumerate several alternatives for a
// pod's claims on a node (allocator.h, AllocatorOptions::max_alternatives); a DeviceChoice picks
// one. Without a choice the allocator takes the first it finds, as kube-scheduler does.
//
// KeepWholeDevices is the first fragmentation-aware policy: it keeps whole counter sets (a GPU
// whose partitions are all free) and then whole devices untouched, so that a later request for a
// whole GPU, or for many, still finds them. LeastFragmentation is FGD's rule over the same
// devices: a node's GPU units (UnitFreeMilli: each partitionable GPU, each device without
// partitions) are a shape as scheduler/gpu/fragmentation.h measures device-plugin GPUs, and the
// alternative that leaves the least expected fragmentation under the target workload wins (so
// the GPU policy scores DRA nodes and device-plugin nodes as one cluster: plugins/fgd).
//
//   KeepWholeDevices choice;
//   AllocatorOptions options{.matcher = &cel, .choice = &choice, .max_alternatives = 16};
//   LeastFragmentation fgd(workload, node_outside_units);  // or by expected fragmentation
#pragma once

#include <cstddef>
#include <vector>

#include "scheduler/dra/objects.h"
#include "scheduler/dra/pools.h"
#include "scheduler/gpu/fragmentation.h"

namespace tessel::dra {

// One newly allocated device of an alternative.
struct Pick {
  int candidate = 0;  // index into NodeDevices::candidates
  int claim = 0;      // index into the claims being allocated
  bool admin_access = false;
  bool shared = false;  // a share of a device that allows multiple allocations
  Amounts consumed_capacity;
};

// A complete allocation of a pod's claims on one node.
struct Alternative {
  std::vector<Pick> picks;
  std::vector<AllocationResult> allocations;  // one per claim, in the order given
};

class DeviceChoice {
 public:
  virtual ~DeviceChoice() = default;
  // The index of the alternative to take. `alternatives` is non-empty and in search order.
  virtual size_t Choose(const NodeDevices& devices, const AllocatedDevices& allocated,
                        const std::vector<Alternative>& alternatives) const = 0;
};

// What an alternative leaves whole on the node.
struct WholeLeft {
  int counter_sets = 0;  // counter sets nothing consumes from
  int devices = 0;       // usable devices nobody holds whose counter sets are all whole
  int plain_devices = 0; // of those, the ones that consume no counters (not partitions)
  auto operator<=>(const WholeLeft&) const = default;
  // Whole units: a partitionable GPU (its counter set) or a device without partitions.
  int units() const { return counter_sets + plain_devices; }
};
WholeLeft MeasureWholeLeft(const NodeDevices& devices, const AllocatedDevices& allocated,
                           const std::vector<Pick>& picks);

// How a node packs after an allocation, 0..100, for scoring nodes the way Tessel packs GPUs: a
// node already in use (some unit held) scores 50 more than an idle one, so idle nodes stay whole
// for large jobs; then the share of the node's whole units held after the allocation (0..50),
// so the tightest fit wins and whole units elsewhere stay free. 0 on a node without units.
int64_t PackingScore(const NodeDevices& devices, const AllocatedDevices& allocated, const std::vector<Pick>& picks);

// Most whole counter sets left, then most whole devices; the earliest alternative on a tie.
class KeepWholeDevices : public DeviceChoice {
 public:
  size_t Choose(const NodeDevices& devices, const AllocatedDevices& allocated,
                const std::vector<Alternative>& alternatives) const override;
};

// The node's GPU units and how much of each is free, in milli (1000 = whole), after `picks`
// besides what `allocated` holds: every counter set of a usable pool (a partitionable GPU: the
// smallest share left of its counters, 0 once a partition takes all of one), then every device
// of a usable pool that consumes no counters (1000 free, 0 held; a device that allows multiple
// allocations: the smallest share left of its capacities). Admin access holds nothing. In pool
// order, then counter set name, then device order: the same units in the same order for every
// alternative on a node.
std::vector<int64_t> UnitFreeMilli(const NodeDevices& devices, const AllocatedDevices& allocated,
                                   const std::vector<Pick>& picks);

// FGD over the node's units: among the alternatives that take the least of the units (a claim of
// two devices of a class with whole GPUs and halves takes two halves), the one whose units leave
// the least expected fragmentation under `workload` (FragModel::NodeFrag of the units, with
// `node`'s CPU and GPU model); then KeepWholeDevices' order, then the earliest. `node`'s devices are ignored (its cpu_free is the
// node's after the pod). An empty workload leaves the choice to KeepWholeDevices.
class LeastFragmentation : public DeviceChoice {
 public:
  LeastFragmentation(const gpu::FragModel& workload, const gpu::NodeShape& node) : workload_(workload), node_(node) {}
  size_t Choose(const NodeDevices& devices, const AllocatedDevices& allocated,
                const std::vector<Alternative>& alternatives) const override;

 private:
  const gpu::FragModel& workload_;
  gpu::NodeShape node_;
};

}  // namespace tessel::dra
