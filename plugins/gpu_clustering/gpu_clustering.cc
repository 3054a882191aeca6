// GpuClustering: keep pods of one kind together (see gpu_clustering.h).
#include "plugins/gpu_clustering/gpu_clustering.h"

#include "scheduler/framework/plugin_util.h"
#include "scheduler/util/status_macros.h"

namespace tessel::gpu_clustering {

absl::StatusOr<GpuClusteringArgs> GpuClustering::ParseArgs(const YAML::Node& yaml) {
  ArgsReader reader = ArgsReader::Of(kName, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"maxGpuMilli"}));
  Args args;
  ASSIGN_OR_RETURN(args.max_gpu_milli, reader.Int("maxGpuMilli", args.max_gpu_milli, 1, int64_t{1} << 32));
  return args;
}

absl::StatusOr<std::unique_ptr<GpuClustering>> GpuClustering::New(Args args, Handle&) {
  return std::make_unique<GpuClustering>(args.max_gpu_milli);
}

int64_t GpuClustering::ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const {
  const gpu::GpuRequest& req = pod.request;
  if (!req.needs_devices()) return 0;
  const gpu::GpuDevices& gpus = node.gpus();
  const gpu::GpuDemand demand = gpu::DemandOn(req, gpus.inventory());
  const bool sharing = demand.kind == gpu::GpuDemand::Kind::kMilli || demand.kind == gpu::GpuDemand::Kind::kSlots;
  const int32_t same = sharing ? gpus.sharing_pods() : gpus.whole_pods(demand.count);
  const int32_t others = gpus.gpu_pods() - same;
  int64_t base = 0;
  if (gpus.gpu_pods() == 0) {
    base = 25;
  } else if (others == 0) {
    base = 75;
  } else if (same > 0) {
    base = 50;
  }
  const int64_t used = max_gpu_ - std::clamp<int64_t>(gpus.total_free_milli(), 0, max_gpu_);
  return base + 25 * used / max_gpu_;
}

}  // namespace tessel::gpu_clustering
