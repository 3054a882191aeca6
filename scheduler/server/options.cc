#include "scheduler/server/options.h"

#include <cstdlib>
#include <iostream>

#include "scheduler/server/metrics.h"

namespace tessel::server {

SchedulerOptions::SchedulerOptions() : flags_("tessel-scheduler", "usage: tessel-scheduler [flags]") {
  flags_
      .String("--kubeconfig", "FILE", &kubeconfig,
              "kubeconfig to use (default: $KUBECONFIG, else in-cluster config)")
      .String("--context", "NAME", &context, "kubeconfig context (default: its current-context)")
      .String("--config", "FILE", &config, "scheduler configuration (KubeSchedulerConfiguration-shaped YAML)")
      .Bool("--print-defaults", &print_defaults, "print the built-in default configuration and exit")
      .Bool("--version", &version, "print the version and exit")
      .Bool("--leader-elect", &leader_elect, "run leader election on a Lease (default true)")
      .String({"--lock-namespace", "--leader-elect-resource-namespace"}, "NS", &lock_namespace,
              "namespace of the Lease (default kube-system)")
      .String({"--lock-name", "--leader-elect-resource-name"}, "NAME", &lock_name,
              "name of the Lease (default tessel-scheduler)")
      .Duration("--leader-elect-lease-duration", "D", &lease_duration, "(default 15s)")
      .Duration("--leader-elect-renew-deadline", "D", &renew_deadline, "(default 10s)")
      .Duration("--leader-elect-retry-period", "D", &retry_period, "(default 2s)")
      .String("--bind-address", "ADDR", &bind_address,
              "address for /healthz, /readyz, /metrics (default 0.0.0.0)")
      .Int("--secure-port", "N", &secure_port, {0, 65535},
           "HTTPS port for them (default 10259; 0: off). /metrics answers only\n"
           "callers whose bearer token the API server authenticates\n"
           "(TokenReview) and allows to get /metrics (SubjectAccessReview)")
      .String("--tls-cert-file", "FILE", &tls_cert_file, "the HTTPS certificate (PEM) ...")
      .String("--tls-private-key-file", "FILE", &tls_key_file,
              "... and its key; without them a self-signed pair is generated")
      .String("--cert-dir", "DIR", &cert_dir,
              "where the self-signed pair is written (default: a new temporary dir)")
      .Int("--port", "N", &port, {0, 65535},
           "plain HTTP port for them, /metrics without authorization (default\n"
           "0: off; for local use and tests)")
      .Double("--kube-api-qps", "Q", &qps, cmd::Sign::kNonNegative,
              "client-side QPS of each API client (default 50, or the config's\n"
              "clientConnection.qps); binding, events+status, leader election\n"
              "and informers each have their own budget")
      .Int("--kube-api-burst", "N", &burst, {.min = 1},
           "client-side burst of each client (default 100, or clientConnection.burst)")
      .Int("--bind-workers", "N", &bind_workers, {1, 256}, "binder threads: binds in flight at once (default 32)")
      .Duration("--queue-status-interval", "D", &queue_status_interval,
                "how often the leader writes Queue statuses, at most (default 10s)")
      .Int("--max-open-provisioning-requests", "N", &max_open_provisioning_requests, {.min = 0},
           "ProvisioningRequests open (pending or Provisioned) at once, at\n"
           "most; a gang over it waits for one to close (default 100; 0: no limit)")
      .Duration("--provisioning-retry-delay", "D", &provisioning_retry_delay,
                "how long a gang whose ProvisioningRequest failed waits before it\n"
                "asks again (default 10m)")
      .Int("--admin-port", "N", &admin_port, {0, 65535},
           "gRPC admin API for tesselctl, served by the leader on\n"
           "--bind-address with the secure port's certificate (default 10260;\n"
           "0: off). Callers are authorized like /metrics, per call\n"
           "(get/create on tessel.io scheduler/<call>)")
      .Bool("--admin-insecure", &admin_insecure, "serve the admin API without TLS (local use and tests only)")
      .Int("--probe-port", "N", &probe_port, {0, 65535},
           "plain HTTP port for /healthz, /livez and /readyz alone, served so\n"
           "that no caller can starve it: point the kubelet's probes there\n"
           "(default 0: off; the manifests use 10261)")
      .Int("--simulate-max-bytes", "N", &simulate_max_bytes, {.min = 1024},
           "largest snapshot the admin API's Simulate takes (default 16Mi)")
      .Int("--simulate-memory-mib", "N", &simulate_memory_mib, {.min = 64},
           "address space of the child process a Simulate runs in (default 768)")
      .Duration("--simulate-timeout", "D", &simulate_timeout,
                "wall-clock and CPU budget of one Simulate (default 60s)")
      .Int("--admin-api-port", "N", &admin_api_port, {0, 65535},
           "the admin API as the aggregated API admin.tessel.io/v1alpha1, served by the leader\n"
           "to the API server's front proxy (tesselctl's way in); 0 = off (default 10262)")
      .String("--admin-api-service", "NS/NAME", &admin_api_service,
              "the Service (and its EndpointSlice) of APIService v1alpha1.admin.tessel.io, which\n"
              "the leader points at itself (default kube-system/tessel-admin-api)")
      .String("--admin-api-advertise-address", "ADDR", &admin_api_advertise_address,
              "where the API server reaches this replica: an IP, or a DNS name (default $POD_IP)")
      .Int({"-v", "--v"}, "N", &verbosity, {}, "log verbosity: 0-3 info, 4-5 debug, 6+ trace (default 2)");
}

void SchedulerOptions::ParseOrExit(int argc, char** argv) {
  cmd::ParseOrExit(flags_, argc, argv);
  if (version) {
    std::cout << "tessel-scheduler " << BuildVersion() << "\n";
    std::exit(0);
  }
  if (const size_t slash = admin_api_service.find('/');
      slash == std::string::npos || slash == 0 || slash + 1 == admin_api_service.size() ||
      admin_api_service.find('/', slash + 1) != std::string::npos) {
    std::cerr << "tessel-scheduler: --admin-api-service: \"" << admin_api_service
              << "\" is not NAMESPACE/NAME\n\n"
              << flags_.Usage();
    std::exit(2);
  }
  if (renew_deadline >= lease_duration) {
    std::cerr << "tessel-scheduler: --leader-elect-renew-deadline must be shorter than the lease duration\n\n"
              << flags_.Usage();
    std::exit(2);
  }
}

absl::Status SchedulerOptions::ApplyConfig(const SchedulerConfig& cfg) {
  const LeaderElectionConfig& le = cfg.leader_election;
  auto unset = [&](std::string_view flag) { return !flags_.Given(flag); };
  if (le.leader_elect && unset("--leader-elect")) leader_elect = *le.leader_elect;
  if (le.lease_duration && unset("--leader-elect-lease-duration")) lease_duration = *le.lease_duration;
  if (le.renew_deadline && unset("--leader-elect-renew-deadline")) renew_deadline = *le.renew_deadline;
  if (le.retry_period && unset("--leader-elect-retry-period")) retry_period = *le.retry_period;
  if (le.resource_name && unset("--lock-name")) lock_name = *le.resource_name;
  if (le.resource_namespace && unset("--lock-namespace")) lock_namespace = *le.resource_namespace;
  if (renew_deadline >= lease_duration) {
    return absl::InvalidArgumentError("leaderElection: renewDeadline must be shorter than leaseDuration");
  }
  if (retry_period >= renew_deadline) {
    return absl::InvalidArgumentError("leaderElection: retryPeriod must be shorter than renewDeadline");
  }
  const ClientConnectionConfig& connection = cfg.client_connection;
  qps = qps.value_or(connection.qps.value_or(50));
  burst = burst.value_or(connection.burst.value_or(100));
  if (kubeconfig.empty()) kubeconfig = connection.kubeconfig.value_or("");
  if (kubeconfig.empty()) {
    if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') kubeconfig = env;
  }
  return absl::OkStatus();
}

absl::StatusOr<SchedulerConfig> SchedulerOptions::LoadConfig() {
  SchedulerConfig loaded;
  if (!config.empty()) {
    absl::StatusOr<SchedulerConfig> read = LoadSchedulerConfig(config);
    if (!read.ok()) return read.status();
    loaded = *std::move(read);
  }
  if (absl::Status st = ApplyConfig(loaded); !st.ok()) return st;
  return loaded;
}

}  // namespace tessel::server
