// The cycle-state hand-off between the GPU policy and DynamicResources (see dra_gpu_units.h).
#include "scheduler/framework/dra_gpu_units.h"

#include <algorithm>

namespace tessel {

const gpu::FragModel* GpuWorkloadOf(const CycleState& state) {
  const GpuWorkloadState* s = state.ReadValue<GpuWorkloadState>(kGpuWorkloadStateKey);
  return s == nullptr ? nullptr : s->model.get();
}

const DraGpuUnits* DraGpuUnitsOf(const CycleState& state) {
  const DraGpuUnits* const* p = state.ReadValue<const DraGpuUnits*>(kDraGpuUnitsStateKey);
  return p == nullptr ? nullptr : *p;
}

gpu::TargetClass ClassOfUnits(const GpuUnitsOnNode& units, int64_t cpu_milli) {
  gpu::TargetClass c{.cpu_milli = cpu_milli};
  for (size_t i = 0; i < units.before.size() && i < units.after.size(); ++i) {
    const int64_t taken = units.before[i] - units.after[i];
    if (taken <= 0) continue;
    ++c.num_gpu;
    c.gpu_milli = std::max(c.gpu_milli, taken);
  }
  return c;
}

}  // namespace tessel
