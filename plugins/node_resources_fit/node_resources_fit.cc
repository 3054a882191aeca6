#include "plugins/node_resources_fit/node_resources_fit.h"

#include <algorithm>

#include "scheduler/util/strings.h"
#include "scheduler/framework/plugin_util.h"

namespace tessel::node_resources_fit {

absl::StatusOr<Args> ParseArgs(const YAML::Node& node) {
  ArgsReader reader(node);
  if (absl::Status st = reader.OnlyKeys({"scoringStrategy", "ignoredResources"}); !st.ok()) return st;
  Args args;
  if (YAML::Node strategy = reader.Child("scoringStrategy"); strategy && !strategy.IsNull()) {
    ArgsReader s(strategy);
    if (absl::Status st = s.OnlyKeys({"type", "resources"}); !st.ok()) {
      return absl::InvalidArgumentError(StrCat("scoringStrategy: ", st.message()));
    }
    auto type = s.String("type", "LeastAllocated");
    if (!type.ok()) return type.status();
    if (*type == "MostAllocated") {
      args.strategy = Strategy::kMostAllocated;
    } else if (*type != "LeastAllocated") {
      return absl::InvalidArgumentError(StrCat(
          "args.scoringStrategy.type: unknown \"", *type, "\" (want LeastAllocated or MostAllocated)"));
    }
    if (YAML::Node res = s.Child("resources"); res && !res.IsNull()) {
      if (!res.IsSequence() || res.size() == 0) {
        return absl::InvalidArgumentError("args.scoringStrategy.resources: want a non-empty list");
      }
      args.resources.clear();
      for (size_t i = 0; i < res.size(); ++i) {
        ArgsReader item(res[i]);
        auto name = item.String("name", "");
        auto weight = item.Int("weight", 1, 1, 100);
        if (!name.ok() || name->empty() || !weight.ok()) {
          return absl::InvalidArgumentError(StrCat(
              "args.scoringStrategy.resources[", i, "]: want {name: <resource>, weight: 1..100}"));
        }
        args.resources.push_back({*name, *weight});
      }
    }
  }
  if (YAML::Node ignored = reader.Child("ignoredResources"); ignored && !ignored.IsNull()) {
    if (!ignored.IsSequence()) return absl::InvalidArgumentError("args.ignoredResources: want a list");
    for (const auto& item : ignored) args.ignored.push_back(item.as<std::string>());
  }
  return args;
}

absl::StatusOr<std::unique_ptr<NodeResourcesFit>> NodeResourcesFit::New(const YAML::Node& node, Handle&) {
  auto args = ParseArgs(node);
  if (!args.ok()) return args.status();
  return std::make_unique<NodeResourcesFit>(*std::move(args));
}

std::vector<std::string> InsufficientResources(const Pod& pod, const NodeInfo& node,
                                               const std::vector<std::string>& ignored) {
  std::vector<std::string> out;
  const Resources& alloc = node.allocatable();
  const Resources& used = node.requested();
  if (used.pods + 1 > alloc.pods) out.push_back("Too many pods");
  for (const auto& [name, amount] : pod.requests.Entries()) {
    if (name == kPods || amount <= 0) continue;
    if (std::find(ignored.begin(), ignored.end(), name) != ignored.end()) continue;
    if (used.Get(name) + amount > alloc.Get(name)) out.push_back(StrCat("Insufficient ", name));
  }
  return out;
}

namespace {
// Allocation-free check for the common case (the node fits); reasons are built only on misses.
bool FitsAll(const Pod& pod, const NodeInfo& node, const std::vector<std::string>& ignored) {
  const Resources& alloc = node.allocatable();
  const Resources& used = node.requested();
  if (used.pods + 1 > alloc.pods) return false;
  const Resources& req = pod.requests;
  if ((req.milli_cpu > 0 && used.milli_cpu + req.milli_cpu > alloc.milli_cpu) ||
      (req.memory > 0 && used.memory + req.memory > alloc.memory) ||
      (req.ephemeral_storage > 0 && used.ephemeral_storage + req.ephemeral_storage > alloc.ephemeral_storage)) {
    return false;
  }
  for (const auto& [name, amount] : req.scalar) {
    if (amount <= 0 || std::find(ignored.begin(), ignored.end(), name) != ignored.end()) continue;
    if (used.Get(name) + amount > alloc.Get(name)) return false;
  }
  return true;
}
}  // namespace

Status NodeResourcesFit::Filter(const CycleState&, const Pod& pod, const NodeInfo& node) const {
  if (FitsAll(pod, node, args_.ignored)) return Status::Ok();
  std::vector<std::string> missing = InsufficientResources(pod, node, args_.ignored);
  if (missing.empty()) return Status::Ok();
  return Status(Code::kUnschedulable, std::move(missing));
}

int64_t AllocationScore(const Args& args, const Pod& pod, const NodeInfo& node) {
  int64_t weighted = 0;
  int64_t weights = 0;
  for (const ResourceWeight& r : args.resources) {
    const int64_t alloc = node.allocatable().Get(r.name);
    if (alloc <= 0) continue;
    const int64_t requested = std::min(alloc, node.requested().Get(r.name) + pod.requests.Get(r.name));
    // 128-bit: memory in bytes times 100 can pass int64 on very large nodes.
    const __int128 used_pct = static_cast<__int128>(requested) * kMaxNodeScore / alloc;
    const int64_t score = args.strategy == Strategy::kMostAllocated
                              ? static_cast<int64_t>(used_pct)
                              : static_cast<int64_t>(static_cast<__int128>(alloc - requested) *
                                                     kMaxNodeScore / alloc);
    weighted += score * r.weight;
    weights += r.weight;
  }
  return weights == 0 ? 0 : weighted / weights;
}

ScoreResult NodeResourcesFit::Score(const CycleState&, const Pod& pod, const NodeInfo& node) const {
  return {AllocationScore(args_, pod, node), Status::Ok()};
}

}  // namespace tessel::node_resources_fit
