// Rules over the storage objects (see storage.h).
#include "scheduler/api/storage.h"

#include <algorithm>

#include "scheduler/util/strings.h"

namespace tessel {

std::string PersistentVolumeClaim::selected_node() const {
  auto it = meta.annotations.find(kSelectedNodeAnnotation);
  return it == meta.annotations.end() ? std::string() : it->second;
}

std::optional<AccessMode> ParseAccessMode(std::string_view name) {
  if (name == "ReadWriteOnce") return kReadWriteOnce;
  if (name == "ReadOnlyMany") return kReadOnlyMany;
  if (name == "ReadWriteMany") return kReadWriteMany;
  if (name == "ReadWriteOncePod") return kReadWriteOncePod;
  return std::nullopt;
}

bool VolumeNodeAffinityMatches(const PersistentVolume& volume, const Node& node) {
  if (!volume.node_affinity.has_value()) return true;
  return std::any_of(volume.node_affinity->begin(), volume.node_affinity->end(),
                     [&](const NodeSelectorTerm& term) { return MatchesNodeSelectorTerm(term, node); });
}

bool MatchesTopology(const std::vector<TopologySelectorTerm>& terms, const Node& node) {
  if (terms.empty()) return true;
  const StringMap& labels = node.meta.labels;
  return std::any_of(terms.begin(), terms.end(), [&](const TopologySelectorTerm& term) {
    return std::all_of(term.match_label_expressions.begin(), term.match_label_expressions.end(),
                       [&](const TopologySelectorTerm::Requirement& r) {
                         auto it = labels.find(r.key);
                         return it != labels.end() &&
                                std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
                       });
  });
}

std::string ClaimNameOf(const Pod& pod, const PodVolume& volume) {
  return volume.ephemeral ? StrCat(pod.meta.name, "-", volume.name) : volume.claim_name;
}

bool UsesClaims(const Pod& pod) { return !pod.volumes.empty(); }

bool VolumeCanServe(const PersistentVolume& volume, const PersistentVolumeClaim& claim) {
  if (volume.meta.deletion_timestamp.has_value()) return false;
  if (volume.claim_ref.has_value()) {
    // Pre-bound (or bound) to a claim: only that one (a UID, when set, must match too).
    const ClaimReference& ref = *volume.claim_ref;
    if (ref.namespace_ != claim.meta.namespace_ || ref.name != claim.meta.name) return false;
    if (!ref.uid.empty() && !claim.meta.uid.empty() && ref.uid != claim.meta.uid) return false;
  } else if (volume.phase == "Released" || volume.phase == "Failed") {
    return false;
  }
  if (volume.storage_class != claim.storage_class) return false;
  if (volume.volume_mode != claim.volume_mode) return false;
  if ((volume.access_modes & claim.access_modes) != claim.access_modes) return false;
  if (volume.capacity_bytes < claim.request_bytes) return false;
  if (claim.selector.has_value() && !MatchesLabelSelector(*claim.selector, volume.meta.labels)) {
    return false;
  }
  return true;
}

std::optional<int64_t> CSINode::LimitOf(std::string_view driver) const {
  for (const Driver& d : drivers) {
    if (d.name == driver) return d.allocatable_count;
  }
  return std::nullopt;
}

}  // namespace tessel
