// tessel-scheduler: the live scheduler. It watches the cluster through informers, runs the
// scheduling loop on one thread while it holds the leader lease, binds through a pool of
// binder threads, reports outcomes as Events and pod conditions, and serves /healthz, /readyz
// and /metrics. See docs/deploy.md.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <random>
#include <thread>

#include "plugins/registry.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/framework/config.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/leader_election.h"
#include "scheduler/kube/live_cluster.h"
#include "scheduler/kube/podgroup_status.h"
#include "scheduler/kube/scheduler_feed.h"
#include "scheduler/kube/work_queue.h"
#include "scheduler/server/http_server.h"
#include "scheduler/server/metrics.h"
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
  --leader-elect BOOL        run leader election on a Lease (default true)
  --lock-namespace NS        namespace of the Lease (default kube-system)
  --lock-name NAME           name of the Lease (default tessel-scheduler)
  --leader-elect-lease-duration D   (default 15s)
  --leader-elect-renew-deadline D   (default 10s)
  --leader-elect-retry-period D     (default 2s)
  --bind-address ADDR        address for /healthz, /readyz, /metrics (default 0.0.0.0)
  --port N                   port for them (default 10251; 0 picks a free one)
  --kube-api-qps Q           client-side QPS to the API server (default 50)
  --kube-api-burst N         client-side burst (default 100)
  --bind-workers N           binder threads (default 8)
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
  int port = 10251;
  double qps = 50;
  int64_t burst = 100;
  int bind_workers = 8;
  int verbosity = 2;
};

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
      if (p < 0 || p > 65535) return absl::InvalidArgumentError("--port: out of range");
      f.port = static_cast<int>(p);
    } else if (arg == "--kube-api-qps") {
      ASSIGN_OR_RETURN(std::string v, need());
      char* end = nullptr;
      f.qps = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || f.qps < 0) {
        return absl::InvalidArgumentError(StrCat("--kube-api-qps: \"", v, "\" is not a number"));
      }
    } else if (arg == "--kube-api-burst") {
      ASSIGN_OR_RETURN(std::string v, need());
      ASSIGN_OR_RETURN(f.burst, as_int(v));
      if (f.burst < 1) return absl::InvalidArgumentError("--kube-api-burst must be at least 1");
    } else if (arg == "--bind-workers") {
      ASSIGN_OR_RETURN(std::string v, need());
      ASSIGN_OR_RETURN(int64_t n, as_int(v));
      if (n < 1 || n > 256) return absl::InvalidArgumentError("--bind-workers: 1..256");
      f.bind_workers = static_cast<int>(n);
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
  void PodUnschedulable(const Pod& pod, const std::string& message) override {
    for (auto* o : list_) o->PodUnschedulable(pod, message);
  }
  void AttemptFinished(const Pod& pod, std::string_view result, absl::Duration latency) override {
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

int Run(const Flags& flags) {
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

  std::string kubeconfig = flags.kubeconfig;
  if (kubeconfig.empty()) {
    if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') kubeconfig = env;
  }
  absl::StatusOr<kube::ClientConfig> client_config =
      kubeconfig.empty() ? kube::InClusterConfig() : kube::LoadKubeconfig(kubeconfig, flags.context);
  if (!client_config.ok()) {
    spdlog::critical("{}", client_config.status().message());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client =
      kube::KubeClient::New(*client_config, {.qps = flags.qps, .burst = flags.burst});
  if (!client.ok()) {
    spdlog::critical("{}", client.status().message());
    return 1;
  }
  spdlog::info("API server {} (client QPS {}, burst {})", client_config->server, flags.qps,
               flags.burst);

  // Discovery, retried until the server answers (it may still be starting).
  std::string eviction_api;
  {
    kube::Backoff backoff({.initial = absl::Milliseconds(500), .max = absl::Seconds(10)});
    for (;;) {
      absl::StatusOr<std::string> api = kube::DiscoverEvictionApi(**client);
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
  kube::WorkerPool binder("bind", flags.bind_workers);
  kube::WorkerPool status_pool("status", 2, 10000);
  kube::LiveCluster cluster(client->get(), &status_pool,
                            {.eviction_api = eviction_api,
                             .identity = identity,
                             .may_write = [&]() -> bool {
                               return !flags.leader_elect || (elector && elector->IsLeader());
                             }});
  kube::StatusReporter reporter(&cluster, &status_pool);
  Observers observers;
  observers.Add(&reporter);

  Registry registry = InTreeRegistry();
  RealClock clock;
  Cache cache(&clock);
  kube::PodGroupStatusWriter podgroup_status(client->get());
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      Scheduler::New(SchedulerParams{.registry = &registry,
                                     .config = &config,
                                     .defaults = &DefaultProfile(),
                                     .cache = &cache,
                                     .clock = &clock,
                                     .api = &cluster,
                                     .observer = &observers,
                                     .bind_executor = &binder,
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
  metrics_registry.CounterFunc("tessel_kube_requests_total", "Requests sent to the API server",
                               [&] { return static_cast<double>((*client)->requests_sent()); });
  metrics_registry.CounterFunc("tessel_events_suppressed_total",
                               "Events not posted: deduplicated or rate-limited",
                               [&] { return static_cast<double>(cluster.events_suppressed()); });

  kube::SchedulerFeed feed(client->get(), &sched,
                           {.on_pod_bound = [&](const std::string& key) { reporter.Bound(key); },
                            .on_pod_gone = [&](const std::string& key) { reporter.Forget(key); }});
  feed.Start();

  server::HttpServer http({.bind_address = flags.bind_address, .port = flags.port},
                          &metrics_registry, [&]() -> server::ReadyState {
                            if (!feed.HasSynced()) return {false, "informers not synced"};
                            if (flags.leader_elect && (!elector || !elector->leader_known())) {
                              return {false, "leader not known"};
                            }
                            return {true, ""};
                          });
  if (absl::Status st = http.Start(); !st.ok()) {
    spdlog::critical("{}", st.message());
    feed.Stop();
    return 1;
  }

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
      absl::Time next_cleanup = absl::Now();
      while (!loop_stop.load()) {
        if (!cluster.MayWrite()) {
          absl::SleepFor(absl::Milliseconds(100));  // leadership is being lost: do nothing
          continue;
        }
        sched.ScheduleOneWait(absl::Milliseconds(500));
        if (absl::Now() >= next_cleanup) {
          for (const std::string& key : cache.CleanupExpiredAssumedPods()) {
            spdlog::warn("assumed pod {} was never confirmed by the informer; dropped", key);
          }
          next_cleanup = absl::Now() + absl::Seconds(1);
        }
      }
    });
  };

  if (flags.leader_elect) {
    elector = std::make_unique<kube::LeaderElector>(
        client->get(),
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
  spdlog::info("received signal {}; shutting down", sig);
  shutting_down.store(true);
  {
    absl::MutexLock lock(&loop_mu);
    loop_stop.store(true);
  }
  sched.queue().Close();
  if (loop.joinable()) loop.join();
  binder.Shutdown();  // in-flight binds finish while we still hold the lease
  if (elector) elector->Stop(/*release=*/true);
  feed.Stop();
  status_pool.Shutdown();
  http.Stop();
  spdlog::info("stopped");
  return 0;
}

}  // namespace
}  // namespace tessel

int main(int argc, char** argv) {
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
