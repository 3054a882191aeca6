// The admin API's gRPC service, its authorization and the live scheduler's answers (see
// admin_service.h).
#include "scheduler/server/admin_service.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <map>

#include "absl/synchronization/notification.h"
#include "scheduler/server/metrics.h"
#include "scheduler/util/file.h"
#include "scheduler/util/strings.h"
#include "spdlog/spdlog.h"
#include "tessel/v1/admin.grpc.pb.h"

namespace tessel::server {
namespace {

grpc::Status ToGrpc(const absl::Status& st) {
  if (st.ok()) return grpc::Status::OK;
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (st.code()) {
    case absl::StatusCode::kInvalidArgument: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case absl::StatusCode::kNotFound: code = grpc::StatusCode::NOT_FOUND; break;
    case absl::StatusCode::kUnavailable: code = grpc::StatusCode::UNAVAILABLE; break;
    case absl::StatusCode::kUnimplemented: code = grpc::StatusCode::UNIMPLEMENTED; break;
    case absl::StatusCode::kDeadlineExceeded: code = grpc::StatusCode::DEADLINE_EXCEEDED; break;
    default: break;
  }
  return grpc::Status(code, std::string(st.message()));
}

void PutQuantities(const Resources& r, google::protobuf::Map<std::string, std::string>* out) {
  for (const auto& [name, amount] : r.Entries()) (*out)[name] = FormatResourceQuantity(name, amount);
}

}  // namespace

void SortPending(std::vector<PendingItem>& items) {
  std::sort(items.begin(), items.end(), [](const PendingItem& a, const PendingItem& b) {
    const Pod& x = *a.pod;
    const Pod& y = *b.pod;
    if (x.PriorityValue() != y.PriorityValue()) return x.PriorityValue() > y.PriorityValue();
    if (x.meta.creation_timestamp != y.meta.creation_timestamp) {
      return x.meta.creation_timestamp < y.meta.creation_timestamp;
    }
    return x.Key() < y.Key();
  });
}

std::vector<QueueReport> SchedulerAdminBackend::Queues() { return ComputeQueueReports(*scheduler_); }

std::vector<PendingItem> SchedulerAdminBackend::Pending() {
  std::shared_ptr<const QueueDirectory> directory = scheduler_->Queues();
  std::vector<PendingItem> out;
  StringSet queued;
  auto item = [&](PodRef pod, std::string state) {
    const Queue* q = directory ? directory->QueueFor(*pod).queue : nullptr;
    std::string gang = scheduler_->GangKeyOf(*pod);
    out.push_back({.pod = std::move(pod), .queue = q ? q->name() : "", .state = std::move(state),
                   .gang = std::move(gang)});
  };
  for (const SchedulingQueue::PendingEntry& e : scheduler_->queue().PendingEntries()) {
    queued.insert(e.pod->Key());
    item(e.pod, std::string(e.state));
  }
  for (const PodRef& pod : scheduler_->PendingPods()) {
    if (!queued.contains(pod->Key())) item(pod, "gang-member");
  }
  SortPending(out);
  return out;
}

absl::StatusOr<Explanation> SchedulerAdminBackend::Explain(const std::string& pod_key) {
  struct Box {
    Explanation explanation;
    absl::Notification done;
  };
  auto box = std::make_shared<Box>();
  Scheduler* s = scheduler_;
  scheduler_->RunOnLoop([s, pod_key, box] {
    box->explanation = tessel::Explain(*s, pod_key);
    box->done.Notify();
  });
  if (!box->done.WaitForNotificationWithTimeout(explain_timeout_)) {
    return absl::UnavailableError(StrCat("the scheduling loop did not take the dry run within ",
                                         absl::FormatDuration(explain_timeout_),
                                         " (is this replica the leader?)"));
  }
  return box->explanation;
}

absl::StatusOr<std::string> SchedulerAdminBackend::Simulate(std::string_view snapshot) {
  if (!replay_) return absl::UnimplementedError("simulate is not available in this scheduler");
  return replay_(snapshot);
}

ResourceAccess AdminCallAccess(std::string_view verb, std::string_view call, std::string_view namespace_) {
  return {.verb = std::string(verb), .group = "tessel.io", .resource = "scheduler",
          .subresource = std::string(call), .namespace_ = std::string(namespace_)};
}

void AnswerListQueues(AdminBackend& backend, tessel::v1::ListQueuesResponse* out) {
  const absl::Time now = backend.Now();
  for (const QueueReport& r : backend.Queues()) {
    tessel::v1::QueueInfo* q = out->add_queues();
    q->set_name(r.name);
    q->set_cohort(r.cohort);
    q->set_pending_pods(r.pending_pods);
    q->set_admitted_pods(r.admitted_pods);
    PutQuantities(r.nominal, q->mutable_nominal());
    PutQuantities(r.usage, q->mutable_usage());
    PutQuantities(r.borrowed, q->mutable_borrowed());
    PutQuantities(r.lendable, q->mutable_lendable());
    PutQuantities(r.lent, q->mutable_lent());
    q->set_weighted_share_milli(r.weighted_share_milli);
    q->set_oldest_pending_wait_seconds(
        r.oldest_pending ? std::max<int64_t>(0, absl::ToInt64Seconds(now - *r.oldest_pending)) : -1);
    for (const FlavorReport& f : r.flavors) {
      tessel::v1::FlavorUsage* flavor = q->add_flavors();
      flavor->set_name(f.name);
      PutQuantities(f.nominal, flavor->mutable_nominal());
      PutQuantities(f.usage, flavor->mutable_usage());
      PutQuantities(f.borrowed, flavor->mutable_borrowed());
      PutQuantities(f.lent, flavor->mutable_lent());
    }
  }
}

void AnswerListPending(AdminBackend& backend, const tessel::v1::ListPendingRequest& in,
                       tessel::v1::ListPendingResponse* out) {
  const absl::Time now = backend.Now();
  std::map<std::string, int32_t> per_queue;
  int32_t position = 0;
  for (const PendingItem& p : backend.Pending()) {
    ++position;
    const int32_t in_queue = ++per_queue[p.queue];
    if (!in.queue().empty() && p.queue != in.queue()) continue;
    if (!in.namespace_().empty() && p.pod->meta.namespace_ != in.namespace_()) continue;
    tessel::v1::PendingPod* o = out->add_pods();
    o->set_position(position);
    o->set_queue_position(in_queue);
    o->set_pod(p.pod->Key());
    o->set_queue(p.queue);
    o->set_priority(p.pod->PriorityValue());
    o->set_wait_seconds(std::max<int64_t>(0, absl::ToInt64Seconds(now - p.pod->meta.creation_timestamp)));
    o->set_state(p.state);
    o->set_gang(p.gang);
  }
}

absl::Status AnswerExplain(AdminBackend& backend, const tessel::v1::ExplainRequest& in,
                           tessel::v1::ExplainResponse* out) {
  if (in.pod().find('/') == std::string::npos) {
    return absl::InvalidArgumentError(StrCat("ExplainRequest.pod: \"", in.pod(), "\" is not namespace/name"));
  }
  absl::StatusOr<tessel::Explanation> e = backend.Explain(in.pod());
  if (!e.ok()) return e.status();
  out->set_pod(e->pod);
  out->set_queue(e->queue);
  out->set_state(e->state);
  out->set_node(e->node);
  out->set_message(e->message);
  for (const NodeReasonGroup& g : e->reasons) {
    tessel::v1::NodeReasons* r = out->add_reasons();
    r->set_reason(g.reason);
    r->set_count(static_cast<int32_t>(g.nodes.size()));
    for (const std::string& n : g.nodes) r->add_nodes(n);
  }
  out->set_nearest_kind(e->nearest_kind);
  out->set_nearest_miss(e->nearest_miss);
  for (const std::string& d : e->details) out->add_details(d);
  return absl::OkStatus();
}

class AdminServer::Service final : public tessel::v1::Admin::Service {
 public:
  Service(AdminBackend* backend, RequestAuthorizer* authorizer, size_t max_snapshot_bytes)
      : backend_(backend), authorizer_(authorizer), max_snapshot_bytes_(max_snapshot_bytes) {}

