// Decoding Queue objects and mapping pods onto queues.
#include "scheduler/quota/queue.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include "scheduler/api/decode.h"
#include "nlohmann/json.hpp"
#include "scheduler/api/quantity.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace {

using nlohmann::json;

template <typename Enum>
Enum EnumField(FieldDecoder& d, const json& parent, std::string_view key, std::string_view path,
               std::initializer_list<std::pair<std::string_view, Enum>> values, Enum fallback) {
  std::string text = d.String(parent, key, path);
  if (text.empty()) return fallback;
  std::string allowed;
  for (const auto& [name, value] : values) {
    if (name == text) return value;
    StrAppend(&allowed, allowed.empty() ? "" : ", ", name);
  }
  d.Fail(path, StrCat("\"", text, "\" is not one of ", allowed));
  return fallback;
}

// spec.flavorFungibility: how a pod chooses among its queue's flavors.
void DecodeFungibility(FieldDecoder& d, const json& spec, Queue& q) {
  if (const json* f = d.Object(spec, "flavorFungibility", "spec.flavorFungibility")) {
    q.when_can_preempt = EnumField<WhenCanPreempt>(
        d, *f, "whenCanPreempt", "spec.flavorFungibility.whenCanPreempt",
        {{"TryNextFlavor", WhenCanPreempt::kTryNextFlavor}, {"Preempt", WhenCanPreempt::kPreempt}},
        WhenCanPreempt::kTryNextFlavor);
    q.when_can_borrow = EnumField<WhenCanBorrow>(
        d, *f, "whenCanBorrow", "spec.flavorFungibility.whenCanBorrow",
        {{"Borrow", WhenCanBorrow::kBorrow}, {"TryNextFlavor", WhenCanBorrow::kTryNextFlavor}},
        WhenCanBorrow::kBorrow);
  }
}

}  // namespace

absl::StatusOr<Queue> DecodeQueue(const json& object) {
  FieldDecoder d(DescribeObject(object));
  Queue q;
  q.meta = d.Meta(object);
  const json* spec = d.Object(object, "spec", "spec");
  if (spec == nullptr) {
    d.Fail("spec", "missing");
    return d.status();
  }
  d.ForEach(*spec, "namespaces", "spec.namespaces", [&](const json& item, const std::string& p) {
    if (std::optional<std::string> ns = d.NameItem(item, p, "a namespace name")) q.namespaces.push_back(*std::move(ns));
  });
  q.namespace_selector = d.Selector(*spec, "namespaceSelector", "spec.namespaceSelector");
  q.cohort = d.String(*spec, "cohort", "spec.cohort");
  DecodeQuotaSpec(d, *spec, {.kind = "Queue", .parent_field = "spec.cohort", .has_parent = !q.cohort.empty()}, q);
  DecodeFungibility(d, *spec, q);
  if (const json* p = d.Object(*spec, "preemption", "spec.preemption")) {
    q.reclaim_within_cohort = EnumField<ReclaimPolicy>(
        d, *p, "reclaimWithinCohort", "spec.preemption.reclaimWithinCohort",
        {{"Never", ReclaimPolicy::kNever},
         {"LowerPriority", ReclaimPolicy::kLowerPriority},
         {"Any", ReclaimPolicy::kAny}},
        ReclaimPolicy::kNever);
    q.within_queue = EnumField<WithinQueuePolicy>(
        d, *p, "withinQueue", "spec.preemption.withinQueue",
        {{"Never", WithinQueuePolicy::kNever}, {"LowerPriority", WithinQueuePolicy::kLowerPriority}},
        WithinQueuePolicy::kNever);
  }
  if (const json* disruption = d.Object(*spec, "disruption", "spec.disruption")) {
    if (disruption->contains("movable")) {
      q.movable = d.Bool(*disruption, "movable", "spec.disruption.movable");
    }
    if (disruption->contains("minRunSeconds")) {
      q.min_run_seconds = d.Int(*disruption, "minRunSeconds", "spec.disruption.minRunSeconds");
      if (*q.min_run_seconds < 0) d.Fail("spec.disruption.minRunSeconds", "must not be negative");
    }
  }
  q.provisioning = DecodeProvisioningClass(d, *spec);
  if (!d.ok()) return d.status();
  return q;
}

std::string NamespaceConflict::Message() const {
  return StrCat("Queue ", refused, ": spec.namespaces: namespace \"", namespace_,
                "\" already belongs to the older Queue ", kept_by,
                "; this queue does not get it (its other namespaces stay)");
}

