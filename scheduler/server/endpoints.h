// What the live scheduler serves: /healthz, /readyz and /metrics over HTTPS (--secure-port;
// /metrics only to callers `authorizer` allows) and over plain HTTP (--port, local use), the
// probes alone on a port no caller can starve (--probe-port), and
// the admin API for tesselctl (--admin-port), started only by the leader once its caches have
// synced. The HTTPS port and the admin API share one serving certificate: the given pair, or a
// self-signed one.
//
//   Endpoints endpoints(options, &registry, readiness, &authorizer, &admin_backend);
//   RETURN_IF_ERROR(endpoints.Start());
//   ... leading, caches synced: endpoints.StartAdmin();
//   endpoints.StopAdmin();  ...  endpoints.Stop();
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "scheduler/server/admin_service.h"
#include "scheduler/server/http_server.h"
#include "scheduler/server/metrics.h"
#include "scheduler/server/options.h"
#include "scheduler/server/probe_server.h"
#include "scheduler/server/serving_cert.h"

namespace tessel::server {

class Endpoints {
 public:
  // Every pointer must outlive the endpoints (which stop when destroyed).
  Endpoints(const SchedulerOptions& options, const MetricsRegistry* registry,
            std::function<ReadyState()> readiness, RequestAuthorizer* authorizer, AdminBackend* admin);

  // The certificate (when a TLS port is set) and the HTTP servers; the error says what failed.
  absl::Status Start();
  // The admin API, when its port is set. Not fatal: scheduling goes on without tesselctl's API
  // (a failure is logged).
  void StartAdmin();
  void StopAdmin();
  void Stop();

 private:
  const SchedulerOptions& options_;
  const MetricsRegistry* registry_;
  std::function<ReadyState()> readiness_;
  RequestAuthorizer* authorizer_;
  AdminBackend* admin_backend_;
  std::optional<ServingCert> cert_;
  std::vector<std::unique_ptr<HttpServer>> servers_;
  std::unique_ptr<ProbeServer> probes_;
  std::unique_ptr<AdminServer> admin_;
};

}  // namespace tessel::server