  grpc::Status GetPending(grpc::ServerContext* ctx, const tessel::v1::GetPendingRequest*,
                          tessel::v1::GetPendingResponse* out) override {
    if (grpc::Status st = Allow(ctx, "get", "pending"); !st.ok()) return st;
    for (const PendingItem& p : backend_->Pending()) out->add_pending()->set_pod(p.pod->Key());
    return grpc::Status::OK;
  }

  grpc::Status ListQueues(grpc::ServerContext* ctx, const tessel::v1::ListQueuesRequest*,
                          tessel::v1::ListQueuesResponse* out) override {
    if (grpc::Status st = Allow(ctx, "get", "queues"); !st.ok()) return st;
    AnswerListQueues(*backend_, out);
    return grpc::Status::OK;
  }

  grpc::Status ListPending(grpc::ServerContext* ctx, const tessel::v1::ListPendingRequest* in,
                           tessel::v1::ListPendingResponse* out) override {
    if (grpc::Status st = Allow(ctx, "get", "pending"); !st.ok()) return st;
    AnswerListPending(*backend_, *in, out);
    return grpc::Status::OK;
  }

  grpc::Status Explain(grpc::ServerContext* ctx, const tessel::v1::ExplainRequest* in,
                       tessel::v1::ExplainResponse* out) override {
    if (grpc::Status st = Allow(ctx, "get", "explain"); !st.ok()) return st;
    return ToGrpc(AnswerExplain(*backend_, *in, out));
  }

