// Pod affinity terms made ready to match, and the per-topology-domain counts InterPodAffinity
// computes once per cycle. A term is resolved against the pod that owns it: with neither
// `namespaces` nor `namespaceSelector` it applies to the owner's namespace; `namespaceSelector: {}`
// applies to every namespace; a non-empty namespaceSelector needs the Namespace's labels
// (Handle::Objects(), fed by the Namespace informer or a snapshot's Namespaces), and a namespace
// whose labels are unknown does not match it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "scheduler/api/objects.h"
#include "scheduler/util/strings.h"

namespace tessel::inter_pod_affinity {

// Labels of a namespace by name, or null when unknown.
using NamespaceLabelsFn = std::function<const StringMap*(std::string_view)>;

struct ResolvedTerm {
  std::optional<LabelSelector> selector;
  StringSet namespaces;
  std::optional<LabelSelector> namespace_selector;
  std::string topology_key;
  int64_t weight = 1;

  static ResolvedTerm Of(const PodAffinityTerm& term, const Pod& owner, int64_t weight = 1);
  // kube's AffinityTerm.Matches: the candidate's namespace is selected, and its labels too.
  bool Matches(const Pod& candidate, const NamespaceLabelsFn& namespace_labels) const;
};

std::vector<ResolvedTerm> ResolveRequired(const PodAffinityRules& rules, const Pod& owner);
std::vector<ResolvedTerm> ResolvePreferred(const PodAffinityRules& rules, const Pod& owner);

// (topology key, value) -> number of matching pods (or summed weights). Entries that drop to
// zero are erased, so "no entry" and "zero" are the same and empty() means "nothing counted".
class TopologyCounts {
 public:
  void Add(const std::string& key, const std::string& value, int64_t delta);
  int64_t Get(const std::string& key, const std::string& value) const;
  bool empty() const { return counts_.empty(); }
  // Any of the node's labels names a counted domain (existing pods' anti-affinity).
  bool AnyPositive(const StringMap& node_labels) const;

 private:
  absl::flat_hash_map<std::pair<std::string, std::string>, int64_t> counts_;
};

}  // namespace tessel::inter_pod_affinity
