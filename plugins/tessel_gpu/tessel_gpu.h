// Tessel (PreFilter, PreScore, Score, PreAssume): Tessel's default GPU policy. It descends the
// fragmentation gradient of FGD (plugins/fgd, Weng et al., ATC'23) and adds whole-node
// preservation, which the inflation experiment (bench/inflate; numbers in docs/gpu.md) shows to
// lower unallocated GPU on every openb workload shipped:
//   - Gradient: floor(100 * sigmoid(dF / scale)). The scale is FGD's 1000 milli-GPU, raised in
//     proportion to the multi-GPU pods' share of the target workload's GPU milli, up to 2000 at a
//     share of 15% (AutoSigmoidScaleMilli). Coarser buckets leave more nodes tied, so the
//     preservation tie-break below decides more often; that pays off when multi-GPU jobs are a
//     large part of the demand and costs on sharing-heavy mixes (docs/gpu.md). Ranking by the
//     exact dF instead is *worse* than FGD (about +1 pp): nodes whose fragmentation changes by a
//     similar amount are equally good for the future, and sending every pod to the arg-max
//     drains one kind of node. The integer buckets leave near-equal nodes tied, and ties fall
//     to the seeded node order.
//   - Whole-node preservation: among nodes tied on the gradient, a node already in use (any GPU
//     or CPU allocated) wins over an idle one, so idle nodes stay whole for the large jobs that
//     the count-weighted target workload under-weights (8-GPU pods: 0.5% of pods, 6% of GPUs).
// Devices: like FGD, a fractional pod goes to the first device with the best score.
// The target workload is FGD's: configured, or learned from the pods seen (target_workload.h).
// Raw scores are (gradient score * 2 + in-use); NormalizeScore maps the best to 100 and the
// rest to 0..99, so the order survives other plugins' weights as far as possible.
//
// Args: target_workload.h's, plus {sigmoidScaleMilli: <auto>, preserveIdleNodes: true}.
// sigmoidScaleMilli, when given, fixes the scale (1000 is FGD's); absent, it follows the workload.
#pragma once

#include "plugins/fgd/fgd.h"
#include "scheduler/framework/registry.h"

namespace tessel::tessel_gpu {

// 1000 + 1000 * min(1, s / 15%), s = the share of the workload's GPU milli (weight * gpu_milli *
// num_gpu) requested by classes with num_gpu > 1. 1000 (FGD's) with no multi-GPU class.
int64_t AutoSigmoidScaleMilli(const fgd::FragModel& model);

struct Options {
  int64_t sigmoid_scale_milli = 0;  // 0: AutoSigmoidScaleMilli of the current target workload
  bool preserve_idle_nodes = true;
};

class Tessel final : public gpu::GpuPolicy, public PreFilterPlugin {
 public:
  static constexpr std::string_view kName = "Tessel";
  static absl::StatusOr<std::unique_ptr<Tessel>> New(const YAML::Node& args, Handle& handle);
  Tessel(fgd::TargetWorkload workload, Options options);
  std::string_view Name() const override { return kName; }

  Status PreFilter(CycleState& state, const Pod& pod) override;
  Status NormalizeScore(const CycleState& state, const Pod& pod, NodeScoreList& scores) const override;

  using Choice = fgd::DeviceChoice;  // key: larger is better
  Choice Evaluate(const gpu::PodGpu& pod, const NodeInfo& node) const;
  int64_t scale_milli() const { return scale_milli_; }

 protected:
  int64_t ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const override;
  std::optional<DeviceList> ChooseDevices(const gpu::PodGpu& pod, const GpuDemand& demand,
                                          const NodeInfo& node) override;

 private:
  void ResetScorer();

  fgd::TargetWorkload workload_;
  Options options_;
  int64_t scale_milli_ = 1000;
  fgd::SigmoidScorer sigmoid_;
};

}  // namespace tessel::tessel_gpu
