// tessel-scheduler: the live scheduler. It watches the cluster through informers, runs the
// scheduling loop on one thread while it holds the leader lease, binds through a pool of
// binder threads, reports outcomes as Events and pod conditions, and serves /healthz, /readyz
// and /metrics. See docs/deploy.md.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>

#include "absl/synchronization/mutex.h"
#include "plugins/registry.h"
#include "scheduler/api/uid.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/framework/config.h"
#include "scheduler/kube/aggregated_api_publisher.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/delegated_auth.h"
#include "scheduler/kube/event_recorder.h"
#include "scheduler/kube/gang_apis.h"
#include "scheduler/kube/leader_election.h"
#include "scheduler/kube/live_cluster.h"
#include "scheduler/kube/live_metrics.h"
#include "scheduler/kube/podgroup_status.h"
#include "scheduler/kube/provisioning_controller.h"
#include "scheduler/kube/queue_status.h"
#include "scheduler/kube/scheduler_clients.h"
#include "scheduler/kube/scheduler_feed.h"
#include "scheduler/kube/scheduling_loop.h"
#include "scheduler/kube/status_reporter.h"
#include "scheduler/kube/work_queue.h"
#include "bench/replay/replay.h"
#include "scheduler/server/admin_service.h"
#include "scheduler/server/endpoints.h"
#include "scheduler/server/simulate_child.h"
#include "scheduler/server/metrics.h"
#include "scheduler/server/observer_fanout.h"
#include "scheduler/server/options.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace tessel {
namespace {

std::string Identity() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "tessel");
  std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{}_{:08x}", host, static_cast<uint32_t>(rng()));
}

// Whether SIGTERM or SIGINT waits for sigwait (they are blocked on every thread).
bool StopSignalPending() {
  sigset_t pending;
  sigpending(&pending);
  return sigismember(&pending, SIGTERM) || sigismember(&pending, SIGINT);
}

// Logs why the scheduler cannot go on; its exit status.
int Fail(const absl::Status& status, std::string_view what = {}) {
  if (what.empty()) {
    spdlog::critical("{}", status.message());
  } else {
    spdlog::critical("{}: {}", what, status.message());
  }
  return 1;
}

// What the scheduler needs before it builds anything: its configuration, its API clients and
// the eviction API the server serves. Cancelled when a stop signal came during discovery.
struct Connection {
  SchedulerConfig config;
  kube::SchedulerClients clients;
  std::string eviction_api;
  kube::GangApis gang_apis;
};

absl::StatusOr<Connection> Connect(server::SchedulerOptions& flags) {
  Connection c;
  ASSIGN_OR_RETURN(c.config, flags.LoadConfig());
  for (const std::string& note : c.config.notes) spdlog::warn("configuration: {}", note);
  ASSIGN_OR_RETURN(kube::ClientConfig client_config,
                   flags.kubeconfig.empty() ? kube::InClusterConfig()
                                            : kube::LoadKubeconfig(flags.kubeconfig, flags.context));
  ASSIGN_OR_RETURN(c.clients, kube::SchedulerClients::New(client_config, *flags.qps, *flags.burst));
  spdlog::info("API server {} (per client: QPS {}, burst {})", client_config.server, *flags.qps, *flags.burst);
  std::optional<std::string> eviction_api = kube::WaitForEvictionApi(*c.clients.binding, StopSignalPending);
  if (!eviction_api) return absl::CancelledError("stopped during discovery");
  c.eviction_api = *std::move(eviction_api);
  spdlog::info("evictions use {}", c.eviction_api);
  if (absl::StatusOr<kube::GangApis> gang_apis = kube::DiscoverGangApis(*c.clients.binding); gang_apis.ok()) {
    c.gang_apis = *std::move(gang_apis);
    spdlog::log(c.gang_apis.pod_group.empty() ? spdlog::level::warn : spdlog::level::info, "gangs: {}",
                kube::Describe(c.gang_apis));
  } else {
    spdlog::warn("discovery of the scheduling.k8s.io gang APIs failed ({}); only scheduler-plugins PodGroups "
                 "and Job gangs are read", gang_apis.status().message());
  }
  return c;
}

