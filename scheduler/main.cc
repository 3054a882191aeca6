// tessel-scheduler: the live scheduler. It watches the cluster through informers, runs the
// scheduling loop on one thread while it holds the leader lease, binds through a pool of
// binder threads, reports outcomes as Events and pod conditions, and serves /healthz, /readyz
// and /metrics. See docs/deploy.md.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "plugins/registry.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/framework/config.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/delegated_auth.h"
#include "scheduler/kube/event_recorder.h"
#include "scheduler/kube/leader_election.h"
#include "scheduler/kube/live_cluster.h"
#include "scheduler/kube/podgroup_status.h"
#include "scheduler/kube/queue_status.h"
#include "scheduler/kube/scheduler_feed.h"
#include "scheduler/kube/status_reporter.h"
#include "scheduler/kube/work_queue.h"
#include "bench/replay/replay.h"
#include "scheduler/server/admin_service.h"
#include "scheduler/server/http_server.h"
#include "scheduler/server/metrics.h"
#include "scheduler/server/serving_cert.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace tessel {
namespace {

constexpr std::string_view kUsage = R"(usage: tessel-scheduler [flags]

  --kubeconfig FILE          kubeconfig to use (default: $KUBECONFIG, else in-cluster config)
  --context NAME             kubeconfig context (default: its current-context)
  --config FILE              scheduler configuration (KubeSchedulerConfiguration-shaped YAML)
  --print-defaults           print the built-in default configuration and exit
  --version                  print the version and exit
  --leader-elect BOOL        run leader election on a Lease (default true)
  --lock-namespace NS        namespace of the Lease (default kube-system)
  --lock-name NAME           name of the Lease (default tessel-scheduler)
  --leader-elect-lease-duration D   (default 15s)
  --leader-elect-renew-deadline D   (default 10s)
  --leader-elect-retry-period D     (default 2s)
  --bind-address ADDR        address for /healthz, /readyz, /metrics (default 0.0.0.0)
  --secure-port N            HTTPS port for them (default 10259; 0: off). /metrics answers only
                             callers whose bearer token the API server authenticates
                             (TokenReview) and allows to get /metrics (SubjectAccessReview)
  --tls-cert-file FILE       the HTTPS certificate (PEM) ...
  --tls-private-key-file FILE  ... and its key; without them a self-signed pair is generated
  --cert-dir DIR             where the self-signed pair is written (default: a new temporary dir)
  --port N                   plain HTTP port for them, /metrics without authorization (default
                             0: off; for local use and tests)
  --kube-api-qps Q           client-side QPS of each API client (default 50, or the config's
                             clientConnection.qps); binding, events+status, leader election
                             and informers each have their own budget
  --kube-api-burst N         client-side burst of each client (default 100, or clientConnection.burst)
  --bind-workers N           binder threads: binds in flight at once (default 32)
  --queue-status-interval D  how often the leader writes Queue statuses, at most (default 10s)
  --admin-port N             gRPC admin API for tesselctl, served by the leader on
                             --bind-address with the secure port's certificate (default 10260;
                             0: off). Callers are authorized like /metrics, per call
                             (get/create on tessel.io scheduler/<call>)
  --admin-insecure           serve the admin API without TLS (local use and tests only)
  -v N                       log verbosity: 0-3 info, 4-5 debug, 6+ trace (default 2)
)";

struct Flags {
  std::string kubeconfig;
  std::string context;
  std::string config;
  bool print_defaults = false;
  bool leader_elect = true;
  std::string lock_namespace = "kube-system";
  std::string lock_name = "tessel-scheduler";
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
  std::string bind_address = "0.0.0.0";
  int secure_port = 10259;
  int port = 0;
  std::string tls_cert_file, tls_key_file, cert_dir;
  std::optional<double> qps;      // unset: clientConnection.qps, else 50
  std::optional<int64_t> burst;   // unset: clientConnection.burst, else 100
  int bind_workers = 32;
  absl::Duration queue_status_interval = absl::Seconds(10);
  int admin_port = 10260;
  bool admin_insecure = false;
  int verbosity = 2;
  std::set<std::string, std::less<>> given;  // the flags on the command line, by name
};

