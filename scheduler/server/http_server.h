// The scheduler's HTTP endpoints (cpp-httplib), over HTTPS (the secure port) or plain HTTP:
//   /healthz  200 "ok" while the process is alive and serving (open to anyone)
//   /readyz   200 when the informers have synced and, with leader election, the leader is
//             known; 503 with the reason otherwise (open to anyone)
//   /metrics  Prometheus text format (MetricsRegistry::Render); with an authorizer, only for a
//             caller whose bearer token it allows (401 without a token, 403 when denied, 429
//             when the authorizer is asked too often)
// Callers are bounded (ServingLimits): body and request sizes, a deadline per connection for
// its headers and for the whole request, connections per source address, and enough workers
// for /metrics callers waiting on the API server. The kubelet's probes have a port of their own
// (probe_server.h).
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

#include <openssl/types.h>  // SSL_CTX (ApplyServingLimits)

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "scheduler/server/metrics.h"
#include "scheduler/server/serving_cert.h"

namespace httplib {
class Server;
}

namespace tessel::server {

class ConnectionGuard;

// Whether a request may be served: a caller authenticated by its bearer token and authorized
// for the request's verb on its non-resource path (e.g. get /metrics).
struct AuthDecision {
  int http_status = 200;  // 200 allowed, 401 not authenticated, 403 denied, 429 over budget, 500 not decided
  std::string reason;
};
// A resource a caller wants to use (a SubjectAccessReview's resourceAttributes), e.g. the
// admin API's virtual resource: get tessel.io scheduler/pending, in a namespace or cluster-wide.
struct ResourceAccess {
  std::string verb;
  std::string group;
  std::string resource;
  std::string subresource;
  std::string namespace_;  // "": cluster-wide (every namespace)
  std::string Describe() const;  // "get tessel.io/scheduler/explain [in namespace ns]"
};
class RequestAuthorizer {
 public:
  virtual ~RequestAuthorizer() = default;
  // `bearer_token` is empty when the request carried none; `source` is the caller's address
  // (budgets are kept per source). Called on server threads.
  virtual AuthDecision Authorize(std::string_view bearer_token, std::string_view verb, std::string_view path,
                                 std::string_view source = "") = 0;
  // The same for a resource (the admin API). Not supported unless overridden: 403.
  virtual AuthDecision AuthorizeResource(std::string_view bearer_token, const ResourceAccess& access,
                                         std::string_view source = "");
  // Authentication alone (the admin API asks it before it reads a message). Default: 200 when
  // there is a token (the authorization that follows decides).
  virtual AuthDecision Authenticate(std::string_view bearer_token, std::string_view source = "");
};

// What a caller may cost. This server serves GETs only, so a body is never needed (the aggregated
// admin API sets max_body_bytes to its snapshot cap): a request announcing one larger than
// max_body_bytes, or a chunked one, whatever its method, is refused (413) before it is read, and
// never buffered. Each connection serves one request and closes (no keep-alive: what a caller
// sends after its request is never read). Over TLS each connection is also watched as a whole
// (ConnectionGuard): it must deliver its request headers within header_timeout of its
// handshake's start, whatever it trickles, and may send at most max_request_bytes in all; a
// source address holds at most max_connections_per_source connections. The workers are many
// because /metrics waits on the API server (TokenReview, SubjectAccessReview). The probes have
// a server of their own (ProbeServer) that no caller can starve.
struct ServingLimits {
  size_t max_body_bytes = 64 * 1024;
  size_t max_request_bytes = 128 * 1024;  // TLS: application bytes a connection may send
  absl::Duration header_timeout = absl::Seconds(5);  // TLS: handshake start to the request's headers
  absl::Duration request_timeout = absl::Seconds(30);  // TLS: handshake start to the connection's end
  absl::Duration read_timeout = absl::Seconds(2);
  absl::Duration write_timeout = absl::Seconds(5);
  size_t max_connections_per_source = 8;  // TLS
  size_t workers = 32;
};

// Applies `limits` to a cpp-httplib server (this one, and the aggregated API's): workers,
// timeouts, one request per connection, a body refused before it is read; with `tls` (the
// server's SSL_CTX), also the ConnectionGuard, returned to be kept as long as the server runs.
std::unique_ptr<ConnectionGuard> ApplyServingLimits(httplib::Server& server, const ServingLimits& limits,
                                                    SSL_CTX* tls);

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
  std::unique_ptr<ConnectionGuard> guard_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace tessel::server
