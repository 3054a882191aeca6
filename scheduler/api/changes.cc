// Field-by-field comparisons for NodeSchedulingChanged and PodSchedulingChanged.
#include "scheduler/api/changes.h"

namespace tessel {
namespace {

bool SameRequirement(const NodeSelectorRequirement& a, const NodeSelectorRequirement& b) {
  return a.key == b.key && a.op == b.op && a.values == b.values;
}

bool SameRequirements(const std::vector<NodeSelectorRequirement>& a,
                      const std::vector<NodeSelectorRequirement>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameRequirement(a[i], b[i])) return false;
  }
  return true;
}

bool SameTerm(const NodeSelectorTerm& a, const NodeSelectorTerm& b) {
  return SameRequirements(a.match_expressions, b.match_expressions) &&
         SameRequirements(a.match_fields, b.match_fields);
}

bool SameAffinity(const NodeAffinity& a, const NodeAffinity& b) {
  if (a.required.has_value() != b.required.has_value()) return false;
  if (a.required.has_value()) {
    if (a.required->size() != b.required->size()) return false;
    for (size_t i = 0; i < a.required->size(); ++i) {
      if (!SameTerm((*a.required)[i], (*b.required)[i])) return false;
    }
  }
  if (a.preferred.size() != b.preferred.size()) return false;
  for (size_t i = 0; i < a.preferred.size(); ++i) {
    if (a.preferred[i].weight != b.preferred[i].weight ||
        !SameTerm(a.preferred[i].preference, b.preferred[i].preference)) {
      return false;
    }
  }
  return true;
}

bool SameTolerations(const std::vector<Toleration>& a, const std::vector<Toleration>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].key != b[i].key || a[i].op != b[i].op || a[i].value != b[i].value ||
        a[i].effect != b[i].effect || a[i].toleration_seconds != b[i].toleration_seconds) {
      return false;
    }
  }
  return true;
}

bool SameOwners(const std::vector<OwnerReference>& a, const std::vector<OwnerReference>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].api_version != b[i].api_version || a[i].kind != b[i].kind ||
        a[i].name != b[i].name || a[i].uid != b[i].uid || a[i].controller != b[i].controller) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool NodeSchedulingChanged(const Node& before, const Node& after) {
  return before.meta.uid != after.meta.uid || before.meta.labels != after.meta.labels ||
         before.meta.annotations != after.meta.annotations ||
         before.unschedulable != after.unschedulable || before.taints != after.taints ||
         !(before.allocatable == after.allocatable) || !(before.capacity == after.capacity) ||
         before.ready != after.ready;
}

bool PodSchedulingChanged(const Pod& before, const Pod& after) {
  return before.meta.uid != after.meta.uid || before.meta.labels != after.meta.labels ||
         before.meta.annotations != after.meta.annotations ||
         before.meta.deletion_timestamp != after.meta.deletion_timestamp ||
         !SameOwners(before.meta.owner_references, after.meta.owner_references) ||
         before.scheduler_name != after.scheduler_name || before.node_name != after.node_name ||
         before.node_selector != after.node_selector ||
         !SameAffinity(before.node_affinity, after.node_affinity) ||
         !SameTolerations(before.tolerations, after.tolerations) ||
         before.priority != after.priority ||
         before.priority_class_name != after.priority_class_name ||
         before.preemption_policy != after.preemption_policy ||
         !(before.requests == after.requests) || !(before.overhead == after.overhead) ||
         before.scheduling_gates != after.scheduling_gates;
}

}  // namespace tessel
