#include "plugins/taint_toleration/taint_toleration.h"

#include "scheduler/util/strings.h"
#include "scheduler/framework/plugin_util.h"

namespace tessel::taint_toleration {

absl::StatusOr<std::unique_ptr<TaintToleration>> TaintToleration::New(Handle&) {
  return std::make_unique<TaintToleration>();
}

Status TaintToleration::Filter(const CycleState&, const Pod& pod, const NodeInfo& node) const {
  for (const Taint& taint : node.node()->taints) {
    if (taint.effect == TaintEffect::kPreferNoSchedule) continue;
    if (!ToleratesTaint(pod.tolerations, taint)) {
      return Status::Unresolvable(StrCat("node(s) had untolerated taint ", FormatTaint(taint)));
    }
  }
  return Status::Ok();
}

ScoreResult TaintToleration::Score(const CycleState&, const Pod& pod, const NodeInfo& node) const {
  int64_t untolerated = 0;
  for (const Taint& taint : node.node()->taints) {
    if (taint.effect == TaintEffect::kPreferNoSchedule && !ToleratesTaint(pod.tolerations, taint)) {
      ++untolerated;
    }
  }
  return {untolerated, Status::Ok()};
}

Status TaintToleration::NormalizeScore(const CycleState&, const Pod&, NodeScoreList& scores) const {
  DefaultNormalizeScore(scores, /*reverse=*/true);
  return Status::Ok();
}

}  // namespace tessel::taint_toleration
