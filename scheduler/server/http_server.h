// The scheduler's HTTP endpoints (cpp-httplib), over HTTPS (the secure port) or plain HTTP:
//   /healthz  200 "ok" while the process is alive and serving (open to anyone)
//   /readyz   200 when the informers have synced and, with leader election, the leader is
//             known; 503 with the reason otherwise (open to anyone)
//   /metrics  Prometheus text format (MetricsRegistry::Render); with an authorizer, only for a
//             caller whose bearer token it allows (401 without a token, 403 when denied, 429
//             when the authorizer is asked too often)
// Callers are bounded (ServingLimits): body and header sizes, read and write deadlines, and
// enough workers that the probes are answered while other connections are held.
//
//   HttpServer server({.bind_address = "0.0.0.0", .port = 10259, .tls = cert,
//                      .metrics_authorizer = &delegated}, &registry,
//                     [&] { return ReadyState{...}; });
//   RETURN_IF_ERROR(server.Start());
//   ...
//   server.Stop();
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "scheduler/server/metrics.h"
#include "scheduler/server/serving_cert.h"

namespace httplib {
class Server;
}

namespace tessel::server {

// Whether a request may be served: a caller authenticated by its bearer token and authorized
// for the request's verb on its non-resource path (e.g. get /metrics).
struct AuthDecision {
  int http_status = 200;  // 200 allowed, 401 not authenticated, 403 denied, 500 not decided
  std::string reason;
};
// A resource (cluster-wide, or in one namespace) a caller wants to use (a SubjectAccessReview's resourceAttributes),
// e.g. the admin API's virtual resource: get tessel.io scheduler/explain.
struct ResourceAccess {
  std::string verb;
  std::string group;
  std::string resource;
  std::string subresource;
  std::string namespace_;  // "" cluster-wide
  std::string Describe() const;  // "get tessel.io/scheduler/explain" (+ " in namespace NS")
};
class RequestAuthorizer {
 public:
  virtual ~RequestAuthorizer() = default;
  // `bearer_token` is empty when the request carried none. Called on server threads.
  virtual AuthDecision Authorize(std::string_view bearer_token, std::string_view verb,
                                 std::string_view path) = 0;
  // The same for a resource (the admin API). Not supported unless overridden: 403.
  virtual AuthDecision AuthorizeResource(std::string_view bearer_token, const ResourceAccess& access);
};

// What a caller may cost the server. Only GET is served, so a body is never needed: a request
// with a larger one is refused (413) before it is read, and never buffered. A connection that
// sends nothing for `read_timeout` (a stalled TLS handshake included: httplib bounds the
// handshake by the same timeout) is closed. /metrics waits on the API server (TokenReview and
// SubjectAccessReview), so workers are many: probes find a free one while slow or hostile
// callers hold others, each for at most a read timeout per byte they trickle.
struct ServingLimits {
  size_t max_body_bytes = 64 * 1024;
  absl::Duration read_timeout = absl::Seconds(2);
  absl::Duration write_timeout = absl::Seconds(5);
  absl::Duration keep_alive_timeout = absl::Seconds(2);
  size_t max_requests_per_connection = 20;
  size_t workers = 32;
};

// Applies `limits` to a cpp-httplib server (this one, and the aggregated API's).
void ApplyServingLimits(httplib::Server& server, const ServingLimits& limits);

struct HttpServerOptions {
  std::string bind_address = "0.0.0.0";
  int port = 10259;  // 0 picks a free port (see port())
  std::optional<ServingCert> tls;                   // set: HTTPS (TLS 1.2 or later only)
  RequestAuthorizer* metrics_authorizer = nullptr;  // set: /metrics is authorized
  ServingLimits limits;
};

struct ReadyState {
  bool ready = false;
  std::string reason;  // why not, for the 503 body
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, const MetricsRegistry* registry,
             std::function<ReadyState()> readiness);
  ~HttpServer();

  // Binds the port (failing at once if it is taken) and serves on a thread of its own.
  absl::Status Start();
  void Stop();
  int port() const { return port_; }

 private:
  HttpServerOptions options_;
  const MetricsRegistry* registry_;
  std::function<ReadyState()> readiness_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace tessel::server