std::unique_ptr<kube::LeaderElector> NewElector(const server::SchedulerOptions& flags, kube::KubeClient* client,
                                                const std::string& identity, kube::LeaderCallbacks callbacks) {
  return std::make_unique<kube::LeaderElector>(client,
                                               kube::LeaderElectionConfig{.namespace_ = flags.lock_namespace,
                                                                          .name = flags.lock_name,
                                                                          .identity = identity,
                                                                          .lease_duration = flags.lease_duration,
                                                                          .renew_deadline = flags.renew_deadline,
                                                                          .retry_period = flags.retry_period},
                                               std::move(callbacks));
}

int Run(server::SchedulerOptions& flags) {
  // Signals are taken by sigwait on the main thread; every thread started later inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  absl::StatusOr<Connection> connection = Connect(flags);
  if (absl::IsCancelled(connection.status())) return 0;
  if (!connection.ok()) return Fail(connection.status());
  const SchedulerConfig& config = connection->config;
  kube::SchedulerClients& clients = connection->clients;
  const std::string& eviction_api = connection->eviction_api;

  // The components, each handed what it reads and writes through.
  std::atomic<bool> shutting_down{false};
  std::unique_ptr<kube::LeaderElector> elector;
  // How long this replica may still write: the rest of its lease, checked before every write.
  auto write_budget = [&]() -> std::optional<absl::Duration> {
    if (shutting_down.load()) return std::nullopt;
    if (!flags.leader_elect) return absl::InfiniteDuration();
    return elector ? elector->WriteBudget() : std::nullopt;
  };
  const std::string identity = Identity();
  kube::WorkerPool binder("bind", flags.bind_workers);
  kube::EventRecorder events(clients.status.get(), {.identity = identity, .write_budget = write_budget});
  RealClock clock;
  Cache cache(&clock);
  kube::LiveCluster cluster(clients.binding.get(), &events,
                            {.eviction_api = eviction_api,
                             .write_budget = write_budget,
                             .node_exists = [&cache](std::string_view node) { return cache.HasNode(node); },
                             .pod_exists = [&cache](const Pod& pod) {
                               std::optional<Cache::HeldPod> held = cache.Held(pod.Key());
                               return held && SameUid(held->uid, pod.meta.uid);
                             }});
  kube::StatusReporter reporter(clients.status.get(), &events, {.write_budget = write_budget});
  kube::PodGroupStatusWriter podgroup_status(
      clients.status.get(), {.write_budget = write_budget, .scheduling_pod_group_api = connection->gang_apis.pod_group});
  // ProvisioningRequests for marked gangs that fit nowhere; a request's change wakes them.
  std::atomic<Scheduler*> woken{nullptr};
  kube::ProvisioningController provisioner(
      clients.status.get(), clients.informers.get(),
      {.write_budget = write_budget,
       .book = {.failed_retry = flags.provisioning_retry_delay, .max_open = flags.max_open_provisioning_requests},
       .on_change = [&woken] {
         if (Scheduler* s = woken.load()) s->OnCustomObjectChange();
       }});
  server::ObserverFanout observers;
  observers.Add(&reporter);
  Registry registry = InTreeRegistry();
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler = Scheduler::New(
      {.registry = &registry,
       .config = &config,
       .defaults = &DefaultProfile(),
       .cache = &cache,
       .clock = &clock,
       .api = &cluster,
       .observer = &observers,
       .bind_executor = &binder,
       .queue_options = {.initial_backoff = config.pod_initial_backoff, .max_backoff = config.pod_max_backoff},
       .gang_status = &podgroup_status,
       .provisioner = &provisioner});
  if (!scheduler.ok()) return Fail(scheduler.status(), "configuration");
  Scheduler& sched = **scheduler;
  woken.store(&sched);
  spdlog::info("profiles: {}", StrJoin(sched.ProfileNames(), ", "));
  sched.OnJobsWatched();  // the feed watches Jobs: a Job's pods wait until their Job is known
  // Fairness over time (QueueQuota args.usageHalfLifeSeconds): the plugins that decay usage, one
  // per profile. Their decayed usage is written to the Queues' status and read back from it.
  const std::vector<queue_quota::QueueQuota*> decaying = server::DecayingQueueQuotas(sched);
  auto restore_decayed = [&decaying](const nlohmann::json& object) {
    if (decaying.empty()) return;
    absl::StatusOr<std::optional<DecayedUsageRecord>> record = ReadDecayedUsageStatus(object);
    if (!record.ok()) {
      spdlog::warn("{}; its decayed usage starts from 0", record.status().message());
      return;
    }
    if (!record->has_value()) return;
    const std::string name =
        object.contains("metadata") && object["metadata"].is_object() ? object["metadata"].value("name", "") : "";
    for (queue_quota::QueueQuota* plugin : decaying) {
      (void)plugin->RestoreDecayedUsage(name, (*record)->decayed, (*record)->computed_at);
    }
  };
  kube::SchedulerFeed feed(clients.informers.get(), &sched,
                           {.on_pod_bound = [&](const std::string& key) { reporter.Bound(key); },
                            .on_pod_gone = [&](const std::string& key) { reporter.Forget(key); },
                            .on_queue_object = restore_decayed,
                            .pdb_api = eviction_api,
                            .gang_apis = connection->gang_apis});
  kube::QueueStatusWriter queue_status(
      clients.status.get(),
      [&] {
        std::vector<CohortReport> cohorts;
        std::vector<QueueReport> reports = server::ComputeQueueReports(sched, &cohorts);
        return kube::QueueStatusView{.reports = std::move(reports),
                                     .conflicts = sched.queue_store().Conflicts(),
                                     .invalid = sched.queue_store().Undecodable(),
                                     .directory = sched.queue_store().directory(),
                                     .invalid_flavors = sched.queue_store().UndecodableFlavors(),
                                     .cohorts = std::move(cohorts),
                                     .decayed = server::DecayedUsageRecords(sched)};
      },
      {.write_budget = write_budget, .interval = flags.queue_status_interval});

  // Metrics, each registered by its component (the exposition lists them in this order).
  // Only the leader exports the gauges that describe the cluster (docs/metrics.md).
  auto leading = [&] { return !flags.leader_elect || (elector && elector->IsLeader()); };
  server::MetricsRegistry metrics_registry;
  server::SchedulerMetrics metrics(&metrics_registry, &sched, nullptr, leading);
  observers.Add(&metrics);
  kube::RegisterLeaderMetric(metrics_registry, leading);
  kube::RegisterMetrics(metrics_registry, cluster);
  kube::RegisterMetrics(metrics_registry, clients);
  kube::RegisterMetrics(metrics_registry, events);
  kube::RegisterMetrics(metrics_registry, reporter, events);
  kube::RegisterMetrics(metrics_registry, feed);

  // The endpoints; the admin API's simulate replays a snapshot as tessel-bench replay does.
  feed.Start();
  provisioner.Start();
  kube::DelegatedAuthorizer authorizer(clients.auth.get(), &clock);
  server::SchedulerAdminBackend admin_backend(&sched, [&](std::string_view snapshot, const server::CallControl& control) {
    return server::ReplayInChild(snapshot,
                                 {.config_path = flags.config,
                                  .memory_bytes = flags.simulate_memory_mib << 20,
                                  .timeout = flags.simulate_timeout},
                                 control);
  });
  auto readiness = [&]() -> server::ReadyState {
    if (!feed.HasSynced()) return {false, "informers not synced"};
    if (flags.leader_elect && (!elector || !elector->leader_known())) return {false, "leader not known"};
    return {true, ""};
  };
  // The admin API through the API server (APIService v1alpha1.admin.tessel.io): the leader
  // serves it and points the APIService's Service at itself (docs/admin.md).
  std::unique_ptr<kube::AggregatedApiPublisher> admin_api;
  if (flags.admin_api_port > 0) {
    const std::string& service = flags.admin_api_service;
    const char* pod_ip = std::getenv("POD_IP");
    absl::StatusOr<std::unique_ptr<kube::AggregatedApiPublisher>> made = kube::AggregatedApiPublisher::New(
        clients.status.get(), &admin_backend, &authorizer,
        {.bind_address = flags.bind_address,
         .port = flags.admin_api_port,
         .cert_dir = flags.cert_dir,
         .identity = identity,
         .admin_limits = {.max_snapshot_bytes = static_cast<size_t>(flags.simulate_max_bytes)},
         .service_namespace = service.substr(0, service.find('/')),
         .service_name = service.substr(service.find('/') + 1),
         .advertise_address = !flags.admin_api_advertise_address.empty() ? flags.admin_api_advertise_address
                              : pod_ip != nullptr                           ? pod_ip
                                                                            : "",
         .write_budget = write_budget});
    if (!made.ok()) return Fail(made.status(), "--admin-api-port");
    admin_api = *std::move(made);
  }
  server::Endpoints endpoints(flags, &metrics_registry, readiness, &authorizer, &admin_backend);
  if (absl::Status st = endpoints.Start(); !st.ok()) {
    provisioner.Stop();
    feed.Stop();
    return Fail(st);
  }

  // The scheduling loop, only while leading; what only the leader writes starts with it.
  kube::SchedulingLoop loop(&sched, &feed, &binder,
                            {.may_schedule = [&] { return cluster.MayWrite(); },
                             .on_synced = [&] {
                               queue_status.Start();
                               endpoints.StartAdmin();
                               if (admin_api) admin_api->Start();
                             }});
  if (flags.leader_elect) {
    elector = NewElector(flags, clients.election.get(), identity,
                         {.on_started_leading = [&] { loop.Start(); },
                          .on_stopped_leading = [&] {
                            if (!shutting_down.load()) loop.LeaseLost();
                          }});
    elector->Start();
  } else {
    loop.Start();
  }

  int sig = 0;
  sigwait(&signals, &sig);
  // Within the 30 s grace period: stop binding (the backlog is not drained; the next leader
  // schedules those pods again), let binds in flight end (their timeouts are bounded by the
  // lease), release the lease, and go.
  spdlog::info("received signal {}; shutting down", sig);
  shutting_down.store(true);  // every write from now on is refused before it is sent
  cluster.StopWriting();
  loop.Stop();
  binder.Shutdown();
  reporter.Shutdown();
  events.Shutdown();
  podgroup_status.Stop();
  provisioner.Stop();
  queue_status.Stop();
  endpoints.StopAdmin();
  if (admin_api) admin_api->Stop();
  if (elector) elector->Stop(/*release=*/true);
  feed.Stop();
  endpoints.Stop();
  spdlog::info("stopped");
  return 0;
}

}  // namespace
}  // namespace tessel

