// The admin API (proto/tessel/v1/admin.proto) that tesselctl calls: the leader serves it over
// gRPC with TLS next to /metrics. Each call is authorized like /metrics, with the caller's own
// token ("authorization: Bearer TOKEN" metadata): TokenReview, then SubjectAccessReview of the
// call's verb on the virtual resource tessel.io/scheduler/<call> (RequestAuthorizer):
// UNAUTHENTICATED without a token the API server knows, PERMISSION_DENIED when denied,
// RESOURCE_EXHAUSTED over the review budget, UNAVAILABLE when the API server cannot be asked.
//
// What it answers comes from an AdminBackend; SchedulerAdminBackend answers from the live
// Scheduler: queue reports, the pending pods in the order the scheduler takes them, explain's
// dry runs on the scheduling thread, and simulate through a replay function.
//
//   SchedulerAdminBackend backend(&scheduler, [&](std::string_view list) { return replay(list); });
//   AdminServer admin({.bind_address = "0.0.0.0", .port = 10260, .tls = cert}, &backend, &auth);
//   RETURN_IF_ERROR(admin.Start());
//   ...
//   admin.Stop();
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/core/explain.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/quota/quota_usage.h"
#include "scheduler/server/http_server.h"
#include "scheduler/server/serving_cert.h"

namespace grpc {
class Server;
}
namespace tessel::v1 {
class ListQueuesResponse;
class ListPendingRequest;
class ListPendingResponse;
class ExplainRequest;
class ExplainResponse;
}  // namespace tessel::v1

namespace tessel::server {

// One pending pod, in the order the scheduler takes them.
struct PendingItem {
  PodRef pod;
  std::string queue;  // "" for none
  std::string state;  // active, backoff, unschedulable, gang-member
  std::string gang;   // "" for none
};

class AdminBackend {
 public:
  virtual ~AdminBackend() = default;
  virtual std::vector<QueueReport> Queues() = 0;
  virtual std::vector<PendingItem> Pending() = 0;
  virtual absl::StatusOr<Explanation> Explain(const std::string& pod_key) = 0;
  // The replay JSON of `snapshot` (a v1 List) under the scheduler's configuration.
  virtual absl::StatusOr<std::string> Simulate(std::string_view snapshot) = 0;
  virtual absl::Time Now() const = 0;
};

// The scheduler's order: its QueueSort (priority, then creation time, then name) over every
// pending pod, whatever part of the queue it waits in.
void SortPending(std::vector<PendingItem>& items);

using ReplayFn = std::function<absl::StatusOr<std::string>(std::string_view snapshot)>;

class SchedulerAdminBackend final : public AdminBackend {
 public:
  SchedulerAdminBackend(Scheduler* scheduler, ReplayFn replay,
                        absl::Duration explain_timeout = absl::Seconds(10))
      : scheduler_(scheduler), replay_(std::move(replay)), explain_timeout_(explain_timeout) {}
  std::vector<QueueReport> Queues() override;
  std::vector<PendingItem> Pending() override;
  // Runs on the scheduling thread; fails (UNAVAILABLE) if the loop does not take it in time.
  absl::StatusOr<Explanation> Explain(const std::string& pod_key) override;
  absl::StatusOr<std::string> Simulate(std::string_view snapshot) override;
  absl::Time Now() const override { return scheduler_->clock().Now(); }

 private:
  Scheduler* scheduler_;
  ReplayFn replay_;
  absl::Duration explain_timeout_;
};

// The answers of the admin calls, shared by the gRPC service and the aggregated API
// (aggregated_api.h), which serves the same messages as JSON.
void AnswerListQueues(AdminBackend& backend, tessel::v1::ListQueuesResponse* out);
void AnswerListPending(AdminBackend& backend, const tessel::v1::ListPendingRequest& in,
                       tessel::v1::ListPendingResponse* out);
absl::Status AnswerExplain(AdminBackend& backend, const tessel::v1::ExplainRequest& in,
                           tessel::v1::ExplainResponse* out);

// What a caller needs for an admin call, whichever way it comes: `verb` on the virtual
// resource tessel.io scheduler/<call>, in `namespace_` when the call is about one namespace
// ("" cluster-wide).
ResourceAccess AdminCallAccess(std::string_view verb, std::string_view call, std::string_view namespace_ = "");

struct AdminServerOptions {
  std::string bind_address = "0.0.0.0";
  int port = 10260;                 // 0 picks a free port (see port())
  std::optional<ServingCert> tls;   // unset: plaintext (tests only)
  size_t max_snapshot_bytes = 64 << 20;
};

class AdminServer {
 public:
  // `authorizer` null: every call is allowed (tests only).
  AdminServer(AdminServerOptions options, AdminBackend* backend, RequestAuthorizer* authorizer);
  ~AdminServer();
  absl::Status Start();
  void Stop();
  int port() const { return port_; }

 private:
  class Service;
  AdminServerOptions options_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace tessel::server
