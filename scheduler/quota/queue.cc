// Decoding Queue objects and mapping pods onto queues.
#include "scheduler/quota/queue.h"

#include <algorithm>

#include "scheduler/api/decode.h"
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
  if (!d.ok()) return d.status();
  return q;
}

absl::Status QueueDirectory::Set(std::vector<Queue> queues) {
  std::sort(queues.begin(), queues.end(),
            [](const Queue& a, const Queue& b) { return a.name() < b.name(); });
  std::map<std::string, size_t, std::less<>> by_name, by_namespace;
  for (size_t i = 0; i < queues.size(); ++i) {
    if (!by_name.emplace(queues[i].name(), i).second) {
      return absl::InvalidArgumentError(StrCat("Queue ", queues[i].name(), " is defined twice"));
    }
    for (const std::string& ns : queues[i].namespaces) {
      auto [it, fresh] = by_namespace.emplace(ns, i);
      if (!fresh) {
        return absl::InvalidArgumentError(
            StrCat("Queue ", queues[i].name(), ": spec.namespaces: namespace \"", ns,
                   "\" already belongs to Queue ", queues[it->second].name()));
      }
    }
  }
  queues_ = std::move(queues);
  by_name_ = std::move(by_name);
  by_namespace_ = std::move(by_namespace);
  return absl::OkStatus();
}

std::vector<std::string> QueueDirectory::SetSkippingConflicts(std::vector<Queue> queues) {
  std::sort(queues.begin(), queues.end(),
            [](const Queue& a, const Queue& b) { return a.name() < b.name(); });
  std::vector<std::string> errors;
  std::vector<Queue> kept;
  std::map<std::string, std::string, std::less<>> owner;  // namespace -> queue
  for (Queue& q : queues) {
    if (!kept.empty() && kept.back().name() == q.name()) {
      errors.push_back(StrCat("Queue ", q.name(), " is defined twice; the second is ignored"));
      continue;
    }
    std::string clash;
    for (const std::string& ns : q.namespaces) {
      if (auto it = owner.find(ns); it != owner.end()) {
        clash = StrCat("Queue ", q.name(), ": spec.namespaces: namespace \"", ns,
                       "\" already belongs to Queue ", it->second, "; this queue is ignored");
        break;
      }
    }
    if (!clash.empty()) {
      errors.push_back(std::move(clash));
      continue;
    }
    for (const std::string& ns : q.namespaces) owner.emplace(ns, q.name());
    kept.push_back(std::move(q));
  }
  absl::Status st = Set(std::move(kept));
  if (!st.ok()) errors.push_back(std::string(st.message()));  // cannot happen: no clash is left
  return errors;
}

const Queue* QueueDirectory::Find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &queues_[it->second];
}

QueueDirectory::Lookup QueueDirectory::QueueFor(const Pod& pod) const {
  if (auto label = pod.meta.labels.find(kQueueLabel); label != pod.meta.labels.end()) {
    const Queue* q = Find(label->second);
    return q != nullptr ? Lookup{.queue = q} : Lookup{.missing = label->second};
  }
  auto it = by_namespace_.find(pod.meta.namespace_);
  return it == by_namespace_.end() ? Lookup{} : Lookup{.queue = &queues_[it->second]};
}

}  // namespace tessel
