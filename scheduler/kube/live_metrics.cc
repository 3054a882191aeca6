#include "scheduler/kube/live_metrics.h"

#include <string>
#include <utility>
#include <vector>

namespace tessel::kube {

void RegisterMetrics(server::MetricsRegistry& registry, const LiveCluster& cluster) {
  registry.CounterFunc("tessel_binds_total", "Binds the API server accepted",
                       [&cluster] { return static_cast<double>(cluster.binds()); });
  registry.CounterFunc("tessel_binds_pod_gone_total", "Binds answered: the pod is gone (deleted or replaced)",
                       [&cluster] { return static_cast<double>(cluster.binds_of_gone_pods()); });
}

void RegisterMetrics(server::MetricsRegistry& registry, const EventRecorder& events) {
  registry.CounterFunc("tessel_events_created_total", "Event objects created",
                       [&events] { return static_cast<double>(events.created()); });
  registry.CounterFunc("tessel_events_correlated_total",
                       "Events folded into an identical recent Event (count bumped)",
                       [&events] { return static_cast<double>(events.correlated()); });
  registry.CounterFunc("tessel_events_dropped_total", "Events the API server refused for good",
                       [&events] { return static_cast<double>(events.dropped()); });
}

void RegisterMetrics(server::MetricsRegistry& registry, const StatusReporter& reporter,
                     const EventRecorder& events) {
  registry.CounterFunc("tessel_status_writes_total", "PodScheduled conditions written",
                       [&reporter] { return static_cast<double>(reporter.conditions_written()); });
  registry.CounterFunc("tessel_status_write_retries_total",
                       "PodScheduled condition writes retried after a failure",
                       [&reporter] { return static_cast<double>(reporter.condition_retries()); });
  registry.CounterFunc("tessel_status_writes_dropped_total",
                       "PodScheduled condition writes the API server refused for good",
                       [&reporter] { return static_cast<double>(reporter.conditions_dropped()); });
  registry.Gauge("tessel_status_writes_pending", "Pods whose condition or events wait to be written",
                 [&reporter, &events] {
                   return std::vector<server::GaugeSample>{
                       {{{"kind", "condition"}}, static_cast<double>(reporter.pending())},
                       {{{"kind", "event"}}, static_cast<double>(events.pending())}};
                 });
}

void RegisterMetrics(server::MetricsRegistry& registry, const SchedulerFeed& feed) {
  registry.CounterSamplesFunc("tessel_informer_watches_total", "Watch requests sent, by resource", [&feed] {
    std::vector<server::GaugeSample> out;
    for (const auto& informer : feed.informers()) {
      out.push_back({{{"resource", informer->spec().name}}, static_cast<double>(informer->watches_sent())});
    }
    return out;
  });
}

void RegisterMetrics(server::MetricsRegistry& registry, const SchedulerClients& clients) {
  registry.CounterSamplesFunc(
      "tessel_kube_requests_total", "Requests sent to the API server, by client and method", [&clients] {
        std::vector<server::GaugeSample> out;
        const std::pair<const char*, const KubeClient*> all[] = {{"binding", clients.binding.get()},
                                                                 {"status", clients.status.get()},
                                                                 {"election", clients.election.get()},
                                                                 {"informers", clients.informers.get()}};
        for (const auto& [name, client] : all) {
          for (std::string_view verb : KubeClient::kMethods) {
            const int64_t n = client->requests_sent(verb);
            if (n > 0) out.push_back({{{"client", name}, {"verb", std::string(verb)}}, static_cast<double>(n)});
          }
        }
        return out;
      });
}

void RegisterLeaderMetric(server::MetricsRegistry& registry, std::function<bool()> leading) {
  registry.Gauge("tessel_leader", "1 while this replica holds the leader lease", [leading = std::move(leading)] {
    return std::vector<server::GaugeSample>{{{}, leading() ? 1.0 : 0.0}};
  });
}

}  // namespace tessel::kube
