#include "scheduler/kube/scheduler_clients.h"

#include "scheduler/kube/backoff.h"
#include "scheduler/kube/live_cluster.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"
#include "spdlog/spdlog.h"

namespace tessel::kube {

absl::StatusOr<SchedulerClients> SchedulerClients::New(const ClientConfig& config, double qps, int64_t burst) {
  SchedulerClients c;
  auto make = [&](std::string_view role) {
    return KubeClient::New(config,
                           {.qps = qps, .burst = burst, .user_agent = StrCat("tessel-scheduler/0.1 (", role, ")")});
  };
  ASSIGN_OR_RETURN(c.binding, make("scheduler"));
  ASSIGN_OR_RETURN(c.status, make("events"));
  ASSIGN_OR_RETURN(c.election, make("leader-election"));
  ASSIGN_OR_RETURN(c.informers, make("informers"));
  // An answer late is no answer (the authorizer's own limit, DelegatedAuthOptions, keeps
  // callers within this budget).
  ASSIGN_OR_RETURN(c.auth, KubeClient::New(config, {.qps = 10,
                                                    .burst = 20,
                                                    .timeout = absl::Seconds(5),
                                                    .connect_timeout = absl::Seconds(2),
                                                    .max_attempts = 1,
                                                    .user_agent = "tessel-scheduler/0.1 (auth)"}));
  return c;
}

std::optional<std::string> WaitForEvictionApi(KubeClient& client, const std::function<bool()>& give_up) {
  Backoff backoff({.initial = absl::Milliseconds(500), .max = absl::Seconds(10)});
  for (;;) {
    absl::StatusOr<std::string> api = DiscoverEvictionApi(client);
    if (api.ok()) return *api;
    spdlog::warn("discovery: {}", api.status().message());
    if (give_up()) return std::nullopt;
    absl::SleepFor(backoff.Next());
  }
}

}  // namespace tessel::kube
