// GpuClustering (Score): the FGD paper's clustering baseline: pods of one kind (sharing pods,
// or whole-GPU pods with the same GPU count) are kept together. CPU-only pods score 0; a GPU
// pod scores floor(25 * (G - gpuFree) / G) (G: largest node's GPU milli, gpuFree: the node's
// free GPU milli, clamped to 0..G) plus a base:
//   75  the node holds only GPU pods of the pod's kind
//   50  it holds that kind among others
//   25  it holds no GPU pods
//    0  it holds only other kinds
// Devices: default (best fit).
//
// Args: {maxGpuMilli: 8000}
#pragma once

#include "plugins/gpu_share/gpu_policy.h"
#include "scheduler/framework/registry.h"

namespace tessel::gpu_clustering {

struct GpuClusteringArgs {
  int64_t max_gpu_milli = 8000;
};

class GpuClustering final : public gpu::GpuPolicy {
 public:
  static constexpr std::string_view kName = "GpuClustering";
  using Args = GpuClusteringArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<GpuClustering>> New(Args args, Handle& handle);
  explicit GpuClustering(int64_t max_gpu) : max_gpu_(max_gpu) {}
  std::string_view Name() const override { return kName; }

 protected:
  int64_t ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const override;

 private:
  int64_t max_gpu_;
};

}  // namespace tessel::gpu_clustering
