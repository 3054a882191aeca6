// The aggregated admin API's reading of the front proxy: ConfigMap
// extension-apiserver-authentication, the forwarded user's headers, and the server itself over
// TLS: only a client certificate of the requestheader CA with an allowed name is believed; the
// forwarded user is authorized per call as the gRPC admin API authorizes its callers (per
// namespace: a user allowed in one sees its pods only, other namespaces' pods hidden from its
// explanations); and the port is bounded as the secure port is (body cap, header deadline), each
// call's deadline its connection's.
#include <catch2/catch.hpp>
#include <httplib.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "raw_tls_client.h"
#include "scheduler/server/aggregated_api.h"
#include "scheduler/server/serving_cert.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/file.h"
#include "scheduler/util/strings.h"

namespace tessel::server {
namespace aggregated_api_test {

using nlohmann::json;

json ConfigMap(json data) { return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"data", std::move(data)}}; }

TEST_CASE("aggregated API: the requestheader settings kube-apiserver publishes") {
  auto c = ParseRequestHeaderConfig(ConfigMap({{"requestheader-client-ca-file", "PEM"},
                                               {"requestheader-allowed-names", R"(["front-proxy-client"])"},
                                               {"requestheader-username-headers", R"(["X-Remote-User"])"},
                                               {"requestheader-group-headers", R"(["X-Remote-Group"])"},
                                               {"requestheader-extra-headers-prefix", R"(["X-Remote-Extra-"])"}}));
  REQUIRE(c.ok());
  CHECK(c->client_ca_pem == "PEM");
  CHECK(c->allowed_names == std::vector<std::string>{"front-proxy-client"});
  CHECK(c->username_headers == std::vector<std::string>{"X-Remote-User"});
  CHECK(c->uid_headers.empty());  // older API servers do not publish it

  struct Case {
    const char* name;
    json data;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"no aggregation layer", json::object(),
       "data.requestheader-client-ca-file: missing: kube-apiserver runs without --requestheader-client-ca-file"},
      {"not a list", {{"requestheader-client-ca-file", "PEM"}, {"requestheader-allowed-names", "front-proxy"}},
       "data.requestheader-allowed-names: \"front-proxy\" is not a JSON list"},
      {"no user header", {{"requestheader-client-ca-file", "PEM"}, {"requestheader-username-headers", "[]"}},
       "data.requestheader-username-headers: empty"},
  };
  for (const Case& t : cases) {
    SECTION(t.name) {
      auto got = ParseRequestHeaderConfig(ConfigMap(t.data));
      REQUIRE_FALSE(got.ok());
      CHECK_THAT(std::string(got.status().message()),
                 Catch::StartsWith("ConfigMap kube-system/extension-apiserver-authentication: ") &&
                     Catch::Contains(t.want));
    }
  }
}

TEST_CASE("aggregated API: the forwarded user, as kube-apiserver writes the headers") {
  const RequestHeaderConfig config{.username_headers = {"X-Remote-User"},
                                   .uid_headers = {"X-Remote-Uid"},
                                   .group_headers = {"X-Remote-Group"},
                                   .extra_headers_prefix = {"X-Remote-Extra-"}};
  const UserInfo user = UserFromHeaders(config, {{"x-remote-user", "jane"},
                                                 {"X-Remote-User", "mallory"},  // the first one counts
                                                 {"X-Remote-Uid", "42"},
                                                 {"X-Remote-Group", "team-a"},
                                                 {"x-remote-group", "system:authenticated"},
                                                 {"X-Remote-Extra-Scopes", "read"},
                                                 {"X-Remote-Extra-Scopes", "write"},
                                                 {"X-Remote-Extra-Acme.com%2Fproject", "gpu"},
                                                 {"Authorization", "Bearer not-for-us"}});
  CHECK(user.name == "jane");
  CHECK(user.uid == "42");
  CHECK(user.groups == std::vector<std::string>{"team-a", "system:authenticated"});
  CHECK(user.extra == std::map<std::string, std::vector<std::string>>{{"scopes", {"read", "write"}},
                                                                      {"acme.com/project", {"gpu"}}});
  CHECK(UserFromHeaders(config, {{"X-Remote-Group", "team-a"}}).name.empty());
}

