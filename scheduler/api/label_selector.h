// Kubernetes label selectors (metav1.LabelSelector) and pod-to-pod scheduling terms: the one
// place that says when a selector matches a label set, shared by InterPodAffinity,
// PodTopologySpread and anything else that selects pods or namespaces by label.
//
//   LabelSelector s{.match_labels = {{"app", "cache"}}};
//   MatchesLabelSelector(s, pod.meta.labels);           // an empty selector matches everything
//   MatchesLabelSelector(std::optional<LabelSelector>{}, labels) == false;  // nil matches nothing
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessel {

using StringMap = std::map<std::string, std::string, std::less<>>;

struct LabelSelectorRequirement {
  enum class Operator { kIn, kNotIn, kExists, kDoesNotExist };
  std::string key;
  Operator op = Operator::kIn;
  std::vector<std::string> values;
};

// matchLabels and matchExpressions are ANDed; a selector with neither matches every label set.
struct LabelSelector {
  StringMap match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;
  bool empty() const { return match_labels.empty() && match_expressions.empty(); }
};

bool MatchesLabelSelector(const LabelSelector& selector, const StringMap& labels);
// A nil selector (absent from the spec) matches nothing, as metav1.LabelSelectorAsSelector.
bool MatchesLabelSelector(const std::optional<LabelSelector>& selector, const StringMap& labels);

// One podAffinity/podAntiAffinity term. matchLabelKeys/mismatchLabelKeys are merged into
// label_selector at decode time (key In/NotIn the owner pod's value), as the API server does.
struct PodAffinityTerm {
  std::optional<LabelSelector> label_selector;  // nullopt selects no pod
  std::vector<std::string> namespaces;
  // nullopt: only `namespaces` (the owner's namespace when both are empty); {} = every namespace.
  std::optional<LabelSelector> namespace_selector;
  std::string topology_key;
  std::vector<std::string> match_label_keys;
  std::vector<std::string> mismatch_label_keys;
};

struct WeightedPodAffinityTerm {
  int32_t weight = 0;  // 1..100
  PodAffinityTerm term;
};

// requiredDuringSchedulingIgnoredDuringExecution / preferredDuringSchedulingIgnoredDuringExecution.
struct PodAffinityRules {
  std::vector<PodAffinityTerm> required;
  std::vector<WeightedPodAffinityTerm> preferred;
  bool empty() const { return required.empty() && preferred.empty(); }
};

enum class NodeInclusionPolicy { kHonor, kIgnore };

struct TopologySpreadConstraint {
  enum class WhenUnsatisfiable { kDoNotSchedule, kScheduleAnyway };
  int32_t max_skew = 1;
  std::string topology_key;
  WhenUnsatisfiable when_unsatisfiable = WhenUnsatisfiable::kDoNotSchedule;
  std::optional<LabelSelector> label_selector;  // merged with matchLabelKeys at decode time
  std::optional<int32_t> min_domains;
  std::optional<NodeInclusionPolicy> node_affinity_policy;  // unset = Honor
  std::optional<NodeInclusionPolicy> node_taints_policy;    // unset = Ignore
  std::vector<std::string> match_label_keys;
};

// A container port bound on the node (spec.containers[].ports[] with hostPort > 0).
struct HostPort {
  std::string host_ip;         // "" = 0.0.0.0, every address
  std::string protocol = "TCP";
  int32_t port = 0;
  bool operator==(const HostPort&) const = default;
};

}  // namespace tessel
