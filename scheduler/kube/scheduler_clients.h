// The live scheduler's API clients, one per kind of traffic, each with its own QPS budget
// (kube-scheduler has separate clients for scheduling, events and leader election): a burst of
// events never delays a bind, and binds never delay the lease renewal. And the discovery the
// scheduler needs before it starts.
//
//   ASSIGN_OR_RETURN(SchedulerClients clients, SchedulerClients::New(config, qps, burst));
//   std::optional<std::string> api = WaitForEvictionApi(*clients.binding, stopping);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/kubeconfig.h"

namespace tessel::kube {

struct SchedulerClients {
  // Every client but `auth` gets `qps` and `burst`; `auth` has its own small budget, short
  // timeouts and no retries.
  static absl::StatusOr<SchedulerClients> New(const ClientConfig& config, double qps, int64_t burst);

  std::unique_ptr<KubeClient> binding;    // binds, evictions, discovery
  std::unique_ptr<KubeClient> status;     // events and pod conditions
  std::unique_ptr<KubeClient> election;   // the lease
  std::unique_ptr<KubeClient> informers;  // lists and watches
  // TokenReviews and SubjectAccessReviews for /metrics and the admin API: their callers decide
  // how many there are, so they never spend the budget of events and conditions (autoscalers
  // read those).
  std::unique_ptr<KubeClient> auth;
};

// DiscoverEvictionApi, retried with a growing delay until the server answers (it may still be
// starting); nullopt when `give_up` says so after a failed attempt.
std::optional<std::string> WaitForEvictionApi(KubeClient& client, const std::function<bool()>& give_up);

}  // namespace tessel::kube
