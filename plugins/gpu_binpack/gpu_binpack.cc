// GpuBinPack: fill the fullest GPU nodes first (see gpu_binpack.h).
#include "plugins/gpu_binpack/gpu_binpack.h"

#include "scheduler/framework/plugin_util.h"
#include "scheduler/util/status_macros.h"

namespace tessel::gpu_binpack {

absl::StatusOr<GpuBinPackArgs> GpuBinPack::ParseArgs(const YAML::Node& yaml) {
  ArgsReader reader = ArgsReader::Of(kName, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"gpuWeight", "cpuWeight"}));
  Args args;
  ASSIGN_OR_RETURN(args.gpu_weight, reader.Int("gpuWeight", args.gpu_weight, 0, 100));
  ASSIGN_OR_RETURN(args.cpu_weight, reader.Int("cpuWeight", args.cpu_weight, 0, 100));
  if (args.gpu_weight + args.cpu_weight == 0) return reader.Error("gpuWeight", "gpuWeight + cpuWeight must be > 0");
  return args;
}

absl::StatusOr<std::unique_ptr<GpuBinPack>> GpuBinPack::New(Args args, Handle&) {
  return std::make_unique<GpuBinPack>(args.gpu_weight, args.cpu_weight);
}

int64_t GpuBinPack::ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const {
  const gpu::GpuDevices& gpus = node.gpus();
  const int64_t cpu_alloc = node.allocatable().milli_cpu;
  const int64_t cpu_used = std::min(cpu_alloc, node.requested().milli_cpu + pod.cpu_milli);
  const int64_t gpu_cap = gpus.inventory().capacity_milli();
  int64_t gpu_after = gpus.total_allocated_milli();
  if (gpu_cap > 0) {
    const gpu::GpuDemand demand = gpu::DemandOn(pod.request, gpus.inventory());
    if (demand.kind == gpu::GpuDemand::Kind::kSlots) {
      gpu_after += int64_t{demand.count} * gpu::kMilliPerGpu / gpus.inventory().replicas;
    } else {
      gpu_after += pod.request.total_milli();
    }
    gpu_after = std::min(gpu_after, gpu_cap);
  }
  using i128 = __int128;
  const i128 cpu_term = cpu_alloc > 0 ? i128{cpu_weight_} * cpu_used * kMaxNodeScore / cpu_alloc : 0;
  if (gpu_cap == 0) return static_cast<int64_t>(cpu_term / (gpu_weight_ + cpu_weight_));
  const i128 gpu_term = i128{gpu_weight_} * gpu_after * kMaxNodeScore / gpu_cap;
  return static_cast<int64_t>((gpu_term + cpu_term) / (gpu_weight_ + cpu_weight_));
}

}  // namespace tessel::gpu_binpack
