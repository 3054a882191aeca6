// DotProd: Tetris-style alignment score (see dot_prod.h).
#include "plugins/dot_prod/dot_prod.h"

#include "scheduler/framework/plugin_util.h"

namespace tessel::dot_prod {

int64_t DotProdScore(int64_t cpu_free, int64_t cpu_req, int64_t gpu_free, int64_t gpu_req,
                     int64_t max_cpu, int64_t max_gpu) {
  if (cpu_free < cpu_req) return 0;
  using i128 = __int128;
  const i128 c2 = i128{max_cpu} * max_cpu, g2 = i128{max_gpu} * max_gpu;
  // 100 * (1 - (a/C^2 + b/G^2) / 2) = (100 C^2 G^2 - 50 a G^2 - 50 b C^2) / (C^2 G^2)
  const i128 num = 100 * c2 * g2 - 50 * i128{cpu_free} * cpu_req * g2 - 50 * i128{gpu_free} * gpu_req * c2;
  const i128 den = c2 * g2;
  i128 q = num / den;
  if (num % den != 0 && num < 0) --q;
  return static_cast<int64_t>(std::clamp<i128>(q, kMinNodeScore, kMaxNodeScore));
}

absl::StatusOr<DotProdArgs> DotProd::ParseArgs(const YAML::Node& args) {
  return gpu::ParseNodeScale(kName, args);
}

absl::StatusOr<std::unique_ptr<DotProd>> DotProd::New(Args args, Handle&) {
  return std::make_unique<DotProd>(args.max_cpu_milli, args.max_gpu_milli);
}

int64_t DotProd::ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const {
  return DotProdScore(node.FreeMilliCpu(), pod.cpu_milli, node.gpus().total_free_milli(),
                      pod.request.total_milli(), max_cpu_, max_gpu_);
}

}  // namespace tessel::dot_prod
