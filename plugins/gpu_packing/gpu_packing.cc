// GpuPacking: shared GPUs first, then partly used nodes, then free nodes (see gpu_packing.h).
#include "plugins/gpu_packing/gpu_packing.h"

namespace tessel::gpu_packing {

absl::StatusOr<std::unique_ptr<GpuPacking>> GpuPacking::New(Handle&) {
  return std::make_unique<GpuPacking>();
}

int64_t GpuPacking::ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const {
  if (!pod.request.needs_devices()) return 0;
  const gpu::GpuDevices& gpus = node.gpus();
  const int64_t g = gpus.count();
  if (g > 0 && gpus.whole_free_devices() == g) return std::max<int64_t>(33 - g, g);
  const gpu::GpuDemand demand = gpu::DemandOn(pod.request, gpus.inventory());
  int64_t k = demand.count;
  if (demand.kind == gpu::GpuDemand::Kind::kMilli || demand.kind == gpu::GpuDemand::Kind::kSlots) {
    std::optional<DeviceList> d = gpus.DefaultChoice(demand);
    if (!d.has_value() || d->empty()) return 0;
    const int64_t r = gpus.FreeMilli(d->front());
    if (r < gpu::kMilliPerGpu) return std::max<int64_t>(100 - (r * 100 / 1000) / 10, 50);
    k = 1;
  }
  return std::max<int64_t>(50 - k, 33);
}

}  // namespace tessel::gpu_packing
