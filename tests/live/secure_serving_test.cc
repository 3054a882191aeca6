// The secure port: a self-signed certificate that a client verifies for 127.0.0.1, /healthz
// open to anyone, and /metrics behind DelegatedAuthorizer, whose TokenReview and
// SubjectAccessReview are checked against a fake API server: 401 without a token or for one not
// authenticated, 403 when the SubjectAccessReview denies, 200 when it allows; answers cached per
// token until their TTL, API failures (500) never cached.
#include <catch2/catch.hpp>
#include <httplib.h>

#include <filesystem>

#include "absl/synchronization/mutex.h"
#include "fake_api_server.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/delegated_auth.h"
#include "scheduler/server/http_server.h"
#include "scheduler/server/serving_cert.h"

namespace tessel::kube {
namespace secure_serving_test {

using nlohmann::json;
using testing::FakeApiServer;

// The API server's view: tokens and who they are; who may get /metrics.
struct AuthApi {
  absl::Mutex mu;
  std::vector<json> sar_specs;
  bool failing = false;
  FakeApiServer api{[this](const FakeApiServer::Call& call, httplib::Response& res) {
    absl::MutexLock lock(&mu);
    if (failing) {
      res.status = 500;
      return;
    }
    const json body = json::parse(call.body);
    if (call.line() == "POST /apis/authentication.k8s.io/v1/tokenreviews") {
      const std::string token = body["spec"]["token"];
      json status = {{"authenticated", false}};
      if (token == "alice-token" || token == "bob-token") {
        status = {{"authenticated", true},
                  {"user", {{"username", token.substr(0, token.find('-'))},
                            {"uid", "u-1"},
                            {"groups", {"system:authenticated", "monitoring"}}}}};
      }
      res.set_content(json{{"status", status}}.dump(), "application/json");
      return;
    }
    if (call.line() == "POST /apis/authorization.k8s.io/v1/subjectaccessreviews") {
      sar_specs.push_back(body["spec"]);
      const bool allowed = body["spec"]["user"] == "alice";
      json status = {{"allowed", allowed}};
      if (!allowed) status["reason"] = "no RBAC policy matched";
      res.set_content(json{{"status", status}}.dump(), "application/json");
      return;
    }
    res.status = 404;
  }};
  std::unique_ptr<KubeClient> client = api.Client({.qps = 0, .max_attempts = 1});
};

TEST_CASE("delegated authorization of /metrics: TokenReview, then SubjectAccessReview, cached") {
  AuthApi fake;
  ManualClock clock(absl::FromUnixSeconds(1'700'000'000));
  DelegatedAuthorizer auth(fake.client.get(), &clock);

  CHECK(auth.Authorize("", "get", "/metrics").http_status == 401);
  CHECK(fake.api.calls().empty());  // nothing to ask without a token

  CHECK(auth.Authorize("alice-token", "get", "/metrics").http_status == 200);
  {
    absl::MutexLock lock(&fake.mu);
    REQUIRE(fake.sar_specs.size() == 1);
    const json& spec = fake.sar_specs[0];
    CHECK(spec["user"] == "alice");
    CHECK(spec["uid"] == "u-1");
    CHECK(spec["groups"] == json{"system:authenticated", "monitoring"});
    CHECK(spec["nonResourceAttributes"] == json{{"path", "/metrics"}, {"verb", "get"}});
  }
  const server::AuthDecision bob = auth.Authorize("bob-token", "get", "/metrics");
  CHECK(bob.http_status == 403);
  CHECK(bob.reason == "Forbidden: user \"bob\" may not get /metrics: no RBAC policy matched");
  CHECK(auth.Authorize("stolen-token", "get", "/metrics").http_status == 401);
  CHECK(auth.reviews_sent() == 5);  // alice 2, bob 2, stolen 1

  // Cached: the same answers without asking again, until the TTL passes.
  CHECK(auth.Authorize("alice-token", "get", "/metrics").http_status == 200);
  CHECK(auth.Authorize("bob-token", "get", "/metrics").http_status == 403);
  CHECK(auth.Authorize("stolen-token", "get", "/metrics").http_status == 401);
  CHECK(auth.reviews_sent() == 5);
  clock.Advance(absl::Seconds(11));
  CHECK(auth.Authorize("alice-token", "get", "/metrics").http_status == 200);
  CHECK(auth.reviews_sent() == 7);

  // The API server cannot answer: 500, and the next request asks again.
  {
    absl::MutexLock lock(&fake.mu);
    fake.failing = true;
  }
  CHECK(auth.Authorize("carol-token", "get", "/metrics").http_status == 500);
  CHECK(auth.Authorize("carol-token", "get", "/metrics").http_status == 500);
  CHECK(auth.reviews_sent() == 9);
}

// Allows the token "let-me-in" only.
class OneToken final : public server::RequestAuthorizer {
 public:
  server::AuthDecision Authorize(std::string_view token, std::string_view, std::string_view, std::string_view) override {
    if (token.empty()) return {401, "Unauthorized"};
    return token == "let-me-in" ? server::AuthDecision{200, ""} : server::AuthDecision{403, "Forbidden"};
  }
};

TEST_CASE("HTTPS with a generated certificate; /healthz open, /metrics authorized") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tessel-cert-test-" + std::to_string(getpid()));
  absl::StatusOr<server::ServingCert> cert = server::ServingCertFor({.cert_dir = dir.string()});
  REQUIRE(cert.ok());
  CHECK((std::filesystem::status(cert->key_file).permissions() & std::filesystem::perms::others_read) ==
        std::filesystem::perms::none);

  server::MetricsRegistry registry;
  OneToken authorizer;
  server::HttpServer https({.bind_address = "127.0.0.1", .port = 0, .tls = *cert,
                            .metrics_authorizer = &authorizer},
                           &registry, [] { return server::ReadyState{.ready = true}; });
  REQUIRE(https.Start().ok());

  httplib::SSLClient client("127.0.0.1", https.port());
  client.set_ca_cert_path(cert->cert_file.c_str());
  client.enable_server_certificate_verification(true);  // the certificate names 127.0.0.1
  auto health = client.Get("/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);
  auto anonymous = client.Get("/metrics");
  REQUIRE(anonymous);
  CHECK(anonymous->status == 401);
  auto denied = client.Get("/metrics", {{"Authorization", "Bearer someone-else"}});
  REQUIRE(denied);
  CHECK(denied->status == 403);
  auto allowed = client.Get("/metrics", {{"Authorization", "Bearer let-me-in"}});
  REQUIRE(allowed);
  CHECK(allowed->status == 200);

  // Plain HTTP to the HTTPS port is not served.
  httplib::Client plain("127.0.0.1", https.port());
  plain.set_connection_timeout(2);
  plain.set_read_timeout(2);
  auto refused = plain.Get("/healthz");
  CHECK((!refused || refused->status != 200));
  https.Stop();
  std::filesystem::remove_all(dir);
}

TEST_CASE("serving certificate options: both files or neither") {
  CHECK(absl::IsInvalidArgument(server::ServingCertFor({.cert_file = "/etc/x.crt"}).status()));
  CHECK(absl::IsNotFound(
      server::ServingCertFor({.cert_file = "/nonexistent.crt", .key_file = "/nonexistent.key"}).status()));
}

}  // namespace secure_serving_test
}  // namespace tessel::kube
