// A pod as the GPU code sees it: its GPU request (gpu_devices.h), CPU and memory, and the GPU
// models it allows. Parsed once per scheduling cycle by the GPU plugins (gpu_policy.h keeps it
// in the CycleState); the fragmentation measure and the learned workload class pods by it.
#pragma once

#include <string>
#include <vector>

#include "scheduler/api/objects.h"
#include "scheduler/gpu/gpu_devices.h"

namespace tessel::gpu {

struct PodGpu {
  GpuRequest request;
  int64_t cpu_milli = 0;
  int64_t memory = 0;
  // GPU models the pod allows (from a required nvidia.com/gpu.product In [...] term or a
  // nodeSelector on that label); empty = any.
  std::vector<std::string> models;
};
PodGpu MakePodGpu(const Pod& pod);
// The GPU models a pod's required affinity or nodeSelector restricts it to (empty = any).
std::vector<std::string> AllowedGpuModels(const Pod& pod);

}  // namespace tessel::gpu
