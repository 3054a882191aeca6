// Writes each team Queue's and Cohort's status subresource (tessel.io/v1alpha1) from the leader, so that
// `kubectl get queues.tessel.io` reads like Kueue's `kubectl get clusterqueues`:
//   pendingPods, admittedPods               pods waiting / on nodes (bound or being bound)
//   usage, borrowed, lent                   per resource; nvidia.com/gpu in physical-GPU
//                                           equivalents, as the quota counts it
//   oldestPendingSince, oldestPendingWaitSeconds   the queue's longest-waiting pod
//   fairSharing.decayedUsage, decayedUsageComputedAt   with usage decay on (usage_decay.h)
//   conditions Active (False: the Queue does not decode and never did, reason InvalidSpec, its
//   pods wait; True with reason InvalidSpec: it stopped decoding and its last valid version
//   stays in force), Conflict (True: a namespace it lists stays with an older Queue, reason
//   NamespaceConflict) and FlavorsReady (False: a ResourceFlavor it lists does not exist,
//   reason FlavorNotFound, or does not decode, reason FlavorInvalid); a queue below a cohort
//   that breaks the tree is Active=False with reason CohortInvalid
// A Cohort's status: subtreeQuota, usage, borrowed, lent, weightedShare, path, condition Active;
//   fairSharing.decayedUsage, decayedUsageComputedAt   with usage decay on: its queues' sum
// docs/quota.md explains each field.
//
// Rate-limited: a worker thread takes one view of every queue per `interval` and sends a merge
// PATCH only for a queue whose status changed (the wait alone is rewritten every `refresh`).
// Writes are fenced like every other write of the scheduler (`write_budget`: none while this
// replica is not the leader or shuts down). A Queue that is gone (404) is forgotten.
//
//   QueueStatusWriter writer(client.get(), [&] { return view_of(scheduler); },
//                            {.write_budget = budget, .interval = absl::Seconds(10)});
//   ...
//   writer.Stop();
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/client.h"
#include "scheduler/quota/queue.h"
#include "scheduler/quota/quota_usage.h"
#include "scheduler/quota/usage_decay.h"
#include "scheduler/util/clock.h"

namespace tessel::kube {

// Everything the statuses are written from, taken at once.
struct QueueStatusView {
  std::vector<QueueReport> reports;             // the queues in force
  std::vector<NamespaceConflict> conflicts;     // namespaces a newer queue does not get
  std::map<std::string, std::string> invalid;   // Queues that do not decode: name -> the error
  // The ResourceFlavors in force (null: no flavored queue is reported on), and the ones that do
  // not decode (name -> the error).
  std::shared_ptr<const QueueDirectory> directory;
  std::map<std::string, std::string> invalid_flavors;
  // The cohorts of the tree (ReportCohorts): those a Cohort object defines, or that break the
  // tree, get a status too.
  std::vector<CohortReport> cohorts;
  // Each queue's decayed usage (QueueQuota args.usageHalfLifeSeconds; empty when off), written
  // as status.fairSharing (usage_decay.h) so that a restarted scheduler reads it back.
  std::map<std::string, DecayedUsageRecord> decayed;
};

// One condition of a Queue's status (lastTransitionTime is kept by the writer).
struct QueueCondition {
  std::string type;    // "Active", "Conflict" or "FlavorsReady"
  std::string status;  // "True" / "False"
  std::string reason;
  std::string message;
  bool operator==(const QueueCondition&) const = default;
};

// The status of the queue `name` in `view` without its conditions' times; `conditions` gets
// its conditions. Null when the view does not know the queue. Exposed for tests.
nlohmann::json QueueStatusFields(const QueueStatusView& view, const std::string& name,
                                 absl::Time now, std::vector<QueueCondition>* conditions);

// The status of the Cohort `name` (subtreeQuota, usage, borrowed, lent, weightedShare, parent
// path) and its condition Active (False while the cohort breaks the tree: a cycle of
// spec.parent, or it does not decode, and the queues below it hold their pods). Null when the
// view does not report the cohort. Exposed for tests.
nlohmann::json CohortStatusFields(const QueueStatusView& view, const std::string& name,
                                  std::vector<QueueCondition>* conditions);

struct QueueStatusOptions {
  std::function<std::optional<absl::Duration>()> write_budget;  // see Request::write_budget
  absl::Duration interval = absl::Seconds(10);  // at most one write per queue per interval
  absl::Duration refresh = absl::Seconds(60);   // a waiting queue's wait is rewritten this often
  const Clock* clock = nullptr;                 // null: the real clock
};

class QueueStatusWriter {
 public:
  QueueStatusWriter(KubeClient* client, std::function<QueueStatusView()> source,
                    QueueStatusOptions options = {});
  ~QueueStatusWriter();

  // Starts the worker thread (one round per interval).
  void Start();
  // Ends the worker; nothing more is written.
  void Stop();
  // One round on the caller's thread: takes a view and writes what changed. Returns the
  // number of statuses written.
  int WriteOnce();

 private:
  struct Sent {
    std::string key;  // the status written, without the wait and times
    absl::Time at;
    nlohmann::json status;  // as written (its maps' keys: what a later patch must remove)
    std::map<std::string, std::pair<QueueCondition, absl::Time>> conditions;  // by type
  };
  void Run();
  // Sends `status` (with `conditions`) to `path` unless it is what was sent last under `key`.
  bool Write(const std::string& key, const std::string& path, const nlohmann::json& status,
             const std::vector<QueueCondition>& conditions, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(round_mu_);

  KubeClient* client_;
  std::function<QueueStatusView()> source_;
  const QueueStatusOptions options_;
  RealClock real_clock_;
  const Clock* clock_;
  absl::Mutex round_mu_;  // one round at a time
  std::map<std::string, Sent> sent_ ABSL_GUARDED_BY(round_mu_);
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tessel::kube
