// The PriorityClasses and PodDisruptionBudgets the scheduler knows, fed by informers or a
// snapshot loader, and the answers the cycle asks of them: a pod's priority as admission would
// have resolved it, the lowest priority in the cluster, and the budgets preemption must count.
// Thread-safe (informer threads write, the scheduling loop reads).
//
//   PriorityClassStore classes;
//   classes.Put(pc);
//   classes.Resolve(pod);                 // fills spec.priority and preemptionPolicy if unset
//   int32_t p = classes.PriorityOf(pod);  // spec.priority, else its class's, else 0
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "scheduler/api/objects.h"
#include "scheduler/util/strings.h"

namespace tessel {

class PriorityClassStore {
 public:
  void Put(PriorityClass pc);
  void Delete(const std::string& name);
  // The value of the class `name`; nullopt when it is unknown.
  std::optional<int32_t> Value(std::string_view name) const;
  // Fills in priority (and preemptionPolicy) from the pod's class, as admission would: its
  // priorityClassName's, else the globalDefault one (the highest, if several).
  void Resolve(Pod& pod) const;
  // spec.priority if set, else what its class gives, else 0.
  int32_t PriorityOf(const Pod& pod) const;
  // The lowest priority any pod may have: min(0, every class's value).
  int32_t Floor() const;
  // Every class, by name.
  std::vector<PriorityClass> All() const;

 private:
  const PriorityClass* ClassForLocked(const Pod& pod) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  StringKeyedMap<PriorityClass> classes_ ABSL_GUARDED_BY(mu_);
};

class DisruptionBudgetStore {
 public:
  void Put(PodDisruptionBudget pdb);
  // By namespace/name.
  void Delete(const std::string& key);
  // Every budget, ordered by namespace and name.
  std::vector<PodDisruptionBudget> All() const;

 private:
  mutable absl::Mutex mu_;
  StringKeyedMap<PodDisruptionBudget> budgets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel
