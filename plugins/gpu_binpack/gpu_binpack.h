// GpuBinPack (Score): MostAllocated on GPUs, with CPU as the tie-break. After placing the pod,
//   score = (gpuWeight * gpuUsed / gpuCapacity + cpuWeight * cpuUsed / cpuAllocatable) * 100
//           / (gpuWeight + cpuWeight)
// in GPU-equivalent milli (3 replicas of one GPU count as one GPU) and integers. A node without
// GPUs has only the CPU term. Devices: default (best fit).
//
// Args: {gpuWeight: 9, cpuWeight: 1}
#pragma once

#include "plugins/gpu_share/gpu_policy.h"
#include "scheduler/framework/registry.h"

namespace tessel::gpu_binpack {

struct GpuBinPackArgs {
  int64_t gpu_weight = 9;  // 0..100; gpu_weight + cpu_weight > 0
  int64_t cpu_weight = 1;  // 0..100
};

class GpuBinPack final : public gpu::GpuPolicy {
 public:
  static constexpr std::string_view kName = "GpuBinPack";
  using Args = GpuBinPackArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<GpuBinPack>> New(Args args, Handle& handle);
  GpuBinPack(int64_t gpu_weight, int64_t cpu_weight) : gpu_weight_(gpu_weight), cpu_weight_(cpu_weight) {}
  std::string_view Name() const override { return kName; }

 protected:
  int64_t ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const override;

 private:
  int64_t gpu_weight_, cpu_weight_;
};

}  // namespace tessel::gpu_binpack
