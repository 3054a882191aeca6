// Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics and
// kube-scheduler's defaults (lease 15 s, renew deadline 10 s, retry 2 s).
//
// A candidate takes the lease when it is free or when its holder has not renewed it for
// leaseDurationSeconds, measured on the candidate's own monotonic clock from the moment it last
// saw the lease change (so clocks need not agree, and a wall-clock step changes nothing). The leader renews every retry period; if it cannot
// renew within the renew deadline it has lost, and IsLeader() turns false at once, even if the
// elector thread is stuck: IsLeader() checks the time of the last successful renewal itself.
// Because renew deadline < lease duration, the old leader stops before anyone else may start:
// two replicas never act as leader at the same time.
//
//   LeaderElector elector(client, {.namespace_ = "kube-system", .name = "tessel-scheduler",
//                                  .identity = "host_1234"},
//                         {.on_started_leading = [&] { loop.Start(); },
//                          .on_stopped_leading = [&] { std::_Exit(1); }});
//   elector.Start();
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "scheduler/kube/client.h"
#include "scheduler/util/clock.h"
#include "scheduler/util/strings.h"

namespace tessel::kube {

struct LeaderElectionConfig {
  std::string namespace_ = "kube-system";
  std::string name = "tessel-scheduler";
  std::string identity;
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
};

// Local decisions (am I still the leader, how long may I write, when does another holder's lease
// run out) are measured on `monotonic`, so a step of the wall clock can neither extend a term
// nor end another holder's early; `wall` only stamps the Lease's acquireTime and renewTime,
// which the API defines as wall-clock times. Tests inject ManualClocks for both.
struct ElectorClocks {
  const Clock* monotonic = nullptr;  // default: a SteadyClock
  const Clock* wall = nullptr;       // default: a RealClock
};

struct LeaderCallbacks {
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;           // lost, or stopped while leading
  std::function<void(const std::string&)> on_new_leader;  // holder changed (may be us)
};

class LeaderElector {
 public:
  LeaderElector(KubeClient* client, LeaderElectionConfig config, LeaderCallbacks callbacks,
                ElectorClocks clocks = {});
  ~LeaderElector();

  void Start();
  // Stops campaigning; a leader gives the lease up (holder cleared) when `release`.
  void Stop(bool release);

  bool IsLeader() const;
  // How long this replica may still write as the leader: the time until its renew deadline
  // runs out unless it renews; nullopt when it is not the leader. Writers cut their request
  // timeouts to it (Request::write_budget), so no write of an expired term is in flight.
  std::optional<absl::Duration> WriteBudget() const;
  // The holder last seen ("" when unknown or free).
  std::string leader() const;
  bool leader_known() const { return !leader().empty(); }
  const std::string& identity() const { return config_.identity; }

 private:
  void Run();
  // One attempt: true if we hold the lease afterwards.
  bool TryAcquireOrRenew();
  bool Sleep(absl::Duration d);
  void SetLeader(const std::string& holder);

  KubeClient* client_;
  const Clock* monotonic_;
  const Clock* wall_;
  const LeaderElectionConfig config_;
  LeaderCallbacks callbacks_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  absl::Notification stopped_;

  mutable absl::Mutex mu_;
  std::string holder_ ABSL_GUARDED_BY(mu_);
  bool leading_ ABSL_GUARDED_BY(mu_) = false;
  // When the last successful renewal was sent (monotonic).
  absl::Time renewed_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // The lease as last observed, and when we observed it change.
  std::string observed_holder_ ABSL_GUARDED_BY(mu_);
  std::string observed_renew_ ABSL_GUARDED_BY(mu_);
  absl::Time observed_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // When the other holder's lease runs out unless it renews (monotonic).
  absl::Time expires_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace tessel::kube
