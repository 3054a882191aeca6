// A pod's GPU view (see pod_gpu.h).
#include "scheduler/gpu/pod_gpu.h"

namespace tessel::gpu {

std::vector<std::string> AllowedGpuModels(const Pod& pod) {
  std::vector<std::string> out;
  if (auto it = pod.node_selector.find(kGpuProductLabel); it != pod.node_selector.end()) {
    out.push_back(it->second);
    return out;
  }
  // One required term restricting the product with In: the bench's gpu_spec, or a user's.
  if (!pod.node_affinity.required.has_value() || pod.node_affinity.required->size() != 1) return out;
  for (const NodeSelectorRequirement& r : pod.node_affinity.required->front().match_expressions) {
    if (r.key == kGpuProductLabel && r.op == NodeSelectorRequirement::Operator::kIn) {
      out = r.values;
    }
  }
  return out;
}

PodGpu MakePodGpu(const Pod& pod) {
  return PodGpu{.request = ReadGpuRequest(pod),
                .cpu_milli = pod.requests.milli_cpu,
                .memory = pod.requests.memory,
                .models = AllowedGpuModels(pod)};
}

}  // namespace tessel::gpu
