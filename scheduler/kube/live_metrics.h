// The live components' metrics, each registered by the component's own function next to the
// accessors it reads, so that the binary only names the components it built:
//   tessel_binds_total, tessel_binds_pod_gone_total                    LiveCluster
//   tessel_events_created_total / _correlated_total / _dropped_total   EventRecorder
//   tessel_status_writes_total / _retries_total / _dropped_total,
//   tessel_status_writes_pending{kind="condition|event"}               StatusReporter (+ its events)
//   tessel_kube_requests_total{client,verb}                            SchedulerClients
//   tessel_informer_watches_total{resource}                            SchedulerFeed's informers
//   tessel_leader                                                      leader election
// docs/metrics.md explains each one. The registry reads them at every scrape, so each component
// must outlive the registry's servers.
//
//   RegisterMetrics(registry, cluster);
//   RegisterMetrics(registry, reporter, events);
#pragma once

#include <functional>

#include "scheduler/kube/client.h"
#include "scheduler/kube/event_recorder.h"
#include "scheduler/kube/live_cluster.h"
#include "scheduler/kube/scheduler_clients.h"
#include "scheduler/kube/scheduler_feed.h"
#include "scheduler/kube/status_reporter.h"
#include "scheduler/server/metrics.h"

namespace tessel::kube {

void RegisterMetrics(server::MetricsRegistry& registry, const LiveCluster& cluster);
void RegisterMetrics(server::MetricsRegistry& registry, const EventRecorder& events);
// The conditions the reporter writes, and what waits to be written: its conditions and the
// events of `events` (the recorder it writes through).
void RegisterMetrics(server::MetricsRegistry& registry, const StatusReporter& reporter,
                     const EventRecorder& events);
void RegisterMetrics(server::MetricsRegistry& registry, const SchedulerFeed& feed);
// Requests sent by each client (binding, status, election, informers), by method.
void RegisterMetrics(server::MetricsRegistry& registry, const SchedulerClients& clients);
// 1 while `leading` says this replica holds the lease.
void RegisterLeaderMetric(server::MetricsRegistry& registry, std::function<bool()> leading);

}  // namespace tessel::kube
