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

ResourceLimits LimitsField(FieldDecoder& d, const json& spec, std::string_view key,
                           std::string_view path) {
  ResourceLimits out;
  Resources amounts = d.ResourceMap(spec, key, path);
  const json* listed = d.Object(spec, key, path);
  if (listed == nullptr) return out;
  // Listed with 0 is a limit of 0; Resources drops zeros, so read the names from the JSON.
  for (const auto& [name, v] : listed->items()) out[name] = amounts.Get(name);
  return out;
}

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

// spec.resourceGroups: the groups' flavors in order, each flavor's quotas put into the queue's
// maps under flavored keys (flavor.h), with every rule of the flat maps checked per key.
void DecodeResourceGroups(FieldDecoder& d, const json& spec, Queue& q) {
  const json* groups = d.Array(spec, "resourceGroups", "spec.resourceGroups");
  if (groups == nullptr) return;
  if (groups->size() > kMaxResourceGroups) {
    d.Fail("spec.resourceGroups", StrCat("at most ", kMaxResourceGroups, " groups"));
    return;
  }
  std::set<std::string, std::less<>> covered_anywhere;
  std::set<std::string, std::less<>> flavors_anywhere;
  for (size_t g = 0; g < groups->size(); ++g) {
    const std::string gp = StrCat("spec.resourceGroups[", g, "]");
    ResourceGroup group;
    if (const json* covered = d.Array((*groups)[g], "coveredResources", StrCat(gp, ".coveredResources"))) {
      for (size_t i = 0; i < covered->size(); ++i) {
        const std::string path = StrCat(gp, ".coveredResources[", i, "]");
        if (!(*covered)[i].is_string() || (*covered)[i].get<std::string>().empty()) {
          d.Fail(path, "expected a resource name");
          continue;
        }
        const std::string r = (*covered)[i].get<std::string>();
        if (!covered_anywhere.insert(r).second) d.Fail(path, StrCat(r, " is covered twice"));
        group.covered.push_back(r);
      }
    }
    if (group.covered.empty()) d.Fail(StrCat(gp, ".coveredResources"), "must list at least one resource");
    const json* flavors = d.Array((*groups)[g], "flavors", StrCat(gp, ".flavors"));
    if (flavors == nullptr || flavors->empty()) {
      d.Fail(StrCat(gp, ".flavors"), "must list at least one flavor");
      continue;
    }
    if (flavors->size() > kMaxFlavorsPerGroup) {
      d.Fail(StrCat(gp, ".flavors"), StrCat("at most ", kMaxFlavorsPerGroup, " flavors"));
      continue;
    }
    for (size_t f = 0; f < flavors->size(); ++f) {
      const std::string fp = StrCat(gp, ".flavors[", f, "]");
      const json& flavor = (*flavors)[f];
      const std::string name = d.String(flavor, "name", StrCat(fp, ".name"));
      if (name.empty()) {
        d.Fail(StrCat(fp, ".name"), "missing");
        continue;
      }
      if (!flavors_anywhere.insert(name).second) {
        d.Fail(StrCat(fp, ".name"), StrCat("flavor ", name, " is listed twice"));
      }
      group.flavors.push_back(name);
      std::set<std::string, std::less<>> seen;
      const json* resources = d.Array(flavor, "resources", StrCat(fp, ".resources"));
      for (size_t i = 0; resources != nullptr && i < resources->size(); ++i) {
        const std::string rp = StrCat(fp, ".resources[", i, "]");
        const json& item = (*resources)[i];
        const std::string r = d.String(item, "name", StrCat(rp, ".name"));
        if (std::find(group.covered.begin(), group.covered.end(), r) == group.covered.end()) {
          d.Fail(StrCat(rp, ".name"), StrCat("\"", r, "\" is not one of the group's coveredResources"));
          continue;
        }
        if (!seen.insert(r).second) d.Fail(StrCat(rp, ".name"), StrCat(r, " is listed twice"));
        const std::string key = FlavoredResource(r, name);
        auto amount = [&](std::string_view field) -> std::optional<int64_t> {
          const std::string path = StrCat(rp, ".", field);
          if (!item.contains(field) || item[field].is_null()) return std::nullopt;
          const json& v = item[field];
          std::string text = v.is_string() ? v.get<std::string>() : v.is_number_integer() ? v.dump() : "";
          absl::StatusOr<int64_t> parsed = ParseResourceQuantity(r, text);
          if (text.empty() || !parsed.ok()) {
            d.Fail(path, text.empty() ? "expected a quantity" : std::string(parsed.status().message()));
            return std::nullopt;
          }
          if (*parsed < 0) {
            d.Fail(path, "must not be negative");
            return std::nullopt;
          }
          return *parsed;
        };
        const std::optional<int64_t> nominal = amount("nominalQuota");
        if (!nominal.has_value() && !item.contains("nominalQuota")) d.Fail(StrCat(rp, ".nominalQuota"), "missing");
        q.nominal.Set(key, nominal.value_or(0));
        q.listed.push_back(key);
        if (const std::optional<int64_t> b = amount("borrowingLimit")) {
          if (q.cohort.empty()) d.Fail(StrCat(rp, ".borrowingLimit"), "is only meaningful with spec.cohort");
          q.borrowing_limit[key] = *b;
        }
        if (const std::optional<int64_t> l = amount("lendingLimit")) {
          if (*l > nominal.value_or(0)) {
            d.Fail(StrCat(rp, ".lendingLimit"),
                   StrCat("lends ", FormatResourceQuantity(r, *l), " but the nominal quota is ",
                          FormatResourceQuantity(r, nominal.value_or(0))));
          }
          q.lending_limit[key] = *l;
        }
      }
      for (const std::string& r : group.covered) {
        if (!seen.contains(r)) d.Fail(StrCat(fp, ".resources"), StrCat("lacks ", r, " of the group's coveredResources"));
      }
    }
    q.resource_groups.push_back(std::move(group));
  }
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
  if (const json* ns = d.Array(*spec, "namespaces", "spec.namespaces")) {
    for (size_t i = 0; i < ns->size(); ++i) {
      const json& item = (*ns)[i];
      if (!item.is_string() || item.get<std::string>().empty()) {
        d.Fail(StrCat("spec.namespaces[", i, "]"), "expected a namespace name");
        continue;
      }
      q.namespaces.push_back(item.get<std::string>());
    }
  }
  q.namespace_selector = d.Selector(*spec, "namespaceSelector", "spec.namespaceSelector");
  q.cohort = d.String(*spec, "cohort", "spec.cohort");
  q.nominal = d.ResourceMap(*spec, "nominalQuota", "spec.nominalQuota");
  if (const json* listed = d.Object(*spec, "nominalQuota", "spec.nominalQuota")) {
    for (const auto& [name, v] : listed->items()) q.listed.push_back(name);
  }
  q.borrowing_limit = LimitsField(d, *spec, "borrowingLimit", "spec.borrowingLimit");
  q.lending_limit = LimitsField(d, *spec, "lendingLimit", "spec.lendingLimit");
  for (const auto& [name, limit] : q.lending_limit) {
    if (limit > q.nominal.Get(name)) {
      d.Fail(StrCat("spec.lendingLimit.", name),
             StrCat("lends ", FormatResourceQuantity(name, limit), " but the nominal quota is ",
                    FormatResourceQuantity(name, q.nominal.Get(name))));
    }
  }
  if (q.cohort.empty() && !q.borrowing_limit.empty()) {
    d.Fail("spec.borrowingLimit", "is only meaningful with spec.cohort");
  }
  if (spec->contains("resourceGroups") && !(*spec)["resourceGroups"].is_null()) {
    for (std::string_view flat : {"nominalQuota", "borrowingLimit", "lendingLimit"}) {
      if (spec->contains(flat) && !(*spec)[flat].is_null()) {
        d.Fail(StrCat("spec.", flat), "a Queue has either flat quotas or spec.resourceGroups, not both");
      }
    }
    DecodeResourceGroups(d, *spec, q);
  }
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
  if (spec->contains("weight") && !(*spec)["weight"].is_null()) {
    const json& w = (*spec)["weight"];
    absl::StatusOr<int64_t> milli = absl::InvalidArgumentError("expected a number");
    if (w.is_string()) milli = ParseMilli(w.get<std::string>());
    if (w.is_number_integer()) milli = ParseMilli(std::to_string(w.get<int64_t>()));
    if (!milli.ok()) {
      d.Fail("spec.weight", std::string(milli.status().message()));
    } else if (*milli <= 0) {
      d.Fail("spec.weight", "must be positive");
    } else {
      q.weight_milli = *milli;
    }
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
                                                     FlavorMap flavors, HeldQueueMap held) {
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
  std::map<std::string, size_t, std::less<>> by_namespace;
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
  std::map<std::string, size_t, std::less<>> names;
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
                                 FlavorMap flavors, HeldQueueMap held) {
  std::set<std::string, std::less<>> names;
  for (const Queue& q : queues) {
    if (!names.insert(q.name()).second) {
      return absl::InvalidArgumentError(StrCat("Queue ", q.name(), " is defined twice"));
    }
  }
  QueueDirectory built;
  std::vector<NamespaceConflict> conflicts =
      built.Build(std::move(queues), namespaces, std::move(flavors), std::move(held));
  if (!conflicts.empty()) return absl::InvalidArgumentError(conflicts.front().Message());
  *this = std::move(built);
  return absl::OkStatus();
}

std::vector<NamespaceConflict> QueueDirectory::SetResolvingConflicts(
    std::vector<Queue> queues, const NamespaceLabelMap& namespaces, FlavorMap flavors, HeldQueueMap held) {
  return Build(std::move(queues), namespaces, std::move(flavors), std::move(held));
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
    const bool used = std::any_of(group.covered.begin(), group.covered.end(),
                                  [&](const std::string& r) { return charge.Get(r) > 0; });
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
    for (const std::string& r : group.covered) {
      if (const int64_t amount = charge.Get(r); amount > 0) out.charge.Set(FlavoredResource(r, flavor->name()), amount);
    }
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
