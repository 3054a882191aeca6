// The admin API's gRPC service, its authorization and the live scheduler's answers (see
// admin_service.h).
#include "scheduler/server/admin_service.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/auth_metadata_processor.h>

#include <algorithm>
#include <map>
#include <regex>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
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
    case absl::StatusCode::kResourceExhausted: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case absl::StatusCode::kPermissionDenied: code = grpc::StatusCode::PERMISSION_DENIED; break;
    case absl::StatusCode::kUnauthenticated: code = grpc::StatusCode::UNAUTHENTICATED; break;
    case absl::StatusCode::kCancelled: code = grpc::StatusCode::CANCELLED; break;
    default: break;
  }
  return grpc::Status(code, std::string(st.message()));
}

grpc::Status FromDecision(const AuthDecision& d) { return ToGrpc(DecisionStatus(d)); }

std::string TokenOf(const std::multimap<grpc::string_ref, grpc::string_ref>& md) {
  auto it = md.find("authorization");
  if (it == md.end()) return "";
  const std::string value(it->second.data(), it->second.size());
  return value.rfind("Bearer ", 0) == 0 ? value.substr(7) : "";
}

// "ipv4:10.0.0.7:5123" or "ipv6:[::1]:5123" (ServerContext::peer) -> the address alone.
std::string SourceOf(std::string_view peer) {
  if (const size_t colon = peer.find(':'); colon != std::string_view::npos) peer.remove_prefix(colon + 1);
  if (const size_t port = peer.rfind(':'); port != std::string_view::npos) peer = peer.substr(0, port);
  if (peer.size() >= 2 && peer.front() == '[' && peer.back() == ']') peer = peer.substr(1, peer.size() - 2);
  return std::string(peer);
}

std::string_view NamespaceOf(std::string_view pod_key) { return pod_key.substr(0, pod_key.find('/')); }

// `text` with every "namespace/name" of a namespace other than `ns` replaced, for a caller who
// may read `ns` only (explain names the pods that hold the room a pod needs). A namespace is a
// DNS label: no dots (so "nvidia.com/gpu" is left alone), and not all digits ("0/5 nodes").
std::string RedactOtherNamespaces(const std::string& text, std::string_view ns) {
  static const std::regex kPodKey(R"((^|[^a-z0-9.\-])([a-z0-9]([a-z0-9\-]*[a-z0-9])?)/([a-z0-9]([a-z0-9.\-]*[a-z0-9])?))");
  std::string out;
  auto last = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), kPodKey), end; it != end; ++it) {
    const std::smatch& m = *it;
    const std::string key_ns = m[2].str();
    const bool digits = key_ns.find_first_not_of("0123456789") == std::string::npos;
    if (key_ns == ns || digits) continue;
    out.append(last, m[2].first);
    out.append("(a pod of another namespace)");
    last = m[0].second;
  }
  out.append(last, text.cend());
  return out;
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

std::vector<CohortReport> SchedulerAdminBackend::Cohorts() {
  std::vector<CohortReport> cohorts;
  ComputeQueueReports(*scheduler_, &cohorts);
  return cohorts;
}

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

absl::StatusOr<Explanation> SchedulerAdminBackend::Explain(const std::string& pod_key, const CallControl& control) {
  if (explains_waiting_.fetch_add(1) >= explain_.max_waiting) {
    explains_waiting_.fetch_sub(1);
    return absl::ResourceExhaustedError(StrCat("explain: ", explain_.max_waiting,
                                               " explains already wait for the scheduling loop; retry later"));
  }
  struct Box {
    Explanation explanation;
    std::atomic<bool> abandoned{false};
    absl::Notification done;
  };
  auto box = std::make_shared<Box>();
  Scheduler* s = scheduler_;
  scheduler_->RunOnLoop([s, pod_key, box] {
    // A caller that gave up costs the scheduling thread nothing.
    if (!box->abandoned.load()) box->explanation = tessel::Explain(*s, pod_key);
    box->done.Notify();
  });
  const absl::Time give_up = std::min(control.deadline, absl::Now() + explain_.timeout);
  while (!box->done.WaitForNotificationWithTimeout(absl::Milliseconds(50))) {
    if (control.Over() || absl::Now() >= give_up) break;
  }
  box->abandoned.store(true);
  explains_waiting_.fetch_sub(1);
  if (box->done.HasBeenNotified()) return box->explanation;
  if (control.cancelled && control.cancelled()) return absl::CancelledError("explain: the caller gave up");
  return absl::UnavailableError(StrCat("the scheduling loop did not take the dry run within ",
                                       absl::FormatDuration(explain_.timeout), " (is this replica the leader?)"));
}