// The configuration file's leaderElection settings, where no flag was given for them (a flag
// on the command line wins, as in kube-scheduler).
absl::Status ApplyLeaderElectionConfig(const LeaderElectionConfig& le, Flags& f) {
  auto unset = [&](std::string_view flag) { return !f.given.contains(flag); };
  if (le.leader_elect && unset("--leader-elect")) f.leader_elect = *le.leader_elect;
  if (le.lease_duration && unset("--leader-elect-lease-duration")) f.lease_duration = *le.lease_duration;
  if (le.renew_deadline && unset("--leader-elect-renew-deadline")) f.renew_deadline = *le.renew_deadline;
  if (le.retry_period && unset("--leader-elect-retry-period")) f.retry_period = *le.retry_period;
  if (le.resource_name && unset("--lock-name")) f.lock_name = *le.resource_name;
  if (le.resource_namespace && unset("--lock-namespace")) f.lock_namespace = *le.resource_namespace;
  if (f.renew_deadline >= f.lease_duration) {
    return absl::InvalidArgumentError(
        "leaderElection: renewDeadline must be shorter than leaseDuration");
  }
  if (f.retry_period >= f.renew_deadline) {
    return absl::InvalidArgumentError(
        "leaderElection: retryPeriod must be shorter than renewDeadline");
  }
  return absl::OkStatus();
}

absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0 || arg.rfind("-v", 0) == 0) {
      if (size_t eq = arg.find('='); eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_value = true;
      }
    }
    if (arg.rfind("-v", 0) == 0 && arg.size() > 2 && arg[2] != '=' && std::isdigit(arg[2])) {
      value = arg.substr(2);  // -v4
      arg = "-v";
      has_value = true;
    }
    if (arg == "--v") arg = "-v";
    f.given.insert(arg);
    auto need = [&]() -> absl::StatusOr<std::string> {
      if (has_value) return value;
      if (i + 1 >= argc) return absl::InvalidArgumentError(StrCat(arg, " needs a value"));
      return std::string(argv[++i]);
    };
    auto as_int = [&](const std::string& s) -> absl::StatusOr<int64_t> {
      char* end = nullptr;
      const long long v = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0') {
        return absl::InvalidArgumentError(StrCat(arg, ": \"", s, "\" is not an integer"));
      }
      return static_cast<int64_t>(v);
    };
    auto as_duration = [&](const std::string& s) -> absl::StatusOr<absl::Duration> {
      absl::Duration d;
      if (!absl::ParseDuration(s, &d) || d <= absl::ZeroDuration()) {
        return absl::InvalidArgumentError(StrCat(arg, ": \"", s, "\" is not a duration like 15s"));
      }
      return d;
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (arg == "--version") {
      std::cout << "tessel-scheduler " << server::BuildVersion() << "\n";
      std::exit(0);
    } else if (arg == "--print-defaults") {
      f.print_defaults = true;
    } else if (arg == "--kubeconfig") {
      ASSIGN_OR_RETURN(f.kubeconfig, need());
    } else if (arg == "--context") {
      ASSIGN_OR_RETURN(f.context, need());
    } else if (arg == "--config") {
      ASSIGN_OR_RETURN(f.config, need());
    } else if (arg == "--leader-elect") {
      // A bare --leader-elect means true; --leader-elect=false turns it off.
      if (has_value) {
        if (value != "true" && value != "false") {
          return absl::InvalidArgumentError("--leader-elect takes true or false");
        }
        f.leader_elect = value == "true";
      } else if (i + 1 < argc && (std::string_view(argv[i + 1]) == "true" ||
                                  std::string_view(argv[i + 1]) == "false")) {
        f.leader_elect = std::string_view(argv[++i]) == "true";
      } else {
        f.leader_elect = true;
      }
    } else if (arg == "--lock-namespace" || arg == "--leader-elect-resource-namespace") {
      ASSIGN_OR_RETURN(f.lock_namespace, need());
    } else if (arg == "--lock-name" || arg == "--leader-elect-resource-name") {
      ASSIGN_OR_RETURN(f.lock_name, need());
    } else if (arg == "--leader-elect-lease-duration") {
      ASSIGN_OR_RETURN(std::string v, need());
      ASSIGN_OR_RETURN(f.lease_duration, as_duration(v));
    } else if (arg == "--leader-elect-renew-deadline") {
      ASSIGN_OR_RETURN(std::string v, need());
      ASSIGN_OR_RETURN(f.renew_deadline, as_duration(v));
    } else if (arg == "--leader-elect-retry-period") {
      ASSIGN_OR_RETURN(std::string v, need());
      ASSIGN_OR_RETURN(f.retry_period, as_duration(v));
    } else if (arg == "--bind-address") {
      ASSIGN_OR_RETURN(f.bind_address, need());
    } else if (arg == "--port" || arg == "--secure-port") {
      ASSIGN_OR_RETURN(std::string v, need());
      ASSIGN_OR_RETURN(int64_t p, as_int(v));
      if (p < 0 || p > 65535) return absl::InvalidArgumentError(StrCat(arg, ": out of range"));
      (arg == "--port" ? f.port : f.secure_port) = static_cast<int>(p);
    } else if (arg == "--tls-cert-file") {
      ASSIGN_OR_RETURN(f.tls_cert_file, need());
    } else if (arg == "--tls-private-key-file") {
      ASSIGN_OR_RETURN(f.tls_key_file, need());
    } else if (arg == "--cert-dir") {
      ASSIGN_OR_RETURN(f.cert_dir, need());
    } else if (arg == "--kube-api-qps") {
      ASSIGN_OR_RETURN(std::string v, need());
      char* end = nullptr;
      f.qps = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || *f.qps < 0) {
        return absl::InvalidArgumentError(StrCat("--kube-api-qps: \"", v, "\" is not a number"));
      }
    } else if (arg == "--kube-api-burst") {
      ASSIGN_OR_RETURN(std::string v, need());
      ASSIGN_OR_RETURN(f.burst, as_int(v));
      if (*f.burst < 1) return absl::InvalidArgumentError("--kube-api-burst must be at least 1");
    } else if (arg == "--bind-workers") {
      ASSIGN_OR_RETURN(std::string v, need());
      ASSIGN_OR_RETURN(int64_t n, as_int(v));
      if (n < 1 || n > 256) return absl::InvalidArgumentError("--bind-workers: 1..256");
      f.bind_workers = static_cast<int>(n);
    } else if (arg == "--admin-port") {
      ASSIGN_OR_RETURN(std::string v, need());
      ASSIGN_OR_RETURN(int64_t p, as_int(v));
      if (p < 0 || p > 65535) return absl::InvalidArgumentError("--admin-port: out of range");
      f.admin_port = static_cast<int>(p);
    } else if (arg == "--admin-insecure") {
      f.admin_insecure = true;
    } else if (arg == "--queue-status-interval") {
      ASSIGN_OR_RETURN(std::string v, need());
      ASSIGN_OR_RETURN(f.queue_status_interval, as_duration(v));
    } else if (arg == "-v") {
      ASSIGN_OR_RETURN(std::string v, need());
      ASSIGN_OR_RETURN(int64_t n, as_int(v));
      f.verbosity = static_cast<int>(n);
    } else {
      return absl::InvalidArgumentError(StrCat("unknown flag ", arg));
    }
  }
  if (f.renew_deadline >= f.lease_duration) {
    return absl::InvalidArgumentError("--leader-elect-renew-deadline must be shorter than the lease duration");
  }
  return f;
}

