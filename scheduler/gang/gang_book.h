// The gang definitions the scheduler knows (PodGroups, Workloads, scheduling.k8s.io PodGroups, Jobs
// with tessel.io/min-available), fed by informers or a snapshot loader, and the answer to
// "which gang does this pod belong to, and what does that gang need?". Thread-safe.
//
//   GangBook book;
//   book.Put(*DecodePodGroup(json));             // any gang kind (GangObject)
//   GangBook::Resolution r = book.Resolve(pod);
//   if (r.membership == GangBook::Membership::kGang) ... r.spec.min_member ...
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/gang/gang_api.h"

namespace tessel::gang {

class GangBook {
 public:
  // Adds or replaces the object.
  void Put(GangObject object);
  // Forgets the object of that kind, namespace ("" is "default") and name.
  void Remove(GangKind kind, const std::string& namespace_, const std::string& name);
  // The gang a PodGroup or Job object stands for (nullopt for a Workload, which stands for
  // several).
  static std::optional<GangId> IdOf(GangKind kind, const std::string& namespace_, const std::string& name);

  void Put(PodGroup pg);
  void Put(Workload w);
  void Put(SchedulingPodGroup pg);
  void Put(JobInfo job);

  enum class Membership {
    kNone,     // an ordinary pod (no gang, a basic policy, or a Job without min-available)
    kWaiting,  // it names a gang whose definition has not been seen (yet): it waits quietly
    kGang,     // a member of spec.id
  };
  struct Resolution {
    Membership membership = Membership::kNone;
    GangSpec spec;        // kGang: the gang; kWaiting: spec.id names what is missing
    std::string warning;  // a malformed tessel.io/min-available on the pod, if any
  };
  Resolution Resolve(const Pod& pod) const;

  // Every Job reaches the book (the live scheduler watches Jobs): a pod whose controlling Job
  // has not been seen yet waits for it (kWaiting) instead of being scheduled alone before its
  // Job's tessel.io/min-available is known. Off (a replay without Job items): such a pod is an
  // ordinary pod.
  void SetJobsWatched(bool watched);

  // The scheduler-plugins PodGroup by namespace/name (status reporting, tests).
  std::optional<PodGroup> FindPodGroup(const std::string& ns, const std::string& name) const;
  // The scheduling.k8s.io PodGroup's own DRA claims, by namespace/name; nullopt when the PodGroup
  // is not known.
  std::optional<PodGroupClaims> FindPodGroupClaims(const std::string& ns, const std::string& name) const;
  size_t size() const;

 private:
  using Key = std::pair<std::string, std::string>;  // namespace, name
  mutable absl::Mutex mu_;
  std::map<Key, PodGroup> pod_groups_ ABSL_GUARDED_BY(mu_);
  std::map<Key, Workload> workloads_ ABSL_GUARDED_BY(mu_);
  std::map<Key, SchedulingPodGroup> scheduling_pod_groups_ ABSL_GUARDED_BY(mu_);
  std::map<Key, JobInfo> jobs_ ABSL_GUARDED_BY(mu_);
  bool jobs_watched_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tessel::gang
