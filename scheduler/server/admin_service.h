// The admin API (proto/tessel/v1/admin.proto) that tesselctl calls: the leader serves it over
// gRPC with TLS next to /metrics. Each call carries the caller's own token ("authorization:
// Bearer TOKEN" metadata), checked before its message is read (a TokenReview in an
// AuthMetadataProcessor: an unauthenticated caller never gets a byte of its message buffered),
// then authorized as the API server would (RequestAuthorizer's SubjectAccessReview of the call's
// verb on the virtual resource tessel.io/scheduler/<call>): cluster-wide, or per namespace for
// the calls that read pods (ListPending, GetPending, Explain), so that a RoleBinding of
// tessel-admin-reader in team-a shows team-a's pods and nothing else. UNAUTHENTICATED without a
// token the API server knows, PERMISSION_DENIED when denied, RESOURCE_EXHAUSTED over a budget,
// UNAVAILABLE when the API server cannot be asked.
//
// What a caller may cost (AdminLimits): messages are capped for the whole server (gRPC 1.51 has
// no per-method receive limit; the only big message is Simulate's snapshot), streams per
// connection, threads and memory through a ResourceQuota; explains waiting for the scheduling
// thread are capped and dropped when their caller gives up; one Simulate runs at a time, in a
// child process with a memory and a time budget (simulate_child.h).
//
// What it answers comes from an AdminBackend; SchedulerAdminBackend answers from the live
// Scheduler: queue reports, the pending pods in the order the scheduler takes them, explain's
// dry runs on the scheduling thread, and simulate through a replay function.
//
//   SchedulerAdminBackend backend(&scheduler, [&](std::string_view list, const CallControl& c) {...});
//   AdminServer admin({.bind_address = "0.0.0.0", .port = 10260, .tls = cert}, &backend, &auth);
//   RETURN_IF_ERROR(admin.Start());
//   ...
//   admin.Stop();
#pragma once

#include <atomic>
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
class GetPendingResponse;
}  // namespace tessel::v1

namespace tessel::server {

// One pending pod, in the order the scheduler takes them.
struct PendingItem {
  PodRef pod;
  std::string queue;  // "" for none
  std::string state;  // active, backoff, unschedulable, gang-member
  std::string gang;   // "" for none
};

// How long a call may still run, and whether its caller has given up (the gRPC context).
struct CallControl {
  absl::Time deadline = absl::InfiniteFuture();
  std::function<bool()> cancelled;
  bool Over() const { return absl::Now() >= deadline || (cancelled && cancelled()); }
};

class AdminBackend {
 public:
  virtual ~AdminBackend() = default;
  virtual std::vector<QueueReport> Queues() = 0;
  // The cohort tree (none by default: a backend without cohorts).
  virtual std::vector<CohortReport> Cohorts() { return {}; }
  virtual std::vector<PendingItem> Pending() = 0;
  // RESOURCE_EXHAUSTED when too many wait already; CANCELLED when the caller gave up first.
  virtual absl::StatusOr<Explanation> Explain(const std::string& pod_key, const CallControl& control) = 0;
  // The replay JSON of `snapshot` (a v1 List) under the scheduler's configuration.
  virtual absl::StatusOr<std::string> Simulate(std::string_view snapshot, const CallControl& control) = 0;
  virtual absl::Time Now() const = 0;
};

// The scheduler's order: its QueueSort (priority, then creation time, then name) over every
// pending pod, whatever part of the queue it waits in.
void SortPending(std::vector<PendingItem>& items);

using ReplayFn = std::function<absl::StatusOr<std::string>(std::string_view snapshot, const CallControl& control)>;

struct ExplainLimits {
  absl::Duration timeout = absl::Seconds(10);  // for the scheduling loop to take it
  int max_waiting = 4;                         // explains queued for the loop at once
};

class SchedulerAdminBackend final : public AdminBackend {
 public:
  SchedulerAdminBackend(Scheduler* scheduler, ReplayFn replay, ExplainLimits explain = {})
      : scheduler_(scheduler), replay_(std::move(replay)), explain_(explain) {}
  std::vector<QueueReport> Queues() override;
  std::vector<CohortReport> Cohorts() override;
  std::vector<PendingItem> Pending() override;
  // Runs on the scheduling thread, unless its caller gave up before the loop took it; fails
  // (UNAVAILABLE) if the loop does not take it in time.
  absl::StatusOr<Explanation> Explain(const std::string& pod_key, const CallControl& control) override;
  absl::StatusOr<std::string> Simulate(std::string_view snapshot, const CallControl& control) override;
  absl::Time Now() const override { return scheduler_->clock().Now(); }
  // Explains queued for the scheduling loop now.
  int ExplainsWaiting() const { return explains_waiting_.load(); }