std::vector<std::string> ReadQueueNamespaces(const json& object) {
  std::vector<std::string> out;
  if (!object.is_object()) return out;
  const auto spec = object.find("spec");
  if (spec == object.end() || !spec->is_object()) return out;
  const auto list = spec->find("namespaces");
  if (list == spec->end() || !list->is_array()) return out;
  for (const json& item : *list) {
    if (item.is_string() && !item.get<std::string>().empty()) out.push_back(item.get<std::string>());
  }
  return out;
}

std::vector<NamespaceConflict> QueueDirectory::Build(std::vector<Queue> queues,
                                                     const NamespaceLabelMap& namespaces,
                                                     FlavorMap flavors, HeldQueueMap held,
                                                     CohortObjects cohorts) {
  const auto by_name = [](const Queue& a, const Queue& b) { return a.name() < b.name(); };
  std::stable_sort(queues.begin(), queues.end(), by_name);
  queues.erase(std::unique(queues.begin(), queues.end(),
                           [](const Queue& a, const Queue& b) { return a.name() == b.name(); }),
               queues.end());
  // A contested namespace goes to the oldest queue: who had it first keeps it, whatever the
  // names, so a new queue can never take a team's namespace away.
  std::vector<size_t> by_age(queues.size());
  for (size_t i = 0; i < by_age.size(); ++i) by_age[i] = i;
  std::sort(by_age.begin(), by_age.end(), [&](size_t a, size_t b) {
    const absl::Time ta = queues[a].meta.creation_timestamp, tb = queues[b].meta.creation_timestamp;
    return ta != tb ? ta < tb : queues[a].name() < queues[b].name();
  });
  std::vector<NamespaceConflict> conflicts;
  StringKeyedMap<size_t> by_namespace;
  for (size_t i : by_age) {
    for (const std::string& ns : queues[i].namespaces) {
      auto [it, fresh] = by_namespace.emplace(ns, i);
      if (fresh || it->second == i) continue;
      conflicts.push_back(NamespaceConflict{.namespace_ = ns,
                                            .kept_by = queues[it->second].name(),
                                            .refused = queues[i].name(),
                                            .refused_uid = queues[i].meta.uid});
    }
  }
  std::sort(conflicts.begin(), conflicts.end(), [](const auto& a, const auto& b) {
    return std::tie(a.refused, a.namespace_) < std::tie(b.refused, b.namespace_);
  });
  std::vector<Selected> selected(queues.size());
  StringKeyedMap<size_t> names;
  for (size_t i = 0; i < queues.size(); ++i) {
    names.emplace(queues[i].name(), i);
    const std::optional<LabelSelector>& selector = queues[i].namespace_selector;
    if (!selector.has_value()) continue;
    selected[i].every_namespace = selector->empty();
    if (selected[i].every_namespace) continue;
    for (const auto& [ns, labels] : namespaces) {
      if (MatchesLabelSelector(*selector, labels)) selected[i].namespaces.insert(ns);
    }
  }
  // A held queue's namespaces wait, unless a queue in force has them.
  std::map<std::string, std::string, std::less<>> held_namespaces;
  for (const auto& [name, h] : held) {
    if (names.contains(name)) continue;
    for (const std::string& ns : h.namespaces) {
      if (!by_namespace.contains(ns)) held_namespaces.emplace(ns, name);
    }
  }
  std::erase_if(held, [&](const auto& kv) { return names.contains(kv.first); });
  std::sort(cohorts.cohorts.begin(), cohorts.cohorts.end(),
            [](const Cohort& a, const Cohort& b) { return a.name() < b.name(); });
  tree_ = CohortTree::Build(queues, cohorts.cohorts, cohorts.held);
  cohorts_ = std::move(cohorts.cohorts);
  queues_ = std::move(queues);
  selected_ = std::move(selected);
  by_name_ = std::move(names);
  by_namespace_ = std::move(by_namespace);
  flavors_ = std::move(flavors);
  held_ = std::move(held);
  held_namespaces_ = std::move(held_namespaces);
  return conflicts;
}

absl::Status QueueDirectory::Set(std::vector<Queue> queues, const NamespaceLabelMap& namespaces,
                                 FlavorMap flavors, HeldQueueMap held, CohortObjects cohorts) {
  std::set<std::string, std::less<>> names;
  for (const Queue& q : queues) {
    if (!names.insert(q.name()).second) {
      return absl::InvalidArgumentError(StrCat("Queue ", q.name(), " is defined twice"));
    }
  }
  names.clear();
  for (const Cohort& c : cohorts.cohorts) {
    if (!names.insert(c.name()).second) {
      return absl::InvalidArgumentError(StrCat("Cohort ", c.name(), " is defined twice"));
    }
  }
  QueueDirectory built;
  std::vector<NamespaceConflict> conflicts =
      built.Build(std::move(queues), namespaces, std::move(flavors), std::move(held), std::move(cohorts));
  if (!conflicts.empty()) return absl::InvalidArgumentError(conflicts.front().Message());
  *this = std::move(built);
  return absl::OkStatus();
}

