// The admin API's authorization per namespace and its bounds, through a real gRPC server on
// 127.0.0.1 (plaintext) with a scripted backend and authorizer: a team's grant in team-a shows
// team-a's pending pods (ListPending, GetPending) and explanations and nothing of team-b; a
// cluster-wide grant shows all; one Simulate runs at a time.
#include <catch2/catch.hpp>
#include <grpcpp/grpcpp.h>

#include <thread>

#include "absl/synchronization/notification.h"
#include "scheduler/server/admin_service.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/strings.h"
#include "tessel/v1/admin.grpc.pb.h"

namespace tessel::server {
namespace admin_limits_test {

// "admin" may do anything cluster-wide; "team-a" may get scheduler/* in namespace team-a only.
class ScriptedAuthorizer final : public RequestAuthorizer {
 public:
  AuthDecision Authorize(std::string_view, std::string_view, std::string_view, std::string_view) override {
    return {403, "Forbidden"};
  }
  AuthDecision AuthorizeResource(std::string_view token, const ResourceAccess& access, std::string_view) override {
    if (token.empty()) return {401, "Unauthorized"};
    if (token == "admin" || (token == "team-a" && access.namespace_ == "team-a")) return {200, ""};
    return {403, StrCat("Forbidden: user \"", token, "\" may not ", access.Describe())};
  }
};

class ScriptedBackend final : public AdminBackend {
 public:
  std::vector<QueueReport> Queues() override { return {}; }
  std::vector<PendingItem> Pending() override {
    std::vector<PendingItem> out;
    for (const auto& [name, ns] : {std::pair{"a-0", "team-a"}, {"b-0", "team-b"}, {"a-1", "team-a"}}) {
      out.push_back({.pod = std::make_shared<const Pod>(testing::PodBuilder(name, ns).Build()), .state = "active"});
    }
    return out;
  }
  absl::StatusOr<Explanation> Explain(const std::string& pod_key, const CallControl&) override {
    return Explanation{.pod = pod_key,
                       .state = "pending",
                       .nearest_kind = "preemption",
                       .nearest_miss = "fits on gpu-1 if 1 GPU is freed (held by team-b/big-0, priority 0; team-a/a-1)",
                       .details = {"0/5 nodes are available: 5 Insufficient nvidia.com/gpu", "gang podgroup:team-b/train"}};
  }
  absl::StatusOr<std::string> Simulate(std::string_view, const CallControl&) override {
    simulating.Notify();
    release.WaitForNotification();
    return std::string("{}");
  }
  absl::Time Now() const override { return absl::UnixEpoch(); }
  absl::Notification simulating, release;
};

struct Admin {
  Admin() : server({.bind_address = "127.0.0.1", .port = 0}, &backend, &authorizer) {
    REQUIRE(server.Start().ok());
    channel = grpc::CreateChannel(StrCat("127.0.0.1:", server.port()), grpc::InsecureChannelCredentials());
    stub = tessel::v1::Admin::NewStub(channel);
  }
  static void As(grpc::ClientContext& ctx, std::string_view token) {
    ctx.AddMetadata("authorization", StrCat("Bearer ", token));
  }
  std::vector<std::string> Pending(std::string_view token, std::string ns, grpc::Status* status) {
    grpc::ClientContext ctx;
    As(ctx, token);
    tessel::v1::ListPendingRequest in;
    in.set_namespace_(std::move(ns));
    tessel::v1::ListPendingResponse out;
    *status = stub->ListPending(&ctx, in, &out);
    std::vector<std::string> pods;
    for (const auto& p : out.pods()) pods.push_back(StrCat(p.position(), " ", p.pod()));
    return pods;
  }
  ScriptedAuthorizer authorizer;
  ScriptedBackend backend;
  AdminServer server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<tessel::v1::Admin::Stub> stub;
};

TEST_CASE("admin API: pending pods and explanations per namespace", "[admin]") {
  Admin admin;
  grpc::Status st;
  CHECK(admin.Pending("admin", "", &st) == std::vector<std::string>{"1 team-a/a-0", "2 team-b/b-0", "3 team-a/a-1"});
  CHECK(st.ok());
  // A grant in team-a: its pods, with their positions among all.
  CHECK(admin.Pending("team-a", "", &st) == std::vector<std::string>{"1 team-a/a-0", "3 team-a/a-1"});
  CHECK(st.ok());
  CHECK(admin.Pending("team-a", "team-b", &st).empty());
  CHECK(st.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(st.error_message() ==
        "Forbidden: user \"team-a\" may not get tessel.io/scheduler/pending in namespace team-b");
  CHECK(admin.Pending("nobody", "", &st).empty());
  CHECK(st.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(admin.Pending("", "", &st).empty());
  CHECK(st.error_code() == grpc::StatusCode::UNAUTHENTICATED);

  {
    grpc::ClientContext ctx;
    Admin::As(ctx, "team-a");
    tessel::v1::GetPendingResponse out;
    REQUIRE(admin.stub->GetPending(&ctx, {}, &out).ok());
    std::vector<std::string> pods;
    for (const auto& p : out.pending()) pods.push_back(p.pod());
    CHECK(pods == std::vector<std::string>{"team-a/a-0", "team-a/a-1"});
  }
  auto explain = [&](std::string_view token, std::string pod, tessel::v1::ExplainResponse* out) {
    grpc::ClientContext ctx;
    Admin::As(ctx, token);
    tessel::v1::ExplainRequest in;
    in.set_pod(std::move(pod));
    return admin.stub->Explain(&ctx, in, out).error_code();
  };
  tessel::v1::ExplainResponse out;
  CHECK(explain("team-a", "team-b/b-0", &out) == grpc::StatusCode::PERMISSION_DENIED);
  // Its own pod: other namespaces' pods in the answer are hidden.
  REQUIRE(explain("team-a", "team-a/a-0", &out) == grpc::StatusCode::OK);
  CHECK(out.nearest_miss() ==
        "fits on gpu-1 if 1 GPU is freed (held by (a pod of another namespace), priority 0; team-a/a-1)");
  CHECK(out.details(0) == "0/5 nodes are available: 5 Insufficient nvidia.com/gpu");
  CHECK(out.details(1) == "gang podgroup:(a pod of another namespace)");
  REQUIRE(explain("admin", "team-a/a-0", &out) == grpc::StatusCode::OK);
  CHECK(out.nearest_miss() == "fits on gpu-1 if 1 GPU is freed (held by team-b/big-0, priority 0; team-a/a-1)");
  // Queues are cluster-scoped: a namespace grant does not reach them.
  grpc::ClientContext ctx;
  Admin::As(ctx, "team-a");
  tessel::v1::ListQueuesResponse queues;
  CHECK(admin.stub->ListQueues(&ctx, {}, &queues).error_code() == grpc::StatusCode::PERMISSION_DENIED);
}

TEST_CASE("admin API: one Simulate at a time", "[admin]") {
  Admin admin;
  std::thread first([&] {
    grpc::ClientContext ctx;
    Admin::As(ctx, "admin");
    tessel::v1::SimulateRequest in;
    in.set_snapshot("{}");
    tessel::v1::SimulateResponse out;
    CHECK(admin.stub->Simulate(&ctx, in, &out).ok());
  });
  admin.backend.simulating.WaitForNotification();
  grpc::ClientContext ctx;
  Admin::As(ctx, "admin");
  tessel::v1::SimulateRequest in;
  in.set_snapshot("{}");
  tessel::v1::SimulateResponse out;
  const grpc::Status second = admin.stub->Simulate(&ctx, in, &out);
  CHECK(second.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(second.error_message() == "simulate: another simulation is running; one runs at a time, retry when it ends");
  admin.backend.release.Notify();
  first.join();
}

}  // namespace admin_limits_test
}  // namespace tessel::server
