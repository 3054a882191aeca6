// Random (PreScore, Score, PreAssume): the FGD paper's Random baseline. PreScore picks one
// feasible node uniformly at random; it scores 100 and every other node 0. On the chosen node
// a fractional pod takes a random device that fits; whole GPUs the lowest-index free ones.
// The stream is seeded from the scheduler's seed (Handle::seed), so runs repeat.
//
// Args: {seed: N}   # optional; default the scheduler's seed
#pragma once

#include <optional>
#include <random>

#include "plugins/gpu_share/gpu_policy.h"
#include "scheduler/framework/registry.h"

namespace tessel::random {

struct RandomArgs {
  std::optional<uint64_t> seed;  // none: the scheduler's seed (Handle::seed)
};

class Random final : public gpu::GpuPolicy {
 public:
  static constexpr std::string_view kName = "Random";
  using Args = RandomArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<Random>> New(Args args, Handle& handle);
  explicit Random(uint64_t seed) : rng_(seed) {}
  std::string_view Name() const override { return kName; }
  ScoreResult Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  // The score depends on the node drawn from the feasible list: never cached.
  ScoreUse AppendScoreKey(const CycleState&, const Pod&, std::string&) const override {
    return ScoreUse::kOther;
  }

 protected:
  int64_t ScoreNode(const gpu::PodGpu&, const NodeInfo&) const override { return 0; }
  Status AfterPreScore(CycleState& state, const gpu::PodGpu& pod,
                       const std::vector<const NodeInfo*>& feasible) override;
  std::optional<DeviceList> ChooseDevices(const gpu::PodGpu& pod, const gpu::GpuDemand& demand,
                                          const NodeInfo& node) override;

 private:
  std::mt19937_64 rng_;
};

}  // namespace tessel::random