// Fans one SchedulingObserver out to several.
class Observers final : public SchedulingObserver {
 public:
  void Add(SchedulingObserver* o) { list_.push_back(o); }
  void PodScheduled(const Pod& pod, const std::string& node) override {
    for (auto* o : list_) o->PodScheduled(pod, node);
  }
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override {
    for (auto* o : list_) o->PodUnschedulable(pod, kind, message);
  }
  void PodSchedulingGated(const Pod& pod) override {
    for (auto* o : list_) o->PodSchedulingGated(pod);
  }
  void PodsPreempted(const Pod& preemptor, const std::string& node,
                     const std::vector<PreemptionVictim>& victims) override {
    for (auto* o : list_) o->PodsPreempted(preemptor, node, victims);
  }
  void NominationCleared(const Pod& pod) override {
    for (auto* o : list_) o->NominationCleared(pod);
  }
  void PodRejected(const Pod& pod, const std::vector<std::string>& plugins) override {
    for (auto* o : list_) o->PodRejected(pod, plugins);
  }
  void GangMemberEvicted(const Pod& pod) override {
    for (auto* o : list_) o->GangMemberEvicted(pod);
  }
  void AttemptFinished(const Pod& pod, AttemptResult result, absl::Duration latency) override {
    for (auto* o : list_) o->AttemptFinished(pod, result, latency);
  }

