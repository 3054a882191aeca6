// Makes the leader the one replica the API server's aggregation layer reaches for
// admin.tessel.io (server/aggregated_api.h), and keeps it so:
//   - reads the front proxy's trust from ConfigMap kube-system/extension-apiserver-authentication
//     (the requestheader CA, allowed names and headers) and hands it to the server, again at
//     every resync, so a rotated CA is picked up;
//   - starts the server (on the first sync);
//   - writes its own address and port into the EndpointSlice of the selector-less Service the
//     APIService names, and its serving certificate into the APIService's caBundle, so the
//     API server verifies whom it talks to without --insecure-skip-tls-verify.
// Both objects exist beforehand (manifests/admin-api.yaml); RBAC lets the scheduler update
// only those two, by name, never create any (a replica that could create EndpointSlices could
// steal another Service's traffic). Every resync re-asserts them, so an `apply` that reset
// them is repaired within a resync. Writes go only while this replica may write (the lease).
//
//   ASSIGN_OR_RETURN(auto admin_api, AggregatedApiPublisher::New(client, &backend, &authorizer,
//                                                                  {.port = 10262, ...}));
//   admin_api->Start();  // when leading and synced
//   admin_api->Stop();
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "scheduler/kube/client.h"
#include "scheduler/server/aggregated_api.h"

namespace tessel::kube {

struct AggregatedApiPublisherOptions {
  std::string bind_address = "0.0.0.0";
  int port = 10262;
  std::string cert_dir;  // where the self-signed serving certificate goes ("" a temporary one)
  std::string identity;  // this replica, for GET .../leader
  server::AdminLimits admin_limits;  // as the gRPC admin API's (--simulate-max-bytes)
  std::string service_namespace = "kube-system";
  std::string service_name = "tessel-admin-api";  // the Service and its EndpointSlice
  std::string advertise_address;                  // an IP, or a DNS name (an FQDN EndpointSlice)
  absl::Duration resync = absl::Seconds(30);
  std::function<std::optional<absl::Duration>()> write_budget;
};

class AggregatedApiPublisher {
 public:
  // The server, with a self-signed certificate for the Service's DNS name
  // (<name>.<namespace>.svc, the name the API server checks), and its publisher.
  static absl::StatusOr<std::unique_ptr<AggregatedApiPublisher>> New(KubeClient* client,
                                                                     server::AdminBackend* backend,
                                                                     server::UserAuthorizer* authorizer,
                                                                     AggregatedApiPublisherOptions options);
  ~AggregatedApiPublisher();
  void Start();
  void Stop();
  // One pass: trust, server, EndpointSlice, caBundle. The error names the object and field.
  absl::Status SyncOnce();

 private:
  absl::Status PublishEndpoint();
  absl::Status PublishCaBundle();
  AggregatedApiPublisher(KubeClient* client, std::unique_ptr<server::AggregatedApiServer> server,
                         AggregatedApiPublisherOptions options, std::string ca_pem);

  KubeClient* client_;
  std::unique_ptr<server::AggregatedApiServer> server_;
  const AggregatedApiPublisherOptions options_;
  const std::string ca_pem_;  // the server's certificate, for caBundle
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace tessel::kube
