#include "plugins/inter_pod_affinity/inter_pod_affinity.h"

#include <algorithm>
#include <limits>

#include "scheduler/framework/plugin_util.h"
#include "scheduler/util/status_macros.h"

namespace tessel::inter_pod_affinity {
namespace {

// topology key -> value -> summed weight, for PreScore/Score.
using DomainScores = StringKeyedMap<StringKeyedMap<int64_t>>;

bool MatchesAll(const std::vector<ResolvedTerm>& terms, const Pod& pod, const NamespaceLabelsFn& ns) {
  for (const ResolvedTerm& t : terms) {
    if (!t.Matches(pod, ns)) return false;
  }
  return true;
}

bool HasAnyAffinity(const Pod& pod) { return !pod.pod_affinity.empty() || !pod.pod_anti_affinity.empty(); }

// Adds `weight * sign` to the domain of `node` for each term matching `candidate`.
void AddTermScores(const std::vector<ResolvedTerm>& terms, const Pod& candidate, const Node& node,
                   const NamespaceLabelsFn& ns, int64_t sign, DomainScores& scores) {
  for (const ResolvedTerm& t : terms) {
    if (t.weight == 0 || !t.Matches(candidate, ns)) continue;
    auto label = node.meta.labels.find(t.topology_key);
    if (label == node.meta.labels.end()) continue;
    scores[t.topology_key][label->second] += t.weight * sign;
  }
}

}  // namespace

void PreFilterState::UpdateWithPod(const Pod& incoming, const Pod& existing, const Node& node,
                                   const NamespaceLabelsFn& namespace_labels, int64_t delta) {
  const StringMap& labels = node.meta.labels;
  auto domain_of = [&](const ResolvedTerm& t) -> const std::string* {
    auto it = labels.find(t.topology_key);
    return it == labels.end() ? nullptr : &it->second;
  };
  for (const PodAffinityTerm& term : existing.pod_anti_affinity.required) {
    ResolvedTerm t = ResolvedTerm::Of(term, existing);
    if (!t.Matches(incoming, namespace_labels)) continue;
    if (const std::string* v = domain_of(t)) existing_anti_affinity.Add(t.topology_key, *v, delta);
  }
  if (!affinity.empty() && MatchesAll(affinity, existing, namespace_labels)) {
    for (const ResolvedTerm& t : affinity) {
      if (const std::string* v = domain_of(t)) affinity_counts.Add(t.topology_key, *v, delta);
    }
  }
  for (const ResolvedTerm& t : anti_affinity) {
    if (!t.Matches(existing, namespace_labels)) continue;
    if (const std::string* v = domain_of(t)) anti_affinity_counts.Add(t.topology_key, *v, delta);
  }
}

absl::StatusOr<InterPodAffinityArgs> InterPodAffinity::ParseArgs(const YAML::Node& yaml) {
  ArgsReader reader = ArgsReader::Of(kName, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"}));
  Args args;
  ASSIGN_OR_RETURN(args.hard_pod_affinity_weight,
                   reader.Int("hardPodAffinityWeight", args.hard_pod_affinity_weight, 0, 100));
  ASSIGN_OR_RETURN(args.ignore_preferred_terms_of_existing_pods,
                   reader.Bool("ignorePreferredTermsOfExistingPods", args.ignore_preferred_terms_of_existing_pods));
  return args;
}

absl::StatusOr<std::unique_ptr<InterPodAffinity>> InterPodAffinity::New(Args args, Handle& handle) {
  return std::make_unique<InterPodAffinity>(args, handle);
}

NamespaceLabelsFn InterPodAffinity::NamespaceLabels() const {
  // The view is held by the function: an informer update cannot free the labels it returns.
  std::shared_ptr<const ClusterObjects> objects = handle_.Objects();
  if (objects == nullptr) return [](std::string_view) -> const StringMap* { return nullptr; };
  return [objects](std::string_view ns) { return objects->NamespaceLabels(ns); };
}

std::unique_ptr<PreFilterState> InterPodAffinity::ComputeState(const Pod& pod, bool always) const {
  auto s = std::make_unique<PreFilterState>();
  s->affinity = ResolveRequired(pod.pod_affinity, pod);
  s->anti_affinity = ResolveRequired(pod.pod_anti_affinity, pod);
  const NamespaceLabelsFn ns = NamespaceLabels();
  s->matches_own_affinity = !s->affinity.empty() && MatchesAll(s->affinity, pod, ns);
  const bool own_terms = !s->affinity.empty() || !s->anti_affinity.empty();
  // Without terms of its own, only existing pods with required anti-affinity matter: the
  // snapshot counts them, so a cluster without any is not walked.
  if (!own_terms && !always && handle_.snapshot().pods_with_required_anti_affinity() == 0) return nullptr;
  for (const NodeInfo* info : handle_.snapshot().nodes()) {
    if (info->node() == nullptr) continue;
    for (const PodRef& existing : info->pods()) {
      if (existing->Key() == pod.Key()) continue;
      // Without terms of its own, only the existing pods' anti-affinity concerns the pod.
      if (!own_terms && existing->pod_anti_affinity.required.empty()) continue;
      s->UpdateWithPod(pod, *existing, *info->node(), ns, +1);
    }
  }
  if (!own_terms && !always && s->existing_anti_affinity.empty()) return nullptr;
  return s;
}

Status InterPodAffinity::PreFilter(CycleState& state, const Pod& pod) {
  return WritePreFilterState(state, kName, ComputeState(pod));
}

Status InterPodAffinity::AddPod(CycleState& state, const Pod& to_schedule, const Pod& other,
                                const NodeInfo& node) const {
  if (node.node() == nullptr) return Status::Ok();
  PreFilterState* s = state.ReadMutable<PreFilterState>(kName);
  if (s != nullptr) {
    s->UpdateWithPod(to_schedule, other, *node.node(), NamespaceLabels(), +1);
    return Status::Ok();
  }
  // PreFilter found nothing that constrains the pod and skipped the Filter. A pod added now
  // (one nominated to the node, in the filters' view of the node as it will be) may constrain it
  // with its required anti-affinity: then the state is built after all and the Filter runs.
  if (other.pod_anti_affinity.required.empty()) return Status::Ok();
  PreFilterState probe;
  probe.UpdateWithPod(to_schedule, other, *node.node(), NamespaceLabels(), +1);
  if (probe.existing_anti_affinity.empty()) return Status::Ok();  // its terms do not match the pod
  std::unique_ptr<PreFilterState> built = ComputeState(to_schedule, /*always=*/true);
  built->UpdateWithPod(to_schedule, other, *node.node(), NamespaceLabels(), +1);
  state.Write(kName, std::move(built));
  state.skip_filter.erase(std::string(kName));
  return Status::Ok();
}

Status InterPodAffinity::RemovePod(CycleState& state, const Pod& to_schedule, const Pod& other,
                                   const NodeInfo& node) const {
  PreFilterState* s = state.ReadMutable<PreFilterState>(kName);
  if (s != nullptr && node.node() != nullptr) {
    s->UpdateWithPod(to_schedule, other, *node.node(), NamespaceLabels(), -1);
  }
  return Status::Ok();
}

Status InterPodAffinity::Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const {
  std::unique_ptr<PreFilterState> computed;
  const PreFilterState* s =
      PreFilterStateOrCompute(state, kName, computed, [&] { return ComputeState(pod); });
  if (s == nullptr) return Status::Ok();
  const StringMap& labels = node.node()->meta.labels;
  if (!s->affinity.empty()) {
    bool pods_exist = true;
    for (const ResolvedTerm& t : s->affinity) {
      auto it = labels.find(t.topology_key);
      if (it == labels.end()) return Status::Unresolvable(std::string(kAffinityReason));
      if (s->affinity_counts.Get(t.topology_key, it->second) <= 0) pods_exist = false;
    }
    // The first pod of a group with affinity to itself: nothing matches anywhere yet.
    const bool first_of_group = s->affinity_counts.empty() && s->matches_own_affinity;
    if (!pods_exist && !first_of_group) return Status::Unresolvable(std::string(kAffinityReason));
  }
  if (!s->anti_affinity_counts.empty()) {
    for (const ResolvedTerm& t : s->anti_affinity) {
      auto it = labels.find(t.topology_key);
      if (it != labels.end() && s->anti_affinity_counts.Get(t.topology_key, it->second) > 0) {
        return Status::Unschedulable(std::string(kAntiAffinityReason));
      }
    }
  }
  if (s->existing_anti_affinity.AnyPositive(labels)) {
    return Status::Unschedulable(std::string(kExistingAntiAffinityReason));
  }
  return Status::Ok();
}

Status InterPodAffinity::PreScore(CycleState& state, const Pod& pod,
                                  const std::vector<const NodeInfo*>&) {
  const bool has_preferred = !pod.pod_affinity.preferred.empty() || !pod.pod_anti_affinity.preferred.empty();
  if (args_.ignore_preferred_terms_of_existing_pods && !has_preferred) return Status::Skip();
  // Without preferred terms of its own, only existing pods with affinity terms score; the
  // snapshot counts them.
  if (!has_preferred && handle_.snapshot().pods_with_affinity() == 0) return Status::Skip();
  const std::vector<ResolvedTerm> affinity = ResolvePreferred(pod.pod_affinity, pod);
  const std::vector<ResolvedTerm> anti_affinity = ResolvePreferred(pod.pod_anti_affinity, pod);
  const NamespaceLabelsFn ns = NamespaceLabels();
  DomainScores scores;
  for (const NodeInfo* info : handle_.snapshot().nodes()) {
    const Node* node = info->node();
    if (node == nullptr || node->meta.labels.empty()) continue;
    for (const PodRef& existing : info->pods()) {
      if (existing->Key() == pod.Key()) continue;
      if (!has_preferred && !HasAnyAffinity(*existing)) continue;
      AddTermScores(affinity, *existing, *node, ns, +1, scores);
      AddTermScores(anti_affinity, *existing, *node, ns, -1, scores);
      if (!HasAnyAffinity(*existing)) continue;
      if (args_.hard_pod_affinity_weight > 0) {
        std::vector<ResolvedTerm> hard = ResolveRequired(existing->pod_affinity, *existing);
        for (ResolvedTerm& t : hard) t.weight = args_.hard_pod_affinity_weight;
        AddTermScores(hard, pod, *node, ns, +1, scores);
      }
      if (args_.ignore_preferred_terms_of_existing_pods) continue;
      AddTermScores(ResolvePreferred(existing->pod_affinity, *existing), pod, *node, ns, +1, scores);
      AddTermScores(ResolvePreferred(existing->pod_anti_affinity, *existing), pod, *node, ns, -1, scores);
    }
  }
  if (scores.empty()) return Status::Skip();
  state.WriteValue(kPreScoreKey, std::move(scores));
  return Status::Ok();
}

NodeLocalPlugin::ScoreUse InterPodAffinity::AppendScoreKey(const CycleState&, const Pod& pod,
                                                          std::string&) const {
  const bool has_preferred = !pod.pod_affinity.preferred.empty() || !pod.pod_anti_affinity.preferred.empty();
  if (has_preferred) return ScoreUse::kOther;
  if (args_.ignore_preferred_terms_of_existing_pods || handle_.snapshot().pods_with_affinity() == 0) {
    return ScoreUse::kUnused;  // PreScore skips
  }
  return ScoreUse::kOther;
}

ScoreResult InterPodAffinity::Score(const CycleState& state, const Pod&, const NodeInfo& node) const {
  const auto* scores = state.ReadValue<DomainScores>(kPreScoreKey);
  if (scores == nullptr) return {0, Status::Error("InterPodAffinity: PreScore state is missing (enable it at preScore too)")};
  int64_t sum = 0;
  for (const auto& [key, values] : *scores) {
    auto label = node.node()->meta.labels.find(key);
    if (label == node.node()->meta.labels.end()) continue;
    if (auto v = values.find(label->second); v != values.end()) sum += v->second;
  }
  return {sum, Status::Ok()};
}

Status InterPodAffinity::NormalizeScore(const CycleState&, const Pod&, NodeScoreList& scores) const {
  if (scores.empty()) return Status::Ok();
  int64_t min = std::numeric_limits<int64_t>::max();
  int64_t max = std::numeric_limits<int64_t>::min();
  for (const NodeScore& s : scores) {
    min = std::min(min, s.score);
    max = std::max(max, s.score);
  }
  const int64_t range = max - min;
  for (NodeScore& s : scores) s.score = range > 0 ? (s.score - min) * kMaxNodeScore / range : 0;
  return Status::Ok();
}

}  // namespace tessel::inter_pod_affinity