absl::StatusOr<std::string> SchedulerAdminBackend::Simulate(std::string_view snapshot, const CallControl& control) {
  if (!replay_) return absl::UnimplementedError("simulate is not available in this scheduler");
  return replay_(snapshot, control);
}

ResourceAccess AdminCallAccess(std::string_view verb, std::string_view call, std::string_view namespace_) {
  return {.verb = std::string(verb), .group = "tessel.io", .resource = "scheduler",
          .subresource = std::string(call), .namespace_ = std::string(namespace_)};
}

absl::Status DecisionStatus(const AuthDecision& d) {
  switch (d.http_status) {
    case 200: return absl::OkStatus();
    case 401: return absl::UnauthenticatedError(d.reason);
    case 403: return absl::PermissionDeniedError(d.reason);
    case 429: return absl::ResourceExhaustedError(d.reason);
    default: return absl::UnavailableError(d.reason);
  }
}

namespace {

// The namespaces a caller may read: all of them (a cluster-wide grant) or those listed.
struct Scope {
  bool all = false;
  StringSet namespaces;
  bool Allows(std::string_view ns) const { return all || namespaces.contains(ns); }
};

StringSet NamespacesOf(const std::vector<PendingItem>& pending) {
  StringSet out;
  for (const PendingItem& p : pending) out.insert(p.pod->meta.namespace_);
  return out;
}

// Which of `wanted` the caller may get scheduler/<call> in, as the API server would decide a
// list: a cluster-wide grant covers every namespace, else each namespace is reviewed alone.
// `named` is the namespace the caller asked for ("" for all), for the denial's message.
absl::StatusOr<Scope> ScopeOf(const AccessCheck& may, std::string_view call, const StringSet& wanted,
                              std::string_view named, const AdminLimits& limits) {
  Scope scope;
  const AuthDecision cluster = may(AdminCallAccess("get", call, named));
  if (cluster.http_status == 200) {
    if (named.empty()) {
      scope.all = true;
    } else {
      scope.namespaces.insert(std::string(named));
    }
    return scope;
  }
  if (cluster.http_status != 403 || !named.empty()) return DecisionStatus(cluster);
  if (wanted.size() > limits.max_namespace_reviews) {
    return absl::PermissionDeniedError(StrCat(cluster.reason, "; a namespace-scoped grant is reviewed for at most ",
                                              limits.max_namespace_reviews, " namespaces per call (", wanted.size(),
                                              " have pending pods): name one (tesselctl -n NAMESPACE)"));
  }
  std::vector<std::string> sorted(wanted.begin(), wanted.end());
  std::sort(sorted.begin(), sorted.end());
  for (const std::string& ns : sorted) {
    const AuthDecision d = may(AdminCallAccess("get", call, ns));
    if (d.http_status == 200) {
      scope.namespaces.insert(ns);
    } else if (d.http_status != 403) {
      return DecisionStatus(d);
    }
  }
  if (scope.namespaces.empty()) {
    return absl::PermissionDeniedError(StrCat(cluster.reason, ", nor in any namespace that has pending pods"));
  }
  return scope;
}

}  // namespace

absl::Status AnswerListQueues(AdminBackend& backend, const AccessCheck& may, tessel::v1::ListQueuesResponse* out) {
  if (absl::Status st = DecisionStatus(may(AdminCallAccess("get", "queues"))); !st.ok()) return st;
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
  for (const CohortReport& c : backend.Cohorts()) {
    tessel::v1::CohortInfo* info = out->add_cohorts();
    info->set_name(c.name);
    info->set_parent(c.parent);
    info->set_defined(c.defined);
    PutQuantities(c.subtree, info->mutable_subtree_quota());
    PutQuantities(c.usage, info->mutable_usage());
    PutQuantities(c.borrowed, info->mutable_borrowed());
    PutQuantities(c.lent, info->mutable_lent());
    info->set_weighted_share_milli(c.weighted_share_milli);
    info->set_problem(c.problem);
  }
  return absl::OkStatus();
}

absl::Status AnswerGetPending(AdminBackend& backend, const AccessCheck& may, const AdminLimits& limits,
                              tessel::v1::GetPendingResponse* out) {
  const std::vector<PendingItem> pending = backend.Pending();
  absl::StatusOr<Scope> scope = ScopeOf(may, "pending", NamespacesOf(pending), "", limits);
  if (!scope.ok()) return scope.status();
  for (const PendingItem& p : pending) {
    if (scope->Allows(p.pod->meta.namespace_)) out->add_pending()->set_pod(p.pod->Key());
  }
  return absl::OkStatus();
}