 private:
  Scheduler* scheduler_;
  ReplayFn replay_;
  ExplainLimits explain_;
  std::atomic<int> explains_waiting_{0};
};

// What the admin API's callers may cost.
struct AdminLimits {
  size_t max_snapshot_bytes = 16 << 20;  // Simulate's snapshot; every message is capped by it
  int max_streams_per_connection = 4;
  int max_threads = 16;                  // calls served at once (beyond: RESOURCE_EXHAUSTED)
  size_t memory_bytes = 256 << 20;       // the gRPC server's ResourceQuota
  size_t max_namespace_reviews = 64;     // namespaces a namespace-scoped caller may be reviewed for per call
};

// What a caller needs for an admin call, whichever way it comes: `verb` on the virtual
// resource tessel.io scheduler/<call>, in `namespace_` when the call is about one namespace
// ("" cluster-wide).
ResourceAccess AdminCallAccess(std::string_view verb, std::string_view call, std::string_view namespace_ = "");

// The caller's right to an access, as the transport decides it (the gRPC service: the bearer
// token's TokenReview and SubjectAccessReview; the aggregated API: the forwarded user's
// SubjectAccessReview).
using AccessCheck = std::function<AuthDecision(const ResourceAccess& access)>;
// 200 OK; 401 UNAUTHENTICATED; 403 PERMISSION_DENIED; 429 RESOURCE_EXHAUSTED; else UNAVAILABLE.
absl::Status DecisionStatus(const AuthDecision& decision);

// The answers of the admin calls, shared by the gRPC service and the aggregated API
// (aggregated_api.h), which serves the same messages as JSON. Each authorizes its caller
// through `may`, per namespace as the API server would: ListPending and GetPending show the
// namespaces the caller may get scheduler/pending in (a cluster-wide grant: all; else each
// namespace with pending pods is reviewed alone, at most limits.max_namespace_reviews of them);
// Explain needs get scheduler/explain in the pod's namespace, and hides the pods of other
// namespaces that it would name from a caller not allowed cluster-wide.
absl::Status AnswerListQueues(AdminBackend& backend, const AccessCheck& may, tessel::v1::ListQueuesResponse* out);
absl::Status AnswerGetPending(AdminBackend& backend, const AccessCheck& may, const AdminLimits& limits,
                              tessel::v1::GetPendingResponse* out);
absl::Status AnswerListPending(AdminBackend& backend, const tessel::v1::ListPendingRequest& in, const AccessCheck& may,
                               const AdminLimits& limits, tessel::v1::ListPendingResponse* out);
absl::Status AnswerExplain(AdminBackend& backend, const tessel::v1::ExplainRequest& in, const AccessCheck& may,
                           const CallControl& control, tessel::v1::ExplainResponse* out);
// Simulate: create scheduler/simulate; the snapshot at most limits.max_snapshot_bytes; one
// simulation at a time in the process (another gets RESOURCE_EXHAUSTED). The replay's JSON.
absl::StatusOr<std::string> AnswerSimulate(AdminBackend& backend, std::string_view snapshot, const AccessCheck& may,
                                           const AdminLimits& limits, const CallControl& control);

struct AdminServerOptions {
  std::string bind_address = "0.0.0.0";
  int port = 10260;                 // 0 picks a free port (see port())
  std::optional<ServingCert> tls;   // unset: plaintext (tests only; then authentication waits for the message)
  AdminLimits limits;
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
  class TokenCheck;
  AdminServerOptions options_;
  RequestAuthorizer* authorizer_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace tessel::server
