// Random: a uniformly random feasible node (see random.h).
#include "plugins/random/random.h"

#include "scheduler/framework/plugin_util.h"

namespace tessel::random {
namespace {
constexpr std::string_view kStateKey = "Random.node";
}  // namespace

absl::StatusOr<std::unique_ptr<Random>> Random::New(const YAML::Node& args, Handle& handle) {
  ArgsReader reader(args);
  if (absl::Status st = reader.OnlyKeys({"seed"}); !st.ok()) return st;
  auto seed = reader.Int("seed", -1, -1, std::numeric_limits<int64_t>::max());
  if (!seed.ok()) return seed.status();
  return std::make_unique<Random>(*seed >= 0 ? static_cast<uint64_t>(*seed) : handle.seed());
}

Status Random::AfterPreScore(CycleState& state, const gpu::PodGpu&,
                             const std::vector<const NodeInfo*>& feasible) {
  if (feasible.empty()) return Status::Ok();
  state.WriteValue<const NodeInfo*>(kStateKey, feasible[rng_() % feasible.size()]);
  return Status::Ok();
}

ScoreResult Random::Score(const CycleState& state, const Pod&, const NodeInfo& node) const {
  const NodeInfo* const* chosen = state.ReadValue<const NodeInfo*>(kStateKey);
  return {chosen != nullptr && *chosen == &node ? kMaxNodeScore : kMinNodeScore, Status::Ok()};
}

std::optional<DeviceList> Random::ChooseDevices(const gpu::PodGpu&, const GpuDemand& demand,
                                                const NodeInfo& node) {
  if (demand.kind != GpuDemand::Kind::kMilli) return std::nullopt;
  DeviceList fitting;
  for (int32_t i = 0; i < node.gpus().count(); ++i) {
    if (node.gpus().DeviceFits(i, demand.milli, demand.memory_bytes)) fitting.push_back(i);
  }
  if (fitting.empty()) return std::nullopt;
  return DeviceList{fitting[rng_() % fitting.size()]};
}

}  // namespace tessel::random