// Positions count every pending pod, so a team sees where its pods stand.
absl::Status AnswerListPending(AdminBackend& backend, const tessel::v1::ListPendingRequest& in, const AccessCheck& may,
                               const AdminLimits& limits, tessel::v1::ListPendingResponse* out) {
  const std::vector<PendingItem> pending = backend.Pending();
  StringSet wanted;
  if (!in.namespace_().empty()) {
    wanted.insert(in.namespace_());
  } else {
    wanted = NamespacesOf(pending);
  }
  absl::StatusOr<Scope> scope = ScopeOf(may, "pending", wanted, in.namespace_(), limits);
  if (!scope.ok()) return scope.status();
  const absl::Time now = backend.Now();
  std::map<std::string, int32_t> per_queue;
  int32_t position = 0;
  for (const PendingItem& p : pending) {
    ++position;
    const int32_t in_queue = ++per_queue[p.queue];
    if (!in.queue().empty() && p.queue != in.queue()) continue;
    if (!in.namespace_().empty() && p.pod->meta.namespace_ != in.namespace_()) continue;
    if (!scope->Allows(p.pod->meta.namespace_)) continue;
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
  return absl::OkStatus();
}

absl::Status AnswerExplain(AdminBackend& backend, const tessel::v1::ExplainRequest& in, const AccessCheck& may,
                           const CallControl& control, tessel::v1::ExplainResponse* out) {
  if (in.pod().find('/') == std::string::npos) {
    return absl::InvalidArgumentError(StrCat("ExplainRequest.pod: \"", in.pod(), "\" is not namespace/name"));
  }
  const std::string_view ns = NamespaceOf(in.pod());
  if (absl::Status st = DecisionStatus(may(AdminCallAccess("get", "explain", ns))); !st.ok()) return st;
  // A caller allowed in this namespace only sees no other namespace's pods in the answer.
  const bool everywhere = may(AdminCallAccess("get", "explain")).http_status == 200;
  absl::StatusOr<tessel::Explanation> e = backend.Explain(in.pod(), control);
  if (!e.ok()) return e.status();
  if (!everywhere) {
    e->nearest_miss = RedactOtherNamespaces(e->nearest_miss, ns);
    for (std::string& d : e->details) d = RedactOtherNamespaces(d, ns);
  }
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

absl::StatusOr<std::string> AnswerSimulate(AdminBackend& backend, std::string_view snapshot, const AccessCheck& may,
                                           const AdminLimits& limits, const CallControl& control) {
  if (absl::Status st = DecisionStatus(may(AdminCallAccess("create", "simulate"))); !st.ok()) return st;
  if (snapshot.size() > limits.max_snapshot_bytes) {
    return absl::InvalidArgumentError(StrCat("SimulateRequest.snapshot: ", snapshot.size(), " bytes, more than the ",
                                             limits.max_snapshot_bytes, " allowed"));
  }
  static std::atomic<bool> simulating{false};  // one per process, whichever way the callers come
  if (simulating.exchange(true)) {
    return absl::ResourceExhaustedError("simulate: another simulation is running; one runs at a time, retry when it ends");
  }
  absl::StatusOr<std::string> result = backend.Simulate(snapshot, control);
  simulating.store(false);
  if (absl::IsInvalidArgument(result.status())) {
    return absl::InvalidArgumentError(StrCat("SimulateRequest.snapshot: ", result.status().message()));
  }
  return result;
}

// Checks the caller's token before gRPC reads its message (TLS only: gRPC calls it when a call
// starts, with its metadata; an error ends the call there). Simulate, the one big message, is
// authorized here too when the call's path is among the metadata.
class AdminServer::TokenCheck final : public grpc::AuthMetadataProcessor {
 public:
  explicit TokenCheck(RequestAuthorizer* authorizer) : authorizer_(authorizer) {}
  grpc::Status Process(const InputMetadata& md, grpc::AuthContext* context, OutputMetadata*,
                       OutputMetadata*) override {
    const std::string token = TokenOf(md);
    std::string source;
    for (const grpc::string_ref& ip : context->FindPropertyValues(GRPC_PEER_IP_PROPERTY_NAME)) {
      source.assign(ip.data(), ip.size());
    }
    if (grpc::Status st = FromDecision(authorizer_->Authenticate(token, source)); !st.ok()) return st;
    if (auto path = md.find(":path"); path != md.end() && path->second == "/tessel.v1.Admin/Simulate") {
      return FromDecision(authorizer_->AuthorizeResource(token, AdminCallAccess("create", "simulate"), source));
    }
    return grpc::Status::OK;
  }

 private:
  RequestAuthorizer* authorizer_;
};

class AdminServer::Service final : public tessel::v1::Admin::Service {
 public:
  Service(AdminBackend* backend, RequestAuthorizer* authorizer, AdminLimits limits)
      : backend_(backend), authorizer_(authorizer), limits_(limits) {}

  // Every pending pod's name, in the scheduler's order: those of the namespaces the caller may
  // get scheduler/pending in.
  grpc::Status GetPending(grpc::ServerContext* ctx, const tessel::v1::GetPendingRequest*,
                          tessel::v1::GetPendingResponse* out) override {
    return ToGrpc(AnswerGetPending(*backend_, CheckFor(ctx), limits_, out));
  }

  grpc::Status ListQueues(grpc::ServerContext* ctx, const tessel::v1::ListQueuesRequest*,
                          tessel::v1::ListQueuesResponse* out) override {
    return ToGrpc(AnswerListQueues(*backend_, CheckFor(ctx), out));
  }

  grpc::Status ListPending(grpc::ServerContext* ctx, const tessel::v1::ListPendingRequest* in,
                           tessel::v1::ListPendingResponse* out) override {
    return ToGrpc(AnswerListPending(*backend_, *in, CheckFor(ctx), limits_, out));
  }

  grpc::Status Explain(grpc::ServerContext* ctx, const tessel::v1::ExplainRequest* in,
                       tessel::v1::ExplainResponse* out) override {
    return ToGrpc(AnswerExplain(*backend_, *in, CheckFor(ctx), ControlOf(ctx), out));
  }

  grpc::Status Simulate(grpc::ServerContext* ctx, const tessel::v1::SimulateRequest* in,
                        tessel::v1::SimulateResponse* out) override {
    absl::StatusOr<std::string> result = AnswerSimulate(*backend_, in->snapshot(), CheckFor(ctx), limits_, ControlOf(ctx));
    if (!result.ok()) return ToGrpc(result.status());
    out->set_result_json(*std::move(result));
    return grpc::Status::OK;
  }

 private:
  static CallControl ControlOf(grpc::ServerContext* ctx) {
    CallControl c{.cancelled = [ctx] { return ctx->IsCancelled(); }};
    const auto deadline = ctx->deadline();
    if (deadline != std::chrono::system_clock::time_point::max()) c.deadline = absl::FromChrono(deadline);
    return c;
  }

  // The caller's rights: its bearer token's, reviewed from its source address (all, when the
  // server runs without an authorizer).
  AccessCheck CheckFor(grpc::ServerContext* ctx) const {
    if (authorizer_ == nullptr) return [](const ResourceAccess&) { return AuthDecision{200, ""}; };
    return [this, token = TokenOf(ctx->client_metadata()), source = SourceOf(ctx->peer())](const ResourceAccess& a) {
      return authorizer_->AuthorizeResource(token, a, source);
    };
  }

  AdminBackend* backend_;
  RequestAuthorizer* authorizer_;
  AdminLimits limits_;
};

AdminServer::AdminServer(AdminServerOptions options, AdminBackend* backend,
                         RequestAuthorizer* authorizer)
    : options_(std::move(options)),
      authorizer_(authorizer),
      service_(std::make_unique<Service>(backend, authorizer, options_.limits)) {}

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
    if (authorizer_ != nullptr) creds->SetAuthMetadataProcessor(std::make_shared<TokenCheck>(authorizer_));
  }
  const AdminLimits& limits = options_.limits;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(StrCat(options_.bind_address, ":", options_.port), creds, &port_);
  builder.RegisterService(service_.get());
  // The snapshot and its envelope; no other message comes near it.
  builder.SetMaxReceiveMessageSize(static_cast<int>(limits.max_snapshot_bytes + 4096));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, limits.max_streams_per_connection);
  builder.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, 16 * 1024);
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 10'000);
  // Flow-control windows stay small until a message is wanted: no probing them larger.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  grpc::ResourceQuota quota("tessel-admin");
  quota.Resize(limits.memory_bytes);
  quota.SetMaxThreads(limits.max_threads);
  builder.SetResourceQuota(quota);
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