// Pending pods in team-a and team-b; an explanation that names a pod of another namespace; the
// deadline of the last simulation it ran.
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
  absl::StatusOr<Explanation> Explain(const std::string& pod, const CallControl&) override {
    if (pod != "team-a/a-0") return absl::NotFoundError(StrCat("pod ", pod, " is not known to the scheduler"));
    return Explanation{.pod = pod, .state = "pending", .nearest_kind = "preemption",
                       .nearest_miss = "fits on gpu-1 if 1 GPU is freed (held by team-b/big-0, priority 0)"};
  }
  absl::StatusOr<std::string> Simulate(std::string_view, const CallControl& control) override {
    absl::MutexLock lock(&mu_);
    simulate_deadline_ = control.deadline;
    return std::string("{}");
  }
  absl::Time Now() const override { return absl::UnixEpoch(); }
  absl::Time simulate_deadline() {
    absl::MutexLock lock(&mu_);
    return simulate_deadline_;
  }

 private:
  absl::Mutex mu_;
  absl::Time simulate_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// Allows user "jane" everything and "ana" what is in namespace team-a; records what it was asked.
class RecordingAuthorizer final : public UserAuthorizer {
 public:
  AuthDecision AuthorizeUser(const UserInfo& user, const ResourceAccess& access) override {
    absl::MutexLock lock(&mu_);
    asked_.push_back({user, access});
    if (user.name == "jane" || (user.name == "ana" && access.namespace_ == "team-a")) return {200, ""};
    return {403, StrCat("Forbidden: user \"", user.name, "\" may not ", access.Describe())};
  }
  std::vector<std::pair<UserInfo, ResourceAccess>> asked() {
    absl::MutexLock lock(&mu_);
    return asked_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::pair<UserInfo, ResourceAccess>> asked_;
};

// A CA and a client certificate it signs for `cn`, with openssl(1).
void MakeClientCert(const std::filesystem::path& dir, const std::string& ca, const std::string& cn) {
  const std::string d = dir.string();
  const std::string script = StrCat(
      "set -e; cd '", d, "'; ",
      "[ -f ", ca, ".crt ] || openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=", ca, " -keyout ", ca,
      ".key -out ", ca, ".crt 2>/dev/null; ",
      "openssl req -newkey rsa:2048 -nodes -subj /CN=", cn, " -keyout ", cn, ".key -out ", cn, ".csr 2>/dev/null; ",
      "printf 'extendedKeyUsage=clientAuth\\n' > ", cn, ".ext; ",
      "openssl x509 -req -in ", cn, ".csr -CA ", ca, ".crt -CAkey ", ca, ".key -CAcreateserial -days 1 -extfile ",
      cn, ".ext -out ", cn, ".crt 2>/dev/null");
  REQUIRE(std::system(script.c_str()) == 0);
}

TEST_CASE("aggregated API server: believes only the front proxy, authorizes the forwarded user") {
  const auto dir = std::filesystem::temp_directory_path() / ("tessel-aggregated-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  MakeClientCert(dir, "front-proxy-ca", "front-proxy-client");
  MakeClientCert(dir, "front-proxy-ca", "someone-else");  // the right CA, a name not allowed
  auto ca_pem = ReadFileToString((dir / "front-proxy-ca.crt").string());
  REQUIRE(ca_pem.ok());
  auto cert = ServingCertFor({.cert_dir = (dir / "serving").string()});
  REQUIRE(cert.ok());

  ScriptedBackend backend;
  RecordingAuthorizer authorizer;
  AggregatedApiOptions options{.bind_address = "127.0.0.1", .port = 0, .tls = *cert, .identity = "tessel-0_abc",
                               .admin_limits = {.max_snapshot_bytes = 1024}};
  options.limits.header_timeout = absl::Seconds(1);
  AggregatedApiServer api(options, &backend, &authorizer);
  REQUIRE(api.SetRequestHeaderConfig({.client_ca_pem = *ca_pem,
                                      .allowed_names = {"front-proxy-client"},
                                      .username_headers = {"X-Remote-User"},
                                      .group_headers = {"X-Remote-Group"},
                                      .extra_headers_prefix = {"X-Remote-Extra-"}})
              .ok());
  REQUIRE(api.Start().ok());

  auto client = [&](const std::string& name) {
    auto c = name.empty() ? std::make_unique<httplib::SSLClient>("127.0.0.1", api.port())
                          : std::make_unique<httplib::SSLClient>("127.0.0.1", api.port(), (dir / (name + ".crt")).string(),
                                                                 (dir / (name + ".key")).string());
    c->set_ca_cert_path(cert->cert_file.c_str());
    c->enable_server_certificate_verification(true);
    return c;
  };
  const httplib::Headers as_jane = {{"X-Remote-User", "jane"}, {"X-Remote-Group", "team-a"}};
  const std::string base = "/apis/admin.tessel.io/v1alpha1";

  SECTION("the front proxy: discovery, and calls authorized for the forwarded user") {
    auto proxy = client("front-proxy-client");
    auto discovery = proxy->Get(base.c_str(), as_jane);
    REQUIRE(discovery);
    CHECK(discovery->status == 200);
    CHECK(json::parse(discovery->body)["kind"] == "APIResourceList");

    auto queues = proxy->Get((base + "/queues").c_str(), as_jane);
    REQUIRE(queues);
    CHECK(queues->status == 200);
    CHECK(json::parse(queues->body)["kind"] == "QueueList");

    auto pending = proxy->Get((base + "/namespaces/team-a/pending?queue=q").c_str(), as_jane);
    REQUIRE(pending);
    CHECK(pending->status == 200);
    auto explain = proxy->Get((base + "/namespaces/team-a/explanations/p").c_str(), as_jane);
    REQUIRE(explain);
    CHECK(explain->status == 404);
    CHECK(json::parse(explain->body)["message"] == "pod team-a/p is not known to the scheduler");

    auto denied = proxy->Get((base + "/pending").c_str(), {{"X-Remote-User", "mallory"}});
    REQUIRE(denied);
    CHECK(denied->status == 403);
    // Denied cluster-wide, and in each namespace that has pending pods.
    CHECK(json::parse(denied->body)["message"] ==
          "Forbidden: user \"mallory\" may not get tessel.io/scheduler/pending, nor in any namespace that has "
          "pending pods");

    const auto asked = authorizer.asked();
    REQUIRE(asked.size() == 7);
    CHECK(asked[0].first.name == "jane");
    CHECK(asked[0].first.groups == std::vector<std::string>{"team-a"});
    CHECK(asked[0].second.Describe() == "get tessel.io/scheduler/queues");
    CHECK(asked[1].second.Describe() == "get tessel.io/scheduler/pending in namespace team-a");
    CHECK(asked[2].second.Describe() == "get tessel.io/scheduler/explain in namespace team-a");
    // Whether the answer may name other namespaces' pods (the same rule as the gRPC API's).
    CHECK(asked[3].second.Describe() == "get tessel.io/scheduler/explain");
    CHECK(asked[4].first.name == "mallory");
    CHECK(asked[4].second.Describe() == "get tessel.io/scheduler/pending");
    CHECK(asked[5].second.Describe() == "get tessel.io/scheduler/pending in namespace team-a");
    CHECK(asked[6].second.Describe() == "get tessel.io/scheduler/pending in namespace team-b");
  }
  SECTION("a user allowed in one namespace: its pods only, as over gRPC (the same AnswerListPending)") {
    auto proxy = client("front-proxy-client");
    const httplib::Headers as_ana = {{"X-Remote-User", "ana"}};
    // Every namespace asked for: those it may read, with their positions among all.
    auto all = proxy->Get((base + "/pending").c_str(), as_ana);
    REQUIRE(all);
    REQUIRE(all->status == 200);
    const json list = json::parse(all->body);
    std::vector<std::string> pods;
    for (const json& p : list["pods"]) pods.push_back(StrCat(p["position"].get<int>(), " ", p["pod"].get<std::string>()));
    CHECK(pods == std::vector<std::string>{"1 team-a/a-0", "3 team-a/a-1"});
    auto other = proxy->Get((base + "/namespaces/team-b/pending").c_str(), as_ana);
    REQUIRE(other);
    CHECK(other->status == 403);
    CHECK(json::parse(other->body)["message"] ==
          "Forbidden: user \"ana\" may not get tessel.io/scheduler/pending in namespace team-b");
    // Its pod's explanation, with the other namespace's pod hidden.
    auto explain = proxy->Get((base + "/namespaces/team-a/explanations/a-0").c_str(), as_ana);
    REQUIRE(explain);
    REQUIRE(explain->status == 200);
    CHECK(json::parse(explain->body)["nearestMiss"] ==
          "fits on gpu-1 if 1 GPU is freed (held by (a pod of another namespace), priority 0)");
    auto queues = proxy->Get((base + "/queues").c_str(), as_ana);
    REQUIRE(queues);
    CHECK(queues->status == 403);
  }
  SECTION("the secure port's bounds: a body over the snapshot cap refused unread, a trickle closed, a deadline") {
    auto proxy = client("front-proxy-client");
    const absl::Time before = absl::Now();
    auto simulation = proxy->Post((base + "/simulations").c_str(), as_jane, "{}", "application/json");
    REQUIRE(simulation);
    CHECK(simulation->status == 200);
    // The simulation may run until its connection's deadline, no longer.
    CHECK(backend.simulate_deadline() >= before + options.limits.request_timeout);
    CHECK(backend.simulate_deadline() <= absl::Now() + options.limits.request_timeout);
    auto big = proxy->Post((base + "/simulations").c_str(), as_jane, std::string(4096, ' '), "application/json");
    REQUIRE(big);
    CHECK(big->status == 413);
    const size_t asked = authorizer.asked().size();
    kube::testing::TlsConnection slow(api.port());
    REQUIRE(slow.handshaken());
    REQUIRE(slow.Send("GET /apis/admin.tessel.io/v1alpha1/queues HTTP/1.1\r\nHost: x\r\n"));
    bool timed_out = false;
    CHECK(slow.Reply(&timed_out).empty());  // closed at the header deadline (1 s), unanswered
    CHECK_FALSE(timed_out);
    CHECK(authorizer.asked().size() == asked);
  }
  SECTION("anyone else: 401, whatever X-Remote-User says, and nobody is asked") {
    struct Case {
      std::string cert;
      std::string want;
    };
    for (const Case& c : {Case{"", "no client certificate"},
                          Case{"other-ca-front-proxy-client", "not signed by the requestheader CA"},
                          Case{"someone-else", "common name \"someone-else\" is not in requestheader-allowed-names"}}) {
      std::string name = c.cert;
      if (name == "other-ca-front-proxy-client") {  // the right name, another CA
        std::filesystem::create_directories(dir / "other");
        MakeClientCert(dir / "other", "other-ca", "front-proxy-client");
        name = "other/front-proxy-client";
      }
      auto caller = client(name);
      auto r = caller->Get((base + "/queues").c_str(), as_jane);
      REQUIRE(r);
      CHECK(r->status == 401);
      CHECK_THAT(json::parse(r->body).value("message", ""), Catch::Contains(c.want));
    }
    CHECK(authorizer.asked().empty());
  }
  api.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace aggregated_api_test
}  // namespace tessel::server