 private:
  std::vector<SchedulingObserver*> list_;  // filled before the scheduler starts
};

std::string Identity() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "tessel");
  std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{}_{:08x}", host, static_cast<uint32_t>(rng()));
}

// The API clients, one per kind of traffic, each with its own QPS budget (kube-scheduler has
// separate clients for scheduling, events and leader election): a burst of events never delays
// a bind, and binds never delay the lease renewal.
struct Clients {
  std::unique_ptr<kube::KubeClient> binding;   // binds, evictions, discovery
  std::unique_ptr<kube::KubeClient> status;    // events and pod conditions
  std::unique_ptr<kube::KubeClient> election;  // the lease
  std::unique_ptr<kube::KubeClient> informers; // lists and watches
  // TokenReviews and SubjectAccessReviews for /metrics: callers of the endpoint decide how many
  // there are, so they never spend the budget of events and conditions (autoscalers read those).
  std::unique_ptr<kube::KubeClient> auth;
};

absl::StatusOr<Clients> MakeClients(const kube::ClientConfig& config, double qps, int64_t burst) {
  Clients c;
  auto make = [&](std::string_view role) {
    return kube::KubeClient::New(config, {.qps = qps,
                                          .burst = burst,
                                          .user_agent = StrCat("tessel-scheduler/0.1 (", role, ")")});
  };
  ASSIGN_OR_RETURN(c.binding, make("scheduler"));
  ASSIGN_OR_RETURN(c.status, make("events"));
  ASSIGN_OR_RETURN(c.election, make("leader-election"));
  ASSIGN_OR_RETURN(c.informers, make("informers"));
  // Its own small budget, short timeouts and no retries: an answer late is no answer (the
  // authorizer's own limit, DelegatedAuthOptions, keeps callers within it).
  ASSIGN_OR_RETURN(c.auth, kube::KubeClient::New(config, {.qps = 10,
                                                          .burst = 20,
                                                          .timeout = absl::Seconds(5),
                                                          .connect_timeout = absl::Seconds(2),
                                                          .max_attempts = 1,
                                                          .user_agent = "tessel-scheduler/0.1 (auth)"}));
  return c;
}

