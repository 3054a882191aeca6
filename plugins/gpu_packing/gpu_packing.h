// GpuPacking (Score): the FGD paper's packing baseline: fill shared GPUs first, then partly
// used nodes, and open fully free nodes last (small nodes before large ones). CPU-only pods
// score 0. For a GPU pod:
//   max(100 - floor(floor(r * 100 / 1000) / 10), 50)  a sharing pod that fits on a GPU already
//                                                     in use; r = the free milli, before
//                                                     placement, of its best-fit GPU
//   max(50 - k, 33)                                   the pod takes k fully free GPUs on a partly
//                                                     used node (a sharing pod opening a GPU: k=1)
//   max(33 - G, G)                                    the node's G GPUs are all free
// Devices: default (best fit).
#pragma once

#include "plugins/gpu_share/gpu_policy.h"
#include "scheduler/framework/registry.h"

namespace tessel::gpu_packing {

class GpuPacking final : public gpu::GpuPolicy {
 public:
  static constexpr std::string_view kName = "GpuPacking";
  static absl::StatusOr<std::unique_ptr<GpuPacking>> New(Handle& handle);  // takes no args
  std::string_view Name() const override { return kName; }

 protected:
  int64_t ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const override;
};

}  // namespace tessel::gpu_packing