int main(int argc, char** argv) {
  // The admin API's Simulate runs here, in a child process of the scheduler (simulate_child.h).
  if (tessel::server::IsSimulateChild(argc, argv)) {
    auto logger = spdlog::stderr_color_mt("simulate");
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::warn);
    return tessel::server::SimulateChildMain(
        argc, argv, [](std::string_view snapshot, const std::string& config) -> absl::StatusOr<std::string> {
          absl::StatusOr<nlohmann::json> result = tessel::bench::RunReplayText(snapshot, {.config_path = config});
          if (!result.ok()) return result.status();
          return result->dump(2);
        });
  }
  // Debian's Abseil checks every mutex acquisition for lock-order cycles unless told not to, at
  // a cost on every scheduling decision (docs/bench.md).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  auto logger = spdlog::stderr_color_mt("tessel");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ %v");
  tessel::server::SchedulerOptions flags;
  flags.ParseOrExit(argc - 1, argv + 1);
  if (flags.print_defaults) {
    std::cout << tessel::DefaultConfigYaml();
    return 0;
  }
  spdlog::set_level(flags.verbosity >= 6   ? spdlog::level::trace
                    : flags.verbosity >= 4 ? spdlog::level::debug
                                            : spdlog::level::info);
  spdlog::flush_on(spdlog::level::info);
  return tessel::Run(flags);
}