int Run(Flags flags) {
  // Signals are taken by sigwait on the main thread; every thread started later inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  SchedulerConfig config;
  if (!flags.config.empty()) {
    absl::StatusOr<SchedulerConfig> loaded = LoadSchedulerConfig(flags.config);
    if (!loaded.ok()) {
      spdlog::critical("{}", loaded.status().message());
      return 1;
    }
    config = *std::move(loaded);
  }
  for (const std::string& note : config.notes) spdlog::warn("configuration: {}", note);
  if (absl::Status st = ApplyLeaderElectionConfig(config.leader_election, flags); !st.ok()) {
    spdlog::critical("{}", st.message());
    return 1;
  }
  const ClientConnectionConfig& connection = config.client_connection;
  const double qps = flags.qps.value_or(connection.qps.value_or(50));
  const int64_t burst = flags.burst.value_or(connection.burst.value_or(100));

  std::string kubeconfig =
      flags.kubeconfig.empty() ? connection.kubeconfig.value_or("") : flags.kubeconfig;
  if (kubeconfig.empty()) {
    if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') kubeconfig = env;
  }
  absl::StatusOr<kube::ClientConfig> client_config =
      kubeconfig.empty() ? kube::InClusterConfig() : kube::LoadKubeconfig(kubeconfig, flags.context);
  if (!client_config.ok()) {
    spdlog::critical("{}", client_config.status().message());
    return 1;
  }
  absl::StatusOr<Clients> clients = MakeClients(*client_config, qps, burst);
  if (!clients.ok()) {
    spdlog::critical("{}", clients.status().message());
    return 1;
  }
  spdlog::info("API server {} (per client: QPS {}, burst {})", client_config->server, qps, burst);

  // Discovery, retried until the server answers (it may still be starting).
  std::string eviction_api;
  {
    kube::Backoff backoff({.initial = absl::Milliseconds(500), .max = absl::Seconds(10)});
    for (;;) {
      absl::StatusOr<std::string> api = kube::DiscoverEvictionApi(*clients->binding);
      if (api.ok()) {
        eviction_api = *api;
        break;
      }
      spdlog::warn("discovery: {}", api.status().message());
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGTERM) || sigismember(&pending, SIGINT)) return 0;
      absl::SleepFor(backoff.Next());
    }
  }
  spdlog::info("evictions use {}", eviction_api);

  const std::string identity = Identity();
  std::atomic<bool> shutting_down{false};
  std::unique_ptr<kube::LeaderElector> elector;
  // How long this replica may still write: the rest of its lease, checked before every write.
  auto write_budget = [&]() -> std::optional<absl::Duration> {
    if (shutting_down.load()) return std::nullopt;
    if (!flags.leader_elect) return absl::InfiniteDuration();
    return elector ? elector->WriteBudget() : std::nullopt;
  };
  kube::WorkerPool binder("bind", flags.bind_workers);
  kube::EventRecorder events(clients->status.get(),
                             {.identity = identity, .write_budget = write_budget});
  RealClock clock;
  Cache cache(&clock);
  kube::LiveCluster cluster(
      clients->binding.get(), &events,
      {.eviction_api = eviction_api,
       .write_budget = write_budget,
       .node_exists = [&cache](std::string_view node) { return cache.HasNode(node); },
       .pod_exists = [&cache](const Pod& pod) {
         std::optional<Cache::HeldPod> held = cache.Held(pod.Key());
         return held && held->uid == pod.meta.uid;
       }});
  kube::StatusReporter reporter(clients->status.get(), &events, {.write_budget = write_budget});
  Observers observers;
  observers.Add(&reporter);

  Registry registry = InTreeRegistry();
  kube::PodGroupStatusWriter podgroup_status(clients->status.get(), {.write_budget = write_budget});
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      Scheduler::New(SchedulerParams{.registry = &registry,
                                     .config = &config,
                                     .defaults = &DefaultProfile(),
                                     .cache = &cache,
                                     .clock = &clock,
                                     .api = &cluster,
                                     .observer = &observers,
                                     .bind_executor = &binder,
                                     .queue_options = {.initial_backoff = config.pod_initial_backoff,
                                                       .max_backoff = config.pod_max_backoff},
                                     .gang_status = &podgroup_status});
  if (!scheduler.ok()) {
    spdlog::critical("configuration: {}", scheduler.status().message());
    return 1;
  }
  Scheduler& sched = **scheduler;
  spdlog::info("profiles: {}", StrJoin(sched.ProfileNames(), ", "));

  server::MetricsRegistry metrics_registry;
  server::SchedulerMetrics metrics(&metrics_registry, &sched);
  observers.Add(&metrics);
  metrics_registry.Gauge("tessel_leader", "1 while this replica holds the leader lease", [&] {
    const bool leading = !flags.leader_elect || (elector && elector->IsLeader());
    return std::vector<server::GaugeSample>{{{}, leading ? 1.0 : 0.0}};
  });
  metrics_registry.CounterFunc("tessel_binds_total", "Binds the API server accepted",
                               [&] { return static_cast<double>(cluster.binds()); });
  metrics_registry.CounterFunc("tessel_binds_pod_gone_total",
                               "Binds answered: the pod is gone (deleted or replaced)",
                               [&] { return static_cast<double>(cluster.binds_of_gone_pods()); });
  metrics_registry.CounterSamplesFunc(
      "tessel_kube_requests_total", "Requests sent to the API server, by client and method", [&] {
        std::vector<server::GaugeSample> out;
        const std::pair<const char*, kube::KubeClient*> all[] = {
            {"binding", clients->binding.get()},
            {"status", clients->status.get()},
            {"election", clients->election.get()},
            {"informers", clients->informers.get()}};
        for (const auto& [name, client] : all) {
          for (std::string_view verb : kube::KubeClient::kMethods) {
            const int64_t n = client->requests_sent(verb);
            if (n > 0) {
              out.push_back({{{"client", name}, {"verb", std::string(verb)}},
                             static_cast<double>(n)});
            }
          }
        }
        return out;
      });
  metrics_registry.CounterFunc("tessel_events_created_total", "Event objects created",
                               [&] { return static_cast<double>(events.created()); });
  metrics_registry.CounterFunc("tessel_events_correlated_total",
                               "Events folded into an identical recent Event (count bumped)",
                               [&] { return static_cast<double>(events.correlated()); });
  metrics_registry.CounterFunc("tessel_events_dropped_total",
                               "Events the API server refused for good",
                               [&] { return static_cast<double>(events.dropped()); });
  metrics_registry.CounterFunc("tessel_status_writes_total", "PodScheduled conditions written",
                               [&] { return static_cast<double>(reporter.conditions_written()); });
  metrics_registry.CounterFunc("tessel_status_write_retries_total",
                               "PodScheduled condition writes retried after a failure",
                               [&] { return static_cast<double>(reporter.condition_retries()); });
  metrics_registry.CounterFunc("tessel_status_writes_dropped_total",
                               "PodScheduled condition writes the API server refused for good",
                               [&] { return static_cast<double>(reporter.conditions_dropped()); });
  metrics_registry.Gauge("tessel_status_writes_pending",
                         "Pods whose condition or events wait to be written", [&] {
                           return std::vector<server::GaugeSample>{
                               {{{"kind", "condition"}}, static_cast<double>(reporter.pending())},
                               {{{"kind", "event"}}, static_cast<double>(events.pending())}};
                         });

  sched.OnJobsWatched();  // the feed watches Jobs: a Job's pods wait until their Job is known
  kube::SchedulerFeed feed(clients->informers.get(), &sched,
                           {.on_pod_bound = [&](const std::string& key) { reporter.Bound(key); },
                            .on_pod_gone = [&](const std::string& key) { reporter.Forget(key); },
                            .pdb_api = eviction_api});
  metrics_registry.CounterSamplesFunc(
      "tessel_informer_watches_total", "Watch requests sent, by resource", [&] {
        std::vector<server::GaugeSample> out;
        for (const auto& informer : feed.informers()) {
          out.push_back({{{"resource", informer->spec().name}},
                         static_cast<double>(informer->watches_sent())});
        }
        return out;
      });
  feed.Start();

  // The endpoints: HTTPS with delegated authorization of /metrics, and plain HTTP if asked.
  auto readiness = [&]() -> server::ReadyState {
    if (!feed.HasSynced()) return {false, "informers not synced"};
    if (flags.leader_elect && (!elector || !elector->leader_known())) {
      return {false, "leader not known"};
    }
    return {true, ""};
  };
  kube::DelegatedAuthorizer metrics_auth(clients->auth.get(), &clock);
  std::vector<std::unique_ptr<server::HttpServer>> servers;
  std::optional<server::ServingCert> serving_cert;
  if (flags.secure_port > 0 || (flags.admin_port > 0 && !flags.admin_insecure)) {
    absl::StatusOr<server::ServingCert> cert = server::ServingCertFor(
        {.cert_file = flags.tls_cert_file, .key_file = flags.tls_key_file, .cert_dir = flags.cert_dir});
    if (!cert.ok()) {
      spdlog::critical("{}", cert.status().message());
      feed.Stop();
      return 1;
    }
    serving_cert = *cert;
  }
  if (flags.secure_port > 0) {
    const server::ServingCert* cert = &*serving_cert;
    servers.push_back(std::make_unique<server::HttpServer>(
        server::HttpServerOptions{.bind_address = flags.bind_address,
                                  .port = flags.secure_port,
                                  .tls = *cert,
                                  .metrics_authorizer = &metrics_auth},
        &metrics_registry, readiness));
  }
  if (flags.port > 0) {
    servers.push_back(std::make_unique<server::HttpServer>(
        server::HttpServerOptions{.bind_address = flags.bind_address, .port = flags.port},
        &metrics_registry, readiness));
  }
  for (auto& s : servers) {
    if (absl::Status st = s->Start(); !st.ok()) {
      spdlog::critical("{}", st.message());
      feed.Stop();
      return 1;
    }
  }

  // The admin API (tesselctl), served by the leader once its caches have synced; simulate
  // replays a snapshot under this scheduler's configuration, as tessel-bench replay does.
  server::SchedulerAdminBackend admin_backend(&sched, [&](std::string_view snapshot) -> absl::StatusOr<std::string> {
    absl::StatusOr<nlohmann::json> result = bench::RunReplayText(snapshot, {.config_path = flags.config});
    if (!result.ok()) return result.status();
    return result->dump(2);
  });
  server::AdminServer admin(
      server::AdminServerOptions{.bind_address = flags.bind_address,
                                 .port = flags.admin_port,
                                 .tls = flags.admin_insecure ? std::nullopt : serving_cert},
      &admin_backend, &metrics_auth);

  // Queue statuses, written by the leader once its caches have synced.
  kube::QueueStatusWriter queue_status(
      clients->status.get(),
      [&] {
        return kube::QueueStatusView{.reports = server::ComputeQueueReports(sched),
                                     .conflicts = sched.queue_store().Conflicts(),
                                     .invalid = sched.queue_store().Undecodable()};
      },
      {.write_budget = write_budget, .interval = flags.queue_status_interval});
  std::once_flag queue_status_started;

  // The scheduling loop: one thread, only while leading.
  std::atomic<bool> loop_stop{false};
  absl::Mutex loop_mu;  // start_loop runs on the elector's thread, shutdown on this one
  std::thread loop;
  auto start_loop = [&] {
    absl::MutexLock lock(&loop_mu);
    if (loop_stop.load()) return;
    loop = std::thread([&] {
      while (!loop_stop.load() && !feed.WaitForSync(absl::Milliseconds(500))) {
      }
      spdlog::info("caches synced; scheduling");
      if (!loop_stop.load()) {
        std::call_once(queue_status_started, [&] {
          queue_status.Start();
          if (flags.admin_port > 0) {
            // Not fatal: scheduling goes on without tesselctl's API.
            if (absl::Status st = admin.Start(); !st.ok()) spdlog::error("{}", st.message());
          }
        });
      }
      sched.Run(loop_stop, {.wait = absl::Milliseconds(500),
                            .may_schedule = [&] { return cluster.MayWrite(); }});
    });
  };

  if (flags.leader_elect) {
    elector = std::make_unique<kube::LeaderElector>(
        clients->election.get(),
        kube::LeaderElectionConfig{.namespace_ = flags.lock_namespace,
                                   .name = flags.lock_name,
                                   .identity = identity,
                                   .lease_duration = flags.lease_duration,
                                   .renew_deadline = flags.renew_deadline,
                                   .retry_period = flags.retry_period},
        kube::LeaderCallbacks{
            .on_started_leading = [&] { start_loop(); },
            .on_stopped_leading =
                [&] {
                  if (shutting_down.load()) return;
                  // Like kube-scheduler: stop at once and let the Deployment restart us, so
                  // that no state of the lost term leaks into the next one.
                  loop_stop.store(true);
                  binder.DiscardPending();
                  spdlog::critical("leader election lost; exiting");
                  spdlog::shutdown();
                  std::_Exit(1);
                },
        });
    elector->Start();
  } else {
    start_loop();
  }

  int sig = 0;
  sigwait(&signals, &sig);
  // Within the 30 s grace period: stop binding (the backlog is not drained; the next leader
  // schedules those pods again), let binds in flight end (their timeouts are bounded by the
  // lease), release the lease, and go.
  spdlog::info("received signal {}; shutting down", sig);
  shutting_down.store(true);  // every write from now on is refused before it is sent
  cluster.StopWriting();
  {
    absl::MutexLock lock(&loop_mu);
    loop_stop.store(true);
  }
  sched.queue().Close();
  const size_t discarded = binder.DiscardPending();
  if (discarded > 0) spdlog::info("{} binds not started; the next leader schedules them", discarded);
  if (loop.joinable()) loop.join();
  binder.DiscardPending();  // what the loop queued while it finished its cycle
  binder.Shutdown();
  reporter.Shutdown();
  events.Shutdown();
  podgroup_status.Stop();
  queue_status.Stop();
  admin.Stop();
  if (elector) elector->Stop(/*release=*/true);
  feed.Stop();
  for (auto& s : servers) s->Stop();
  spdlog::info("stopped");
  return 0;
}

}  // namespace
}  // namespace tessel

int main(int argc, char** argv) {
  // Debian's Abseil checks every mutex acquisition for lock-order cycles unless told not to, at
  // a cost on every scheduling decision (docs/bench.md).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  auto logger = spdlog::stderr_color_mt("tessel");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ %v");
  absl::StatusOr<tessel::Flags> flags = tessel::ParseFlags(argc, argv);
  if (!flags.ok()) {
    std::cerr << "tessel-scheduler: " << flags.status().message() << "\n\n" << tessel::kUsage;
    return 2;
  }
  if (flags->print_defaults) {
    std::cout << tessel::DefaultConfigYaml();
    return 0;
  }
  spdlog::set_level(flags->verbosity >= 6   ? spdlog::level::trace
                    : flags->verbosity >= 4 ? spdlog::level::debug
                                            : spdlog::level::info);
  spdlog::flush_on(spdlog::level::info);
  return tessel::Run(*flags);
}
