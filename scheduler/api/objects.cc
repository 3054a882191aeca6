// Pod request computation and the label, taint and affinity predicates shared by plugins.
#include "scheduler/api/objects.h"

#include <charconv>

#include "scheduler/util/strings.h"

namespace tessel {

absl::StatusOr<Resources> ComputePodRequests(const Pod& pod) {
  Resources sum;
  for (const Container& c : pod.containers) {
    if (absl::Status st = sum.Add(c.requests); !st.ok()) return st;
  }
  // Init containers run one at a time; sidecars (restartPolicy Always) started before an init
  // container keep running beside it and for the pod's whole life.
  Resources sidecars;
  Resources init_peak;
  for (const Container& c : pod.init_containers) {
    if (c.restart_always) {
      if (absl::Status st = sidecars.Add(c.requests); !st.ok()) return st;
      init_peak.SetMax(sidecars);
    } else {
      Resources during = sidecars;
      if (absl::Status st = during.Add(c.requests); !st.ok()) return st;
      init_peak.SetMax(during);
    }
  }
  if (absl::Status st = sum.Add(sidecars); !st.ok()) return st;
  sum.SetMax(init_peak);
  if (absl::Status st = sum.Add(pod.overhead); !st.ok()) return st;
  sum.pods = 1;
  return sum;
}

std::vector<HostPort> PodHostPorts(const Pod& pod) {
  std::vector<HostPort> out;
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const Container& c : *list) out.insert(out.end(), c.host_ports.begin(), c.host_ports.end());
  }
  return out;
}

std::string_view TaintEffectName(TaintEffect effect) {
  switch (effect) {
    case TaintEffect::kNoSchedule:
      return "NoSchedule";
    case TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case TaintEffect::kNoExecute:
      return "NoExecute";
  }
  return "";
}

std::string FormatTaint(const Taint& taint) {
  return StrCat("{", taint.key, ": ", taint.value, "}");
}

bool ToleratesTaint(const Toleration& t, const Taint& taint) {
  if (t.effect.has_value() && *t.effect != taint.effect) return false;
  if (t.key.empty()) return t.op == Toleration::Operator::kExists;
  if (t.key != taint.key) return false;
  return t.op == Toleration::Operator::kExists || t.value == taint.value;
}

bool ToleratesTaint(const std::vector<Toleration>& tolerations, const Taint& taint) {
  for (const Toleration& t : tolerations) {
    if (ToleratesTaint(t, taint)) return true;
  }
  return false;
}

namespace {

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

bool MatchesRequirement(const NodeSelectorRequirement& r, const StringMap& labels) {
  using Op = NodeSelectorRequirement::Operator;
  auto it = labels.find(r.key);
  bool has = it != labels.end();
  auto in_values = [&] {
    return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
  };
  switch (r.op) {
    case Op::kIn:
      return in_values();
    case Op::kNotIn:
      return !in_values();
    case Op::kExists:
      return has;
    case Op::kDoesNotExist:
      return !has;
    case Op::kGt:
    case Op::kLt: {
      if (!has || r.values.size() != 1) return false;
      auto label = ParseInt(it->second);
      auto bound = ParseInt(r.values[0]);
      if (!label || !bound) return false;
      return r.op == Op::kGt ? *label > *bound : *label < *bound;
    }
  }
  return false;
}

}  // namespace

bool MatchesNodeSelectorTerm(const NodeSelectorTerm& term, const Node& node) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  for (const auto& r : term.match_expressions) {
    if (!MatchesRequirement(r, node.meta.labels)) return false;
  }
  if (!term.match_fields.empty()) {
    const StringMap fields = {{"metadata.name", node.meta.name}};
    for (const auto& r : term.match_fields) {
      if (!MatchesRequirement(r, fields)) return false;
    }
  }
  return true;
}

bool MatchesRequiredNodeAffinity(const Pod& pod, const Node& node) {
  for (const auto& [key, value] : pod.node_selector) {
    auto it = node.meta.labels.find(key);
    if (it == node.meta.labels.end() || it->second != value) return false;
  }
  if (!pod.node_affinity.required.has_value()) return true;
  for (const NodeSelectorTerm& term : *pod.node_affinity.required) {
    if (MatchesNodeSelectorTerm(term, node)) return true;
  }
  return false;
}

bool PodDisruptionBudget::Covers(const Pod& pod) const {
  if (pod.meta.namespace_ != meta.namespace_ || !selector.has_value() || selector->empty()) {
    return false;
  }
  return MatchesLabelSelector(*selector, pod.meta.labels);
}

}  // namespace tessel
