// DotProd (Score): the FGD paper's dot-product baseline (after Tetris). With C and G the
// largest node's CPU and GPU milli (args; the paper's cluster: 128000 and 8000):
//   score = 0                                                        if free CPU < request
//         = floor(100 * (1 - (cpuFree*cpuReq/C^2 + gpuFree*gpuReq/G^2) / 2))   otherwise
// where gpuFree is the node's free GPU milli in total and gpuReq = GPUs x milli per GPU.
// Exact: evaluated as one fraction in 128-bit integers. Devices: default (best fit).
//
// Args: {maxCpuMilli: 128000, maxGpuMilli: 8000}
#pragma once

#include "plugins/gpu_share/gpu_policy.h"
#include "scheduler/framework/registry.h"

namespace tessel::dot_prod {

using DotProdArgs = gpu::NodeScale;

int64_t DotProdScore(int64_t cpu_free, int64_t cpu_req, int64_t gpu_free, int64_t gpu_req,
                     int64_t max_cpu, int64_t max_gpu);

class DotProd final : public gpu::GpuPolicy {
 public:
  static constexpr std::string_view kName = "DotProd";
  using Args = DotProdArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<DotProd>> New(Args args, Handle& handle);
  DotProd(int64_t max_cpu, int64_t max_gpu) : max_cpu_(max_cpu), max_gpu_(max_gpu) {}
  std::string_view Name() const override { return kName; }

 protected:
  int64_t ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const override;

 private:
  int64_t max_cpu_, max_gpu_;
};

}  // namespace tessel::dot_prod