std::vector<NamespaceConflict> QueueDirectory::SetResolvingConflicts(
    std::vector<Queue> queues, const NamespaceLabelMap& namespaces, FlavorMap flavors, HeldQueueMap held,
    CohortObjects cohorts) {
  return Build(std::move(queues), namespaces, std::move(flavors), std::move(held), std::move(cohorts));
}

std::string QueueDirectory::HeldMessage(const std::string& name) const {
  auto it = held_.find(name);
  return StrCat(it == held_.end() ? StrCat("Queue ", name) : it->second.problem,
                "; the Queue does not decode, so its pods wait until it does");
}

FlavorPlacement QueueDirectory::Place(const Queue& queue, const Resources& charge,
                                      const StringMap& node_labels,
                                      const std::vector<Toleration>* tolerations) const {
  FlavorPlacement out;
  if (!queue.flavored()) {
    out.charge = charge;
    return out;
  }
  for (const ResourceGroup& group : queue.resource_groups) {
    const bool used = group.UsedBy(charge);
    size_t index = 0;
    const ResourceFlavor* flavor = nullptr;
    for (; index < group.flavors.size(); ++index) {
      auto it = flavors_.find(group.flavors[index]);
      if (it != flavors_.end() && it->second.HasNode(node_labels)) {
        flavor = &it->second;
        break;
      }
    }
    out.tier = out.tier * static_cast<int64_t>(kMaxFlavorsPerGroup) + (used ? static_cast<int64_t>(index) : 0);
    if (!used) continue;
    if (flavor == nullptr) {
      std::vector<std::string> missing;
      for (const std::string& name : group.flavors) {
        if (!flavors_.contains(name)) missing.push_back(StrCat("ResourceFlavor ", name, " does not exist"));
      }
      out.in_flavor = false;
      out.why = StrCat("queue ", queue.name(), ": the node is in none of its flavors for ", group.covered.front(),
                       " (", StrJoin(group.flavors, ", "), ")", missing.empty() ? "" : "; ", StrJoin(missing, "; "));
      continue;
    }
    if (tolerations != nullptr && !flavor->Admits(*tolerations)) {
      out.in_flavor = false;
      out.why = StrCat("queue ", queue.name(), ": the pod does not tolerate the node taints of flavor ",
                       flavor->name());
      continue;
    }
    (void)out.charge.Add(group.InFlavor(charge, flavor->name()));
  }
  return out;
}

const Queue* QueueDirectory::Find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &queues_[it->second];
}

bool QueueDirectory::Admits(std::string_view queue, std::string_view namespace_) const {
  auto q = by_name_.find(queue);
  if (q == by_name_.end()) return false;
  if (auto it = by_namespace_.find(namespace_); it != by_namespace_.end() && it->second == q->second) {
    return true;
  }
  const Selected& selected = selected_[q->second];
  return selected.every_namespace || selected.namespaces.contains(namespace_);
}

QueueDirectory::Lookup QueueDirectory::QueueFor(const Pod& pod) const {
  Lookup found = FindQueueFor(pod);
  if (found.queue != nullptr && found.refused.empty() && found.missing.empty()) {
    if (std::string problem = tree_.QueueProblem(found.queue->name()); !problem.empty()) {
      found.refused = StrCat(problem, "; Queue ", found.queue->name(),
                             " is below it, so its pods wait until the cohort tree is fixed");
    }
  }
  return found;
}

QueueDirectory::Lookup QueueDirectory::FindQueueFor(const Pod& pod) const {
  const std::string& ns = pod.meta.namespace_;
  const auto own_it = by_namespace_.find(ns);
  const Queue* own = own_it == by_namespace_.end() ? nullptr : &queues_[own_it->second];
  const auto label = pod.meta.labels.find(kQueueLabel);
  if (label == pod.meta.labels.end()) {
    if (own == nullptr) {
      if (auto held = held_namespaces_.find(ns); held != held_namespaces_.end()) {
        return Lookup{.refused = HeldMessage(held->second)};
      }
    }
    return Lookup{.queue = own};
  }
  const Queue* named = Find(label->second);
  if (named == nullptr && held_.contains(label->second)) return Lookup{.refused = HeldMessage(label->second)};
  if (named == nullptr) return Lookup{.missing = label->second};
  if (named == own || Admits(named->name(), ns)) return Lookup{.queue = named};
  return Lookup{.queue = own,
                .refused = StrCat("the pod's label ", kQueueLabel, " names Queue \"", named->name(),
                                  "\", which does not admit namespace \"", ns,
                                  "\": neither its spec.namespaces nor its spec.namespaceSelector "
                                  "selects it")};
}

}  // namespace tessel
