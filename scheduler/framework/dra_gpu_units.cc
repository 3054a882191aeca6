// The cycle-state hand-off between the GPU policy and DynamicResources (see dra_gpu_units.h).
#include "scheduler/framework/dra_gpu_units.h"

namespace tessel {

const gpu::FragModel* GpuWorkloadOf(const CycleState& state) {
  const GpuWorkloadState* s = state.ReadValue<GpuWorkloadState>(kGpuWorkloadStateKey);
  return s == nullptr ? nullptr : s->model.get();
}

const DraGpuUnits* DraGpuUnitsOf(const CycleState& state) {
  const DraGpuUnits* const* p = state.ReadValue<const DraGpuUnits*>(kDraGpuUnitsStateKey);
  return p == nullptr ? nullptr : *p;
}

}  // namespace tessel
