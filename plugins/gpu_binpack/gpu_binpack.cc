// GpuBinPack: fill the fullest GPU nodes first (see gpu_binpack.h).
#include "plugins/gpu_binpack/gpu_binpack.h"

#include "scheduler/framework/plugin_util.h"

namespace tessel::gpu_binpack {

absl::StatusOr<std::unique_ptr<GpuBinPack>> GpuBinPack::New(const YAML::Node& args, Handle&) {
  ArgsReader reader(args);
  if (absl::Status st = reader.OnlyKeys({"gpuWeight", "cpuWeight"}); !st.ok()) return st;
  auto g = reader.Int("gpuWeight", 9, 0, 100);
  if (!g.ok()) return g.status();
  auto c = reader.Int("cpuWeight", 1, 0, 100);
  if (!c.ok()) return c.status();
  if (*g + *c == 0) return absl::InvalidArgumentError("args.gpuWeight: gpuWeight + cpuWeight must be > 0");
  return std::make_unique<GpuBinPack>(*g, *c);
}

int64_t GpuBinPack::ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const {
  const GpuDevices& gpus = node.gpus();
  const int64_t cpu_alloc = node.allocatable().milli_cpu;
  const int64_t cpu_used = std::min(cpu_alloc, node.requested().milli_cpu + pod.cpu_milli);
  const int64_t gpu_cap = gpus.inventory().capacity_milli();
  int64_t gpu_after = gpus.total_allocated_milli();
  if (gpu_cap > 0) {
    const GpuDemand demand = DemandOn(pod.request, gpus.inventory());
    if (demand.kind == GpuDemand::Kind::kSlots) {
      gpu_after += int64_t{demand.count} * kMilliPerGpu / gpus.inventory().replicas;
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
