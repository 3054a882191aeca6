#include "plugins/inter_pod_affinity/affinity_terms.h"

namespace tessel::inter_pod_affinity {

ResolvedTerm ResolvedTerm::Of(const PodAffinityTerm& term, const Pod& owner, int64_t weight) {
  ResolvedTerm out{.selector = term.label_selector,
                   .namespace_selector = term.namespace_selector,
                   .topology_key = term.topology_key,
                   .weight = weight};
  out.namespaces.insert(term.namespaces.begin(), term.namespaces.end());
  if (term.namespaces.empty() && !term.namespace_selector.has_value()) {
    out.namespaces.insert(owner.meta.namespace_);
  }
  return out;
}

bool ResolvedTerm::Matches(const Pod& candidate, const NamespaceLabelsFn& namespace_labels) const {
  bool namespace_ok = namespaces.contains(candidate.meta.namespace_);
  if (!namespace_ok && namespace_selector.has_value()) {
    if (namespace_selector->empty()) {
      namespace_ok = true;
    } else if (const StringMap* labels = namespace_labels ? namespace_labels(candidate.meta.namespace_)
                                                          : nullptr) {
      namespace_ok = MatchesLabelSelector(*namespace_selector, *labels);
    }
  }
  return namespace_ok && MatchesLabelSelector(selector, candidate.meta.labels);
}

std::vector<ResolvedTerm> ResolveRequired(const PodAffinityRules& rules, const Pod& owner) {
  std::vector<ResolvedTerm> out;
  out.reserve(rules.required.size());
  for (const PodAffinityTerm& t : rules.required) out.push_back(ResolvedTerm::Of(t, owner));
  return out;
}

std::vector<ResolvedTerm> ResolvePreferred(const PodAffinityRules& rules, const Pod& owner) {
  std::vector<ResolvedTerm> out;
  out.reserve(rules.preferred.size());
  for (const WeightedPodAffinityTerm& w : rules.preferred) {
    out.push_back(ResolvedTerm::Of(w.term, owner, w.weight));
  }
  return out;
}

void TopologyCounts::Add(const std::string& key, const std::string& value, int64_t delta) {
  if (delta == 0) return;
  auto [it, inserted] = counts_.try_emplace({key, value}, 0);
  it->second += delta;
  if (it->second == 0) counts_.erase(it);
}

int64_t TopologyCounts::Get(const std::string& key, const std::string& value) const {
  auto it = counts_.find(std::pair<std::string, std::string>(key, value));
  return it == counts_.end() ? 0 : it->second;
}

bool TopologyCounts::AnyPositive(const StringMap& node_labels) const {
  if (counts_.empty()) return false;
  for (const auto& [key, value] : node_labels) {
    if (Get(key, value) > 0) return true;
  }
  return false;
}

}  // namespace tessel::inter_pod_affinity
