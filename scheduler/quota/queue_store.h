// The Queue objects as the informer (live) or a snapshot (replay) delivers them, one at a time,
// turned into QueueDirectory snapshots the scheduling cycle reads. Thread-safe: informers write,
// the scheduling thread and metrics read.
//
// A Queue that does not decode fails closed, never open: its last version that decoded stays in
// force; with none, its pods wait (QueueDirectory's held queues) with a message naming the
// field. Every other queue stays in force, and a later good version replaces the error. A
// ResourceFlavor that does not decode keeps its last good version too (with none, it does
// not exist: a queue's quota in it cannot be used). A
// namespace two queues list goes to the older one; the newer queue stays in force without it,
// and the conflict is an error naming both queues and the namespace.
//
// Namespace labels are fed here too: spec.namespaceSelector is evaluated when a Queue or a
// Namespace changes, never during a cycle, so a directory is a pure, immutable snapshot.
//
//   QueueStore store;
//   absl::Status st = store.Put(queue);           // error: a namespace conflict, naming both
//   store.PutUndecodable("team-a", DecodeQueue(json).status());  // "Queue team-a: spec.weight: ..."
//   store.PutNamespace("team-b", {{"team", "b"}});
//   store.PutFlavor(DecodeResourceFlavor(json).value());  // nodes by labels (flavor.h)
//   store.PutCohort(DecodeCohort(json).value());          // the quota tree (cohort.h)
//   std::shared_ptr<const QueueDirectory> dir = store.directory();  // never null
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/quota/queue.h"

namespace tessel {

class QueueStore {
 public:
  QueueStore();

  // Adds or replaces a Queue. A namespace it shares with another queue is an error naming both
  // (whichever of the two is put, while the conflict lasts); the older queue keeps that namespace.
  absl::Status Put(Queue queue);
  // The Queue `name` does not decode (`problem` names it and the field): its last good
  // version stays in force, or, with none, its pods wait (`namespaces`: its spec.namespaces as
  // far as they read). Returns the problem as reported.
  absl::Status PutUndecodable(const std::string& name, const absl::Status& problem,
                              std::vector<std::string> namespaces = {});
  void Delete(std::string_view name);
  // A Namespace's labels, which spec.namespaceSelector is matched against. True when this
  // changed which queues its pods may choose (the directory was replaced).
  bool PutNamespace(const std::string& name, const StringMap& labels);
  bool DeleteNamespace(std::string_view name);
  // ResourceFlavors (flavor.h). A flavor that does not decode keeps its last good version (with
  // none, it does not exist) and the error, naming the field, is returned.
  void PutFlavor(ResourceFlavor flavor);
  absl::Status PutUndecodableFlavor(const std::string& name, const absl::Status& problem);
  void DeleteFlavor(std::string_view name);

  // Cohorts (cohort.h). A Cohort that does not decode keeps its last good version; with none,
  // the queues below it hold their pods (fail closed). The error, naming the field, is returned.
  void PutCohort(Cohort cohort);
  absl::Status PutUndecodableCohort(const std::string& name, const absl::Status& problem);
  void DeleteCohort(std::string_view name);
  // Every Cohort that does not decode or breaks the tree (a cycle of spec.parent): name -> why.
  std::map<std::string, std::string> CohortProblems() const;

  std::shared_ptr<const QueueDirectory> directory() const;
  // The current problem of every ignored Queue, and of every queue that does not get a
  // namespace it lists, by name.
  std::map<std::string, std::string> Problems() const;
  // Every namespace conflict in force, and the Queues ignored because they do not decode
  // (name -> the error naming the field): what the Queue status reports.
  std::vector<NamespaceConflict> Conflicts() const;
  std::map<std::string, std::string> Undecodable() const;
  // The ResourceFlavors that do not decode: name -> the error naming the field.
  std::map<std::string, std::string> UndecodableFlavors() const;
  // The namespace conflicts not taken before: each is handed out once while it lasts (for an
  // Event about the newer queue), and again if it ends and comes back.
  std::vector<NamespaceConflict> TakeNewConflicts();

 private:
  void RebuildLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a queue's selector matches the namespace differently with labels `a` and `b`
  // (null: no such namespace).
  bool SelectionDiffersLocked(const StringMap* a, const StringMap* b) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, Queue, std::less<>> decoded_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string, std::less<>> undecodable_ ABSL_GUARDED_BY(mu_);
  HeldQueueMap held_ ABSL_GUARDED_BY(mu_);  // undecodable, with no good version
  std::map<std::string, std::string, std::less<>> undecodable_flavors_ ABSL_GUARDED_BY(mu_);
  NamespaceLabelMap namespaces_ ABSL_GUARDED_BY(mu_);
  FlavorMap flavors_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Cohort, std::less<>> cohorts_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string, std::less<>> undecodable_cohorts_ ABSL_GUARDED_BY(mu_);
  std::vector<NamespaceConflict> conflicts_ ABSL_GUARDED_BY(mu_);
  std::vector<NamespaceConflict> taken_ ABSL_GUARDED_BY(mu_);  // a subset of conflicts_
  std::shared_ptr<const QueueDirectory> directory_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel
