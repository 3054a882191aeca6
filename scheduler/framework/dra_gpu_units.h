// DRA devices as GPU units for the GPU policy, so that nodes whose GPUs come through Dynamic
// Resource Allocation and nodes with the device plugin are scored as one cluster, by one rule.
//
// The GPU policy (FGD, Tessel: plugins/fgd) writes its target workload into the cycle state at
// PreFilter (GpuWorkloadState). DynamicResources (plugins/dynamic_resources) then chooses among a
// node's allocations by the least expected fragmentation under it (dra::LeastFragmentation),
// and for a pod with DRA devices to allocate it answers the policy, per node, with the node's GPU
// units (dra::UnitFreeMilli) before and after the allocation Reserve would make there. The policy
// scores that shape as it scores a device-plugin node's GPUs; DynamicResources then does not
// score nodes itself (its own packing score serves profiles without such a policy). A pod whose
// GPUs come only through its own claims has no GPU request for a learned workload to count at
// PreFilter: DynamicResources tells the policy at Reserve what its allocation took
// (GpuWorkloadLearner, ClassOfUnits).
//
//   if (const DraGpuUnits* dra = DraGpuUnitsOf(state)) {
//     std::optional<GpuUnitsOnNode> units = dra->UnitsOn(state, pod, node, model);
//   }
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "scheduler/framework/cycle_state.h"
#include "scheduler/gpu/fragmentation.h"
#include "scheduler/state/node_info.h"

namespace tessel {

// The GPU policy's target workload for this cycle (a snapshot: it stays as it was when the
// policy's PreFilter ran, so Score and Reserve choose alike).
class GpuWorkloadLearner {
 public:
  virtual ~GpuWorkloadLearner() = default;
  // The pod took `placed` through DRA; a learned workload counts it (once per pod).
  virtual void ObserveDraPlacement(const Pod& pod, const gpu::TargetClass& placed) = 0;
};
struct GpuWorkloadState {
  std::shared_ptr<const gpu::FragModel> model;
  GpuWorkloadLearner* learner = nullptr;
};
inline constexpr std::string_view kGpuWorkloadStateKey = "tessel.io/gpu-workload";
// The workload the policy wrote; null without a GPU policy that scores DRA units.
const gpu::FragModel* GpuWorkloadOf(const CycleState& state);

// A node's GPU units, free milli each (1000 = whole), before and after the pod's allocation.
struct GpuUnitsOnNode {
  std::vector<int64_t> before;
  std::vector<int64_t> after;
};

class DraGpuUnits {
 public:
  virtual ~DraGpuUnits() = default;
  // nullopt when the pod takes no DRA device on the node (or its claims do not fit there).
  virtual std::optional<GpuUnitsOnNode> UnitsOn(const CycleState& state, const Pod& pod, const NodeInfo& node,
                                                const gpu::FragModel& workload) const = 0;
};
// The class of a DRA allocation: the units it takes (num_gpu), the most it takes of one
// (gpu_milli, 1000 for whole units) and the pod's CPU; num_gpu 0 when it takes no unit.
gpu::TargetClass ClassOfUnits(const GpuUnitsOnNode& units, int64_t cpu_milli);

inline constexpr std::string_view kDraGpuUnitsStateKey = "DynamicResources/gpu-units";
// What DynamicResources wrote for a pod with DRA devices to allocate; null otherwise.
const DraGpuUnits* DraGpuUnitsOf(const CycleState& state);

}  // namespace tessel
