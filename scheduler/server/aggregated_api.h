// The admin API as a Kubernetes aggregated API (APIService v1alpha1.admin.tessel.io), so that
// tesselctl reaches it through the API server with the user's own kubeconfig, whatever the
// kubeconfig authenticates with. kube-apiserver authenticates and authorizes the user, then
// forwards the request over TLS with its front-proxy client certificate and the user in
// X-Remote-User / X-Remote-Group / X-Remote-Extra-* headers. This server believes those headers
// only from a client certificate that chains to the requestheader CA and whose common name is
// allowed (both from ConfigMap kube-system/extension-apiserver-authentication), then authorizes
// the user again, per call, with a SubjectAccessReview of the same virtual resource the gRPC
// admin API checks (AdminCallAccess), per namespace where the call names one.
//
// It answers with the admin API's own messages (AnswerListQueues, ...) in their JSON form:
//   GET  /apis/admin.tessel.io/v1alpha1                                    discovery
//   GET  /apis/admin.tessel.io/v1alpha1/queues                             ListQueuesResponse
//   GET  /apis/admin.tessel.io/v1alpha1/pending[?queue=Q]                  ListPendingResponse
//   GET  /apis/admin.tessel.io/v1alpha1/namespaces/NS/pending[?queue=Q]    ... of one namespace
//   GET  /apis/admin.tessel.io/v1alpha1/namespaces/NS/explanations/POD     ExplainResponse
//   POST /apis/admin.tessel.io/v1alpha1/simulations  (body: a snapshot)    the replay JSON
//   GET  /apis/admin.tessel.io/v1alpha1/leader                             the answering replica
// Errors are Kubernetes Status objects. Only the leader serves it (kube/aggregated_api_publisher.h
// points the Service at the leader).
//
//   AggregatedApiServer api({.port = 10262, .tls = cert}, &backend, &authorizer);
//   api.SetRequestHeaderConfig(config);  // before Start, and whenever the CA rotates
//   RETURN_IF_ERROR(api.Start());
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "scheduler/server/admin_service.h"
#include "scheduler/server/http_server.h"
#include "scheduler/server/request_header.h"
#include "scheduler/server/serving_cert.h"

namespace httplib {
class Server;
}

namespace tessel::server {

inline constexpr std::string_view kAdminApiGroup = "admin.tessel.io";
inline constexpr std::string_view kAdminApiVersion = "v1alpha1";
inline constexpr std::string_view kAdminApiServiceName = "v1alpha1.admin.tessel.io";  // the APIService

class UserAuthorizer {
 public:
  virtual ~UserAuthorizer() = default;
  // 200 allowed, 403 denied, 429 over budget, 500 not decided. Called on server threads.
  virtual AuthDecision AuthorizeUser(const UserInfo& user, const ResourceAccess& access) = 0;
};

struct AggregatedApiOptions {
  std::string bind_address = "0.0.0.0";
  int port = 10262;  // 0 picks a free port (see port())
  ServingCert tls;
  std::string identity;  // the replica, for GET .../leader
  AdminLimits admin_limits;  // Simulate's snapshot size, namespaces reviewed per call (admin_service.h)
  // Every caller is the API server's front proxy: one source address, many connections. A call
  // may wait for a dry run or a simulation (--simulate-timeout, 60 s): a connection may last
  // longer than the API server's own 60 s request timeout, and each call's deadline is its
  // connection's (explains and simulations are dropped when it passes).
  ServingLimits limits = {.request_timeout = absl::Seconds(90),
                          .read_timeout = absl::Seconds(10),
                          .write_timeout = absl::Seconds(60),
                          .max_connections_per_source = 64};
};

class AggregatedApiServer {
 public:
  AggregatedApiServer(AggregatedApiOptions options, AdminBackend* backend, UserAuthorizer* authorizer);
  ~AggregatedApiServer();

  // Which front proxy to believe. Until it is set every request is refused (401).
  absl::Status SetRequestHeaderConfig(const RequestHeaderConfig& config);
  absl::Status Start();
  void Stop();
  bool running() const { return server_ != nullptr; }
  int port() const { return port_; }

  class Handler;

 private:
  AggregatedApiOptions options_;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<httplib::Server> server_;
  std::unique_ptr<ConnectionGuard> guard_;  // reset after server_ (it watches server_'s connections)
  std::thread thread_;
  int port_ = 0;
};

}  // namespace tessel::server