  grpc::Status Simulate(grpc::ServerContext* ctx, const tessel::v1::SimulateRequest* in,
                        tessel::v1::SimulateResponse* out) override {
    if (grpc::Status st = Allow(ctx, "create", "simulate"); !st.ok()) return st;
    if (in->snapshot().size() > max_snapshot_bytes_) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          StrCat("SimulateRequest.snapshot: ", in->snapshot().size(),
                                 " bytes, more than the ", max_snapshot_bytes_, " allowed"));
    }
    absl::StatusOr<std::string> result = backend_->Simulate(in->snapshot());
    if (!result.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          StrCat("SimulateRequest.snapshot: ", result.status().message()));
    }
    out->set_result_json(*std::move(result));
    return grpc::Status::OK;
  }

 private:
  // The caller's right to `verb` on tessel.io/scheduler/<call>.
  grpc::Status Allow(grpc::ServerContext* ctx, std::string_view verb, std::string_view call) {
    if (authorizer_ == nullptr) return grpc::Status::OK;
    std::string token;
    const auto& md = ctx->client_metadata();
    if (auto it = md.find("authorization"); it != md.end()) {
      const std::string value(it->second.data(), it->second.size());
      if (value.rfind("Bearer ", 0) == 0) token = value.substr(7);
    }
    const AuthDecision d = authorizer_->AuthorizeResource(token, AdminCallAccess(verb, call));
    switch (d.http_status) {
      case 200: return grpc::Status::OK;
      case 401: return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, d.reason);
      case 403: return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, d.reason);
      case 429: return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, d.reason);
      default: return grpc::Status(grpc::StatusCode::UNAVAILABLE, d.reason);
    }
  }

  AdminBackend* backend_;
  RequestAuthorizer* authorizer_;
  size_t max_snapshot_bytes_;
};

AdminServer::AdminServer(AdminServerOptions options, AdminBackend* backend,
                         RequestAuthorizer* authorizer)
    : options_(std::move(options)),
      service_(std::make_unique<Service>(backend, authorizer, options_.max_snapshot_bytes)) {}

AdminServer::~AdminServer() { Stop(); }

absl::Status AdminServer::Start() {
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (options_.tls.has_value()) {
    absl::StatusOr<std::string> cert = ReadFileToString(options_.tls->cert_file);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadFileToString(options_.tls->key_file);
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    creds = grpc::SslServerCredentials(ssl);
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(StrCat(options_.bind_address, ":", options_.port), creds, &port_);
  builder.RegisterService(service_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(options_.max_snapshot_bytes + (1 << 20)));
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    server_.reset();
    return absl::UnavailableError(StrCat("admin API: cannot listen on ", options_.bind_address, ":",
                                         options_.port));
  }
  spdlog::info("admin API (gRPC{}) on {}:{}", options_.tls ? ", TLS" : "", options_.bind_address, port_);
  return absl::OkStatus();
}

void AdminServer::Stop() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_->Wait();
  server_.reset();
}

}  // namespace tessel::server
