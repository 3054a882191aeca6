#include "plugins/node_resources_fit/node_resources_fit.h"

#include <algorithm>

#include "scheduler/framework/plugin_util.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"

namespace tessel::node_resources_fit {

absl::StatusOr<NodeResourcesFitArgs> NodeResourcesFit::ParseArgs(const YAML::Node& yaml) {
  ArgsReader reader = ArgsReader::Of(kName, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"scoringStrategy", "ignoredResources"}));
  Args args;
  if (YAML::Node strategy = reader.Child("scoringStrategy"); strategy && !strategy.IsNull()) {
    ArgsReader s = reader.At("scoringStrategy");
    RETURN_IF_ERROR(s.OnlyKeys({"type", "resources"}));
    ASSIGN_OR_RETURN(std::string type, s.String("type", "LeastAllocated"));
    if (type == "MostAllocated") {
      args.strategy = Strategy::kMostAllocated;
    } else if (type != "LeastAllocated") {
      return s.Error("type", StrCat("unknown \"", type, "\" (want LeastAllocated or MostAllocated)"));
    }
    if (YAML::Node res = s.Child("resources"); res && !res.IsNull()) {
      if (!res.IsSequence() || res.size() == 0) {
        return s.Error("resources", "want a non-empty list");
      }
      args.resources.clear();
      for (size_t i = 0; i < res.size(); ++i) {
        ArgsReader item = s.Item("resources", i);
        if (!res[i].IsMap()) {
          return item.Error("", "want {name: <resource>, weight: 1..100}");
        }
        RETURN_IF_ERROR(item.OnlyKeys({"name", "weight"}));
        ASSIGN_OR_RETURN(std::string name, item.String("name", ""));
        if (name.empty()) return item.Error("name", "want a resource name");
        ASSIGN_OR_RETURN(int64_t weight, item.Int("weight", 1, 1, 100));
        args.resources.push_back({std::move(name), weight});
      }
    }
  }
  ASSIGN_OR_RETURN(args.ignored, reader.StringList("ignoredResources"));
  return args;
}

absl::StatusOr<std::unique_ptr<NodeResourcesFit>> NodeResourcesFit::New(Args args, Handle&) {
  return std::make_unique<NodeResourcesFit>(std::move(args));
}

std::vector<std::string> InsufficientResources(const Pod& pod, const NodeInfo& node,
                                               const std::vector<std::string>& ignored,
                                               const DraExtendedResources* served_by_dra) {
  std::vector<std::string> out;
  const Resources& alloc = node.allocatable();
  const Resources& used = node.requested();
  if (used.pods + 1 > alloc.pods) out.push_back("Too many pods");
  for (const auto& [name, amount] : pod.requests.Entries()) {
    if (name == kPods || amount <= 0) continue;
    if (std::find(ignored.begin(), ignored.end(), name) != ignored.end()) continue;
    if (ServedByDra(served_by_dra, name, alloc)) continue;
    if (used.Get(name) + amount > alloc.Get(name)) out.push_back(StrCat("Insufficient ", name));
  }
  return out;
}

namespace {
// Allocation-free check for the common case (the node fits); reasons are built only on misses.
bool FitsAll(const Pod& pod, const Resources& alloc, const Resources& used, const std::vector<std::string>& ignored,
             const DraExtendedResources* served_by_dra) {
  if (used.pods + 1 > alloc.pods) return false;
  const Resources& req = pod.requests;
  if ((req.milli_cpu > 0 && used.milli_cpu + req.milli_cpu > alloc.milli_cpu) ||
      (req.memory > 0 && used.memory + req.memory > alloc.memory) ||
      (req.ephemeral_storage > 0 && used.ephemeral_storage + req.ephemeral_storage > alloc.ephemeral_storage)) {
    return false;
  }
  for (const auto& [name, amount] : req.scalar) {
    if (amount <= 0 || std::find(ignored.begin(), ignored.end(), name) != ignored.end()) continue;
    if (used.Get(name) + amount > alloc.Get(name) && !ServedByDra(served_by_dra, name, alloc)) return false;
  }
  return true;
}
}  // namespace

void NodeResourcesFit::AddRoomNeed(const Pod& pod, Resources& need) const {
  Resources checked = pod.requests;
  for (const std::string& name : args_.ignored) checked.scalar.erase(name);
  need.SetMax(checked);
}

Status NodeResourcesFit::Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const {
  const DraExtendedResources* served_by_dra = DraExtendedOf(state);
  if (FitsAll(pod, node.allocatable(), node.requested(), args_.ignored, served_by_dra)) return Status::Ok();
  std::vector<std::string> missing = InsufficientResources(pod, node, args_.ignored, served_by_dra);
  if (missing.empty()) return Status::Ok();
  return Status(Code::kUnschedulable, std::move(missing));
}

bool NodeResourcesFit::MayFitAfterFreeing(const CycleState& state, const Pod& pod, const NodeInfo& node,
                                          const Resources& freed) const {
  const DraExtendedResources* served_by_dra = DraExtendedOf(state);
  if (freed.IsZero()) return FitsAll(pod, node.allocatable(), node.requested(), args_.ignored, served_by_dra);
  Resources used = node.requested();
  used.Sub(freed);
  return FitsAll(pod, node.allocatable(), used, args_.ignored, served_by_dra);
}

int64_t AllocationScore(const NodeResourcesFitArgs& args, const Pod& pod, const NodeInfo& node) {
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
