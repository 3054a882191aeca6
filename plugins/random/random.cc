// Random: a uniformly random feasible node (see random.h).
#include "plugins/random/random.h"

#include "scheduler/framework/plugin_util.h"
#include "scheduler/util/status_macros.h"

namespace tessel::random {
namespace {
constexpr std::string_view kStateKey = "Random.node";
}  // namespace

absl::StatusOr<RandomArgs> Random::ParseArgs(const YAML::Node& yaml) {
  ArgsReader reader = ArgsReader::Of(kName, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"seed"}));
  // -1 (as absent) stands for the scheduler's seed.
  ASSIGN_OR_RETURN(const int64_t seed, reader.Int("seed", -1, -1, std::numeric_limits<int64_t>::max()));
  Args args;
  if (seed >= 0) args.seed = static_cast<uint64_t>(seed);
  return args;
}

absl::StatusOr<std::unique_ptr<Random>> Random::New(Args args, Handle& handle) {
  return std::make_unique<Random>(args.seed.value_or(handle.seed()));
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

std::optional<DeviceList> Random::ChooseDevices(const gpu::PodGpu&, const gpu::GpuDemand& demand,
                                                const NodeInfo& node) {
  if (demand.kind != gpu::GpuDemand::Kind::kMilli) return std::nullopt;
  DeviceList fitting;
  for (int32_t i = 0; i < node.gpus().count(); ++i) {
    if (node.gpus().DeviceFits(i, demand.milli, demand.memory_bytes)) fitting.push_back(i);
  }
  if (fitting.empty()) return std::nullopt;
  return DeviceList{fitting[rng_() % fitting.size()]};
}

}  // namespace tessel::random
