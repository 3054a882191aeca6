// BestFit (Score): the FGD paper's best-fit baseline: the node left with the least resources
// after placement wins. With C and G the largest node's CPU and GPU milli (args):
//   raw = floor(100 * (1 - [(cpuFree - cpuReq) / (2C) + (gpuFree - gpuReq) / (2G)]))
// then min-max scaled over the feasible nodes: (raw - min) * 100 / (max - min), truncated
// (all 0 when equal). Exact integers. Devices: default (best fit).
//
// Args: {maxCpuMilli: 128000, maxGpuMilli: 8000}
#pragma once

#include "plugins/gpu_share/gpu_policy.h"
#include "scheduler/framework/registry.h"

namespace tessel::best_fit {

using BestFitArgs = gpu::NodeScale;

int64_t BestFitRaw(int64_t cpu_after, int64_t gpu_after, int64_t max_cpu, int64_t max_gpu);
// (raw - min) * 100 / (max - min), or all 0.
void MinMaxNormalize(NodeScoreList& scores);

class BestFit final : public gpu::GpuPolicy {
 public:
  static constexpr std::string_view kName = "BestFit";
  using Args = BestFitArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<BestFit>> New(Args args, Handle& handle);
  BestFit(int64_t max_cpu, int64_t max_gpu) : max_cpu_(max_cpu), max_gpu_(max_gpu) {}
  std::string_view Name() const override { return kName; }
  Status NormalizeScore(const CycleState&, const Pod&, NodeScoreList& scores) const override {
    MinMaxNormalize(scores);
    return Status::Ok();
  }

 protected:
  int64_t ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const override;

 private:
  int64_t max_cpu_, max_gpu_;
};

}  // namespace tessel::best_fit
