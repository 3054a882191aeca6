#include "plugins/pod_topology_spread/pod_topology_spread.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "scheduler/framework/plugin_util.h"
#include "scheduler/util/status_macros.h"

namespace tessel::pod_topology_spread {
namespace {

using When = TopologySpreadConstraint::WhenUnsatisfiable;
constexpr int64_t kMicro = 1'000'000;

struct PreScoreState {
  std::vector<Constraint> constraints;
  std::vector<StringKeyedMap<int64_t>> counts;  // non-hostname keys: domain -> pods
  std::vector<int64_t> weights_micro;           // ln(#domains + 2) per constraint
  StringSet ignored;                            // feasible nodes missing a topology key
};

bool HasAllKeys(const StringMap& labels, const std::vector<Constraint>& constraints) {
  for (const Constraint& c : constraints) {
    if (!labels.contains(c.topology_key)) return false;
  }
  return true;
}

// The controller the default constraints spread by: a ReplicaSet, StatefulSet or
// ReplicationController, the owners whose selectors kube-scheduler's default selector uses.
std::string SpreadingController(const Pod& pod) {
  for (const OwnerReference& ref : pod.meta.owner_references) {
    if (!ref.controller) continue;
    if (ref.kind == "ReplicaSet" || ref.kind == "StatefulSet" || ref.kind == "ReplicationController") {
      return ref.uid;
    }
  }
  return "";
}

std::string ControllerUid(const Pod& pod) {
  for (const OwnerReference& ref : pod.meta.owner_references) {
    if (ref.controller) return ref.uid;
  }
  return "";
}

absl::StatusOr<When> ParseWhen(const std::string& s, std::string_view path) {
  if (s == "DoNotSchedule") return When::kDoNotSchedule;
  if (s == "ScheduleAnyway") return When::kScheduleAnyway;
  return absl::InvalidArgumentError(
      StrCat(path, ": unknown value \"", s, "\" (want DoNotSchedule or ScheduleAnyway)"));
}

}  // namespace

bool Constraint::Selects(const Pod& pod) const {
  if (!controller_uid.empty()) return ControllerUid(pod) == controller_uid;
  return MatchesLabelSelector(selector, pod.meta.labels);
}

bool Constraint::Includes(const Pod& pod, const Node& node) const {
  if (node_affinity_policy == NodeInclusionPolicy::kHonor && !MatchesRequiredNodeAffinity(pod, node)) {
    return false;
  }
  if (node_taints_policy == NodeInclusionPolicy::kHonor) {
    for (const Taint& t : node.taints) {
      if (t.effect == TaintEffect::kPreferNoSchedule) continue;
      if (!ToleratesTaint(pod.tolerations, t)) return false;
    }
  }
  return true;
}

int64_t CountMatching(const std::vector<PodRef>& pods, const Constraint& c, std::string_view ns) {
  int64_t n = 0;
  for (const PodRef& p : pods) {
    if (p->meta.deletion_timestamp.has_value() || p->meta.namespace_ != ns) continue;
    n += c.Selects(*p);
  }
  return n;
}

int64_t LnMicro(int64_t n) {
  if (n <= 1) return 0;
  // log2(n) in Q32: the integer part from the top bit, the fraction by repeated squaring of
  // the mantissa y = n / 2^k in [1, 2), held in Q62.
  const uint64_t u = static_cast<uint64_t>(n);
  const int k = 63 - std::countl_zero(u);
  uint64_t y = k <= 62 ? u << (62 - k) : u >> 1;
  uint64_t frac = 0;
  for (int bit = 0; bit < 32; ++bit) {
    y = static_cast<uint64_t>((static_cast<unsigned __int128>(y) * y) >> 62);
    frac <<= 1;
    if (y >= (uint64_t{1} << 63)) {
      y >>= 1;
      frac |= 1;
    }
  }
  const unsigned __int128 log2_q32 = (static_cast<unsigned __int128>(k) << 32) | frac;
  constexpr uint64_t kLn2Pico = 693'147'180'560;  // ln(2) * 1e12
  const unsigned __int128 ln_pico = (log2_q32 * kLn2Pico) >> 32;
  return static_cast<int64_t>((ln_pico + 500'000) / 1'000'000);
}

void PreFilterState::UpdateWithPod(const Pod& incoming, const Pod& existing, const Node& node,
                                   int64_t delta) {
  if (existing.meta.namespace_ != incoming.meta.namespace_ || existing.meta.deletion_timestamp) return;
  if (!HasAllKeys(node.meta.labels, constraints)) return;
  for (size_t i = 0; i < constraints.size(); ++i) {
    const Constraint& c = constraints[i];
    if (!c.Includes(incoming, node) || !c.Selects(existing)) continue;
    counts[i][node.meta.labels.find(c.topology_key)->second] += delta;
    RecomputeMinimum(i);
  }
}

void PreFilterState::RecomputeMinimum(size_t i) {
  int64_t min = std::numeric_limits<int32_t>::max();  // no eligible domain
  for (const auto& [domain, n] : counts[i]) min = std::min(min, n);
  min_counts[i] = min;
}

absl::StatusOr<PodTopologySpreadArgs> PodTopologySpread::ParseArgs(const YAML::Node& yaml) {
  ArgsReader reader = ArgsReader::Of(kName, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"defaultConstraints", "defaultingType"}));
  ASSIGN_OR_RETURN(const std::string type, reader.String("defaultingType", "System"));
  Args args;
  if (type == "List") {
    args.defaulting = Args::Defaulting::kList;
  } else if (type != "System") {
    return reader.Error("defaultingType", StrCat("unknown value \"", type, "\" (want System or List)"));
  }
  YAML::Node list = reader.Child("defaultConstraints");
  if (list && !list.IsNull()) {
    if (!list.IsSequence()) return reader.Error("defaultConstraints", "want a list");
    if (args.defaulting == Args::Defaulting::kSystem && list.size() > 0) {
      return reader.Error("defaultConstraints", "must be empty with defaultingType System (use List)");
    }
    for (size_t i = 0; i < list.size(); ++i) {
      ArgsReader item = reader.Item("defaultConstraints", i);
      RETURN_IF_ERROR(item.OnlyKeys({"maxSkew", "topologyKey", "whenUnsatisfiable"}));
      ASSIGN_OR_RETURN(const int64_t skew, item.Int("maxSkew", 0, 1, std::numeric_limits<int32_t>::max()));
      ASSIGN_OR_RETURN(std::string key, item.String("topologyKey", ""));
      ASSIGN_OR_RETURN(const std::string when, item.String("whenUnsatisfiable", ""));
      if (skew == 0) return item.Error("maxSkew", "missing");
      if (key.empty()) return item.Error("topologyKey", "missing");
      ASSIGN_OR_RETURN(const When parsed, ParseWhen(when, item.PathOf("whenUnsatisfiable")));
      args.default_constraints.push_back({.max_skew = static_cast<int32_t>(skew),
                                          .topology_key = std::move(key),
                                          .when_unsatisfiable = parsed});
    }
  }
  return args;
}

absl::StatusOr<std::unique_ptr<PodTopologySpread>> PodTopologySpread::New(Args args, Handle& handle) {
  return std::make_unique<PodTopologySpread>(std::move(args), handle);
}

std::vector<Constraint> PodTopologySpread::ConstraintsFor(const Pod& pod, When when) const {
  std::vector<Constraint> out;
  auto convert = [&](const TopologySpreadConstraint& t) {
    return Constraint{.max_skew = t.max_skew,
                      .topology_key = t.topology_key,
                      .min_domains = t.min_domains.value_or(1),
                      .node_affinity_policy = t.node_affinity_policy.value_or(NodeInclusionPolicy::kHonor),
                      .node_taints_policy = t.node_taints_policy.value_or(NodeInclusionPolicy::kIgnore),
                      .selector = t.label_selector};
  };
  if (!pod.topology_spread_constraints.empty()) {
    for (const TopologySpreadConstraint& t : pod.topology_spread_constraints) {
      if (t.when_unsatisfiable == when) out.push_back(convert(t));
    }
    return out;
  }
  const std::string controller = SpreadingController(pod);
  if (controller.empty()) return out;
  static const std::vector<TopologySpreadConstraint> kSystemDefaults = {
      {.max_skew = 3, .topology_key = std::string(kHostnameKey), .when_unsatisfiable = When::kScheduleAnyway},
      {.max_skew = 5, .topology_key = std::string(kZoneKey), .when_unsatisfiable = When::kScheduleAnyway},
  };
  const auto& defaults =
      args_.defaulting == Args::Defaulting::kSystem ? kSystemDefaults : args_.default_constraints;
  for (const TopologySpreadConstraint& t : defaults) {
    if (t.when_unsatisfiable != when) continue;
    Constraint c = convert(t);
    c.controller_uid = controller;
    out.push_back(std::move(c));
  }
  return out;
}

std::unique_ptr<PreFilterState> PodTopologySpread::ComputeState(const Pod& pod) const {
  auto s = std::make_unique<PreFilterState>();
  s->constraints = ConstraintsFor(pod, When::kDoNotSchedule);
  if (s->constraints.empty()) return nullptr;
  s->counts.resize(s->constraints.size());
  s->min_counts.resize(s->constraints.size());
  for (const NodeInfo* info : handle_.snapshot().nodes()) {
    const Node* node = info->node();
    if (node == nullptr || !HasAllKeys(node->meta.labels, s->constraints)) continue;
    for (size_t i = 0; i < s->constraints.size(); ++i) {
      const Constraint& c = s->constraints[i];
      if (!c.Includes(pod, *node)) continue;
      // A domain with no matching pod still counts as a domain (with 0 pods).
      s->counts[i][node->meta.labels.find(c.topology_key)->second] +=
          CountMatching(info->pods(), c, pod.meta.namespace_);
    }
  }
  for (size_t i = 0; i < s->constraints.size(); ++i) s->RecomputeMinimum(i);
  return s;
}

Status PodTopologySpread::PreFilter(CycleState& state, const Pod& pod) {
  return WritePreFilterState(state, kName, ComputeState(pod));
}

Status PodTopologySpread::AddPod(CycleState& state, const Pod& to_schedule, const Pod& other,
                                 const NodeInfo& node) const {
  PreFilterState* s = state.ReadMutable<PreFilterState>(kName);
  if (s != nullptr && node.node() != nullptr) s->UpdateWithPod(to_schedule, other, *node.node(), +1);
  return Status::Ok();
}

Status PodTopologySpread::RemovePod(CycleState& state, const Pod& to_schedule, const Pod& other,
                                    const NodeInfo& node) const {
  PreFilterState* s = state.ReadMutable<PreFilterState>(kName);
  if (s != nullptr && node.node() != nullptr) s->UpdateWithPod(to_schedule, other, *node.node(), -1);
  return Status::Ok();
}

Status PodTopologySpread::Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const {
  std::unique_ptr<PreFilterState> computed;
  const PreFilterState* s =
      PreFilterStateOrCompute(state, kName, computed, [&] { return ComputeState(pod); });
  if (s == nullptr) return Status::Ok();
  const StringMap& labels = node.node()->meta.labels;
  for (size_t i = 0; i < s->constraints.size(); ++i) {
    const Constraint& c = s->constraints[i];
    auto value = labels.find(c.topology_key);
    if (value == labels.end()) return Status::Unresolvable(std::string(kMissingLabelReason));
    const bool too_few_domains = static_cast<int64_t>(s->counts[i].size()) < c.min_domains;
    const int64_t min = too_few_domains ? 0 : s->min_counts[i];
    auto count = s->counts[i].find(value->second);
    const int64_t matching = count == s->counts[i].end() ? 0 : count->second;
    const int64_t skew = matching + (c.Selects(pod) ? 1 : 0) - min;
    if (skew > c.max_skew) return Status::Unschedulable(std::string(kReason));
  }
  return Status::Ok();
}

Status PodTopologySpread::PreScore(CycleState& state, const Pod& pod,
                                   const std::vector<const NodeInfo*>& feasible) {
  if (feasible.empty()) return Status::Skip();
  PreScoreState s;
  s.constraints = ConstraintsFor(pod, When::kScheduleAnyway);
  if (s.constraints.empty()) return Status::Skip();
  // Only user constraints require every key: with the defaults, a node without a zone label is
  // still spread by hostname.
  const bool require_all = !pod.topology_spread_constraints.empty() ||
                           args_.defaulting == Args::Defaulting::kList;
  const size_t n = s.constraints.size();
  s.counts.resize(n);
  for (const NodeInfo* info : feasible) {
    const StringMap& labels = info->node()->meta.labels;
    if (require_all && !HasAllKeys(labels, s.constraints)) {
      s.ignored.insert(info->name());
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      if (s.constraints[i].topology_key == kHostnameKey) continue;  // counted per node in Score
      if (auto v = labels.find(s.constraints[i].topology_key); v != labels.end()) s.counts[i].try_emplace(v->second, 0);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t domains = s.constraints[i].topology_key == kHostnameKey
                                ? static_cast<int64_t>(feasible.size() - s.ignored.size())
                                : static_cast<int64_t>(s.counts[i].size());
    s.weights_micro.push_back(LnMicro(domains + 2));
  }
  for (const NodeInfo* info : handle_.snapshot().nodes()) {
    const Node* node = info->node();
    if (node == nullptr || (require_all && !HasAllKeys(node->meta.labels, s.constraints))) continue;
    for (size_t i = 0; i < n; ++i) {
      const Constraint& c = s.constraints[i];
      if (c.topology_key == kHostnameKey || !c.Includes(pod, *node)) continue;
      auto v = node->meta.labels.find(c.topology_key);
      if (v == node->meta.labels.end()) continue;
      auto domain = s.counts[i].find(v->second);
      if (domain == s.counts[i].end()) continue;  // no feasible node there: not scored
      domain->second += CountMatching(info->pods(), c, pod.meta.namespace_);
    }
  }
  state.WriteValue(kPreScoreKey, std::move(s));
  return Status::Ok();
}

NodeLocalPlugin::ScoreUse PodTopologySpread::AppendScoreKey(const CycleState&, const Pod& pod,
                                                           std::string&) const {
  // PreScore answers Skip exactly when there is no such constraint (or no feasible node).
  return ConstraintsFor(pod, When::kScheduleAnyway).empty() ? ScoreUse::kUnused : ScoreUse::kOther;
}

ScoreResult PodTopologySpread::Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const {
  const auto* s = state.ReadValue<PreScoreState>(kPreScoreKey);
  if (s == nullptr) return {0, Status::Error("PodTopologySpread: PreScore state is missing (enable it at preScore too)")};
  if (s->ignored.contains(node.name())) return {0, Status::Ok()};
  const StringMap& labels = node.node()->meta.labels;
  int64_t micro = 0;
  for (size_t i = 0; i < s->constraints.size(); ++i) {
    const Constraint& c = s->constraints[i];
    auto v = labels.find(c.topology_key);
    if (v == labels.end()) continue;
    int64_t count = 0;
    if (c.topology_key == kHostnameKey) {
      count = CountMatching(node.pods(), c, pod.meta.namespace_);
    } else if (auto d = s->counts[i].find(v->second); d != s->counts[i].end()) {
      count = d->second;
    }
    // maxSkew - 1 waters down differences between domains, as kube-scheduler's scoreForCount.
    micro += count * s->weights_micro[i] + (c.max_skew - 1) * kMicro;
  }
  return {(micro + kMicro / 2) / kMicro, Status::Ok()};
}

Status PodTopologySpread::NormalizeScore(const CycleState& state, const Pod&, NodeScoreList& scores) const {
  const auto* s = state.ReadValue<PreScoreState>(kPreScoreKey);
  if (s == nullptr) return Status::Error("PodTopologySpread: PreScore state is missing (enable it at preScore too)");
  int64_t min = std::numeric_limits<int64_t>::max();
  int64_t max = 0;
  for (const NodeScore& score : scores) {
    if (s->ignored.contains(score.name)) continue;
    min = std::min(min, score.score);
    max = std::max(max, score.score);
  }
  for (NodeScore& score : scores) {
    if (s->ignored.contains(score.name)) {
      score.score = 0;
    } else if (max == 0) {
      score.score = kMaxNodeScore;
    } else {
      score.score = kMaxNodeScore * (max + min - score.score) / max;
    }
  }
  return Status::Ok();
}

}  // namespace tessel::pod_topology_spread
