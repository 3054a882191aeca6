// PriorityClassStore and DisruptionBudgetStore (see priority_classes.h).
#include "scheduler/state/priority_classes.h"

#include <algorithm>
#include <tuple>

namespace tessel {

void PriorityClassStore::Put(PriorityClass pc) {
  absl::MutexLock lock(&mu_);
  std::string name = pc.meta.name;
  classes_[std::move(name)] = std::move(pc);
}

void PriorityClassStore::Delete(const std::string& name) {
  absl::MutexLock lock(&mu_);
  classes_.erase(name);
}

std::optional<int32_t> PriorityClassStore::Value(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = classes_.find(name);
  if (it == classes_.end()) return std::nullopt;
  return it->second.value;
}

const PriorityClass* PriorityClassStore::ClassForLocked(const Pod& pod) const {
  if (!pod.priority_class_name.empty()) {
    auto it = classes_.find(pod.priority_class_name);
    if (it != classes_.end()) return &it->second;
    // Admission refuses a pod naming an unknown class; a snapshot may hold one anyway: it
    // gets the default, as a pod without a class would.
  }
  const PriorityClass* pc = nullptr;
  for (const auto& [name, c] : classes_) {
    if (c.global_default && (pc == nullptr || c.value > pc->value)) pc = &c;
  }
  return pc;
}

void PriorityClassStore::Resolve(Pod& pod) const {
  absl::MutexLock lock(&mu_);
  const PriorityClass* pc = ClassForLocked(pod);
  if (pc == nullptr) return;
  if (!pod.priority.has_value()) pod.priority = pc->value;
  if (!pod.preemption_policy.has_value()) pod.preemption_policy = pc->preemption_policy;
}

int32_t PriorityClassStore::PriorityOf(const Pod& pod) const {
  if (pod.priority.has_value()) return *pod.priority;
  absl::MutexLock lock(&mu_);
  const PriorityClass* pc = ClassForLocked(pod);
  return pc == nullptr ? 0 : pc->value;
}

int32_t PriorityClassStore::Floor() const {
  absl::MutexLock lock(&mu_);
  int32_t floor = 0;
  for (const auto& [name, c] : classes_) floor = std::min(floor, c.value);
  return floor;
}

std::vector<PriorityClass> PriorityClassStore::All() const {
  absl::MutexLock lock(&mu_);
  std::vector<PriorityClass> all;
  for (const auto& [name, c] : classes_) all.push_back(c);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.meta.name < b.meta.name; });
  return all;
}

void DisruptionBudgetStore::Put(PodDisruptionBudget pdb) {
  absl::MutexLock lock(&mu_);
  std::string key = StrCat(pdb.meta.namespace_, "/", pdb.meta.name);
  budgets_[std::move(key)] = std::move(pdb);
}

void DisruptionBudgetStore::Delete(const std::string& key) {
  absl::MutexLock lock(&mu_);
  budgets_.erase(key);
}

std::vector<PodDisruptionBudget> DisruptionBudgetStore::All() const {
  absl::MutexLock lock(&mu_);
  std::vector<PodDisruptionBudget> out;
  out.reserve(budgets_.size());
  for (const auto& [key, pdb] : budgets_) out.push_back(pdb);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.meta.namespace_, a.meta.name) < std::tie(b.meta.namespace_, b.meta.name);
  });
  return out;
}

}  // namespace tessel
