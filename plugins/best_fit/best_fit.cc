// BestFit: least leftover wins (see best_fit.h).
#include "plugins/best_fit/best_fit.h"

#include "scheduler/framework/plugin_util.h"

namespace tessel::best_fit {

int64_t BestFitRaw(int64_t cpu_after, int64_t gpu_after, int64_t max_cpu, int64_t max_gpu) {
  // 100 - 50 cpu/C - 50 gpu/G = (100 C G - 50 (G cpu + C gpu)) / (C G)
  using i128 = __int128;
  const i128 den = i128{max_cpu} * max_gpu;
  const gpu::NodeScale scale{.max_cpu_milli = max_cpu, .max_gpu_milli = max_gpu};
  const i128 num = 100 * den - 50 * scale.Leftover(cpu_after, gpu_after);
  i128 q = num / den;
  if (num % den != 0 && num < 0) --q;
  return static_cast<int64_t>(q);
}

void MinMaxNormalize(NodeScoreList& scores) {
  if (scores.empty()) return;
  int64_t lo = scores.front().score, hi = lo;
  for (const NodeScore& s : scores) {
    lo = std::min(lo, s.score);
    hi = std::max(hi, s.score);
  }
  for (NodeScore& s : scores) s.score = hi == lo ? 0 : (s.score - lo) * kMaxNodeScore / (hi - lo);
}

absl::StatusOr<BestFitArgs> BestFit::ParseArgs(const YAML::Node& args) {
  return gpu::ParseNodeScale(kName, args);
}

absl::StatusOr<std::unique_ptr<BestFit>> BestFit::New(Args args, Handle&) {
  return std::make_unique<BestFit>(args.max_cpu_milli, args.max_gpu_milli);
}

int64_t BestFit::ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const {
  return BestFitRaw(node.FreeMilliCpu() - pod.cpu_milli,
                    node.gpus().total_free_milli() - pod.request.total_milli(), max_cpu_, max_gpu_);
}

}  // namespace tessel::best_fit
