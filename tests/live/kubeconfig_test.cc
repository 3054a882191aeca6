// Kubeconfig parsing: contexts, inline and file credentials, tokens, TLS settings, errors.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "scheduler/kube/exec_credential.h"
#include "scheduler/kube/kubeconfig.h"

namespace tessel::kube {
namespace kubeconfig_test {

constexpr const char* kTwoContexts = R"(apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: Q0EtUEVN
- name: lab
  cluster:
    server: https://lab.example:443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: secret-token
- name: robot
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
contexts:
- name: local-admin
  context: {cluster: local, user: admin}
- name: lab-robot
  context: {cluster: lab, user: robot}
current-context: local-admin
)";

std::filesystem::path TempDir() {
  auto dir = std::filesystem::temp_directory_path() /
             ("tessel-kubeconfig-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

void Write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

TEST_CASE("kubeconfig: current context with inline CA and token") {
  auto c = ParseKubeconfig(kTwoContexts, "/nowhere");
  REQUIRE(c.ok());
  CHECK(c->server == "https://127.0.0.1:6443");  // trailing slash dropped
  CHECK(c->ca_pem == "CA-PEM");
  CHECK(c->token == "secret-token");
  CHECK(c->client_cert_pem.empty());
  CHECK_FALSE(c->insecure_skip_tls_verify);  // verification stays on unless asked
}

TEST_CASE("kubeconfig: explicit context with client certificate and insecure flag") {
  auto c = ParseKubeconfig(kTwoContexts, "/nowhere", "lab-robot");
  REQUIRE(c.ok());
  CHECK(c->server == "https://lab.example:443");
  CHECK(c->insecure_skip_tls_verify);
  CHECK(c->client_cert_pem == "CERT");
  CHECK(c->client_key_pem == "KEY");
  CHECK(c->token.empty());
}

TEST_CASE("kubeconfig: files resolve relative to the kubeconfig's folder") {
  auto dir = TempDir();
  Write(dir / "ca.crt", "FILE-CA");
  Write(dir / "client.crt", "FILE-CERT");
  Write(dir / "client.key", "FILE-KEY");
  Write(dir / "token", "file-token\n");
  Write(dir / "config", R"(clusters:
- name: c
  cluster: {server: "https://10.0.0.1", certificate-authority: ca.crt}
users:
- name: u
  user: {client-certificate: client.crt, client-key: client.key, tokenFile: token}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
)");
  auto c = LoadKubeconfig((dir / "config").string());
  REQUIRE(c.ok());
  CHECK(c->ca_pem == "FILE-CA");
  CHECK(c->client_cert_pem == "FILE-CERT");
  CHECK(c->client_key_pem == "FILE-KEY");
  CHECK(c->token_file == (dir / "token").string());
  TokenSource tokens(c->token, c->token_file, absl::ZeroDuration());
  CHECK(tokens.Token() == "file-token");
  std::filesystem::remove_all(dir);
}

TEST_CASE("kubeconfig: errors name what is wrong") {
  struct Case {
    const char* name;
    std::string text;
    std::string context;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"not yaml", "{{{", "", "kubeconfig:"},
      {"not a map", "- a\n- b\n", "", "not a YAML map"},
      {"no current context", "clusters: []\n", "", "no current-context"},
      {"unknown context", kTwoContexts, "nope", "context \"nope\" not found"},
      {"cluster missing",
       "contexts: [{name: a, context: {cluster: gone, user: u}}]\ncurrent-context: a\n", "",
       "cluster \"gone\" not found"},
      {"bad base64",
       "clusters: [{name: c, cluster: {server: 'https://x', certificate-authority-data: '!!'}}]\n"
       "contexts: [{name: a, context: {cluster: c}}]\ncurrent-context: a\n",
       "", "not valid base64"},
      {"missing CA file",
       "clusters: [{name: c, cluster: {server: 'https://x', certificate-authority: /no/such/ca}}]\n"
       "contexts: [{name: a, context: {cluster: c}}]\ncurrent-context: a\n",
       "", "cannot read /no/such/ca"},
      {"cert without key",
       "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
       "users: [{name: u, user: {client-certificate-data: Q0VSVA==}}]\n"
       "contexts: [{name: a, context: {cluster: c, user: u}}]\ncurrent-context: a\n",
       "", "both a client certificate and key"},
      {"auth provider",
       "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
       "users: [{name: u, user: {auth-provider: {name: gcp}}}]\n"
       "contexts: [{name: a, context: {cluster: c, user: u}}]\ncurrent-context: a\n",
       "", "user \"u\": auth-provider \"gcp\" was removed from Kubernetes clients; use its exec credential plugin"},
      {"exec without apiVersion",
       "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
       "users: [{name: u, user: {exec: {command: aws}}}]\n"
       "contexts: [{name: a, context: {cluster: c, user: u}}]\ncurrent-context: a\n",
       "", "user \"u\": exec.apiVersion: missing"},
      {"exec v1 without interactiveMode",
       "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
       "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}}}]\n"
       "contexts: [{name: a, context: {cluster: c, user: u}}]\ncurrent-context: a\n",
       "", "user \"u\": exec.interactiveMode: missing"},
      {"exec alpha",
       "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
       "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: aws}}}]\n"
       "contexts: [{name: a, context: {cluster: c, user: u}}]\ncurrent-context: a\n",
       "", "exec.apiVersion: \"client.authentication.k8s.io/v1alpha1\" is not supported"},
      {"exec env without name",
       "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
       "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws, env: [{value: x}]}}}]\n"
       "contexts: [{name: a, context: {cluster: c, user: u}}]\ncurrent-context: a\n",
       "", "exec.env[0].name: missing"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      auto got = ParseKubeconfig(c.text, "/nowhere", c.context);
      REQUIRE_FALSE(got.ok());
      CHECK_THAT(std::string(got.status().message()), Catch::Contains(c.want));
    }
  }
}

TEST_CASE("in-cluster config reads the service account and rereads a rotated token") {
  auto dir = TempDir();
  Write(dir / "token", "first");
  Write(dir / "ca.crt", "SA-CA");
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto c = InClusterConfig({.token_file = (dir / "token").string(), .ca_file = (dir / "ca.crt").string()});
  REQUIRE(c.ok());
  CHECK(c->server == "https://10.96.0.1:443");
  CHECK(c->ca_pem == "SA-CA");
  TokenSource tokens(c->token, c->token_file, absl::ZeroDuration());
  CHECK(tokens.Token() == "first");
  // Rotation: the kubelet rewrites the file; a different size suffices to notice at once.
  Write(dir / "token", "second-token");
  CHECK(tokens.Token() == "second-token");
  // An empty file (caught mid-write) keeps the last good token.
  Write(dir / "token", "");
  CHECK(tokens.Token() == "second-token");
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  CHECK_FALSE(InClusterConfig({.token_file = (dir / "token").string()}).ok());
  std::filesystem::remove_all(dir);
}

TEST_CASE("kubeconfig: an exec user, its command resolved as kubectl does") {
  auto c = ParseKubeconfig(R"(clusters:
- name: eks
  cluster: {server: "https://eks.example", certificate-authority-data: Q0EtUEVN}
users:
- name: eks-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: bin/get-token
      args: [eks, get-token, --cluster-name, prod]
      env: [{name: AWS_PROFILE, value: prod}]
      interactiveMode: Never
      provideClusterInfo: true
contexts:
- name: x
  context: {cluster: eks, user: eks-user}
current-context: x
)", "/home/u/.kube");
  REQUIRE(c.ok());
  REQUIRE(c->exec.has_value());
  CHECK(c->exec->user == "eks-user");
  CHECK(c->exec->command == "/home/u/.kube/bin/get-token");  // relative to the kubeconfig
  CHECK(c->exec->args == std::vector<std::string>{"eks", "get-token", "--cluster-name", "prod"});
  CHECK(c->exec->env == std::vector<std::pair<std::string, std::string>>{{"AWS_PROFILE", "prod"}});
  CHECK(c->exec->interactive_mode == "Never");
  CHECK(ExecInfo(*c->exec, false) ==
        R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"cluster":)"
        R"({"certificate-authority-data":"Q0EtUEVN","server":"https://eks.example"},"interactive":false}})");
}

TEST_CASE("exec credential: what a plugin prints, and errors naming the user and field") {
  const ExecConfig v1{.user = "oidc", .api_version = "client.authentication.k8s.io/v1", .command = "kubelogin"};
  SECTION("a token that expires") {
    auto c = ParseExecCredential(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
        "status":{"token":"t0k","expirationTimestamp":"2030-01-02T03:04:05Z"}})", v1);
    REQUIRE(c.ok());
    CHECK(c->token == "t0k");
    REQUIRE(c->expiry.has_value());
    CHECK(*c->expiry == absl::FromUnixSeconds(1893553445));
  }
  SECTION("a client certificate, no expiry") {
    auto c = ParseExecCredential(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
        "status":{"clientCertificateData":"CERT","clientKeyData":"KEY"}})", v1);
    REQUIRE(c.ok());
    CHECK(c->token.empty());
    CHECK(c->client_cert_pem == "CERT");
    CHECK(c->client_key_pem == "KEY");
    CHECK_FALSE(c->expiry.has_value());
  }
  struct Case {
    const char* name;
    const char* output;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"not json", "Please log in", "is not a JSON object"},
      {"other kind", R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"Status"})", "kind: \"Status\""},
      {"other version",
       R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"x"}})",
       "apiVersion: \"client.authentication.k8s.io/v1beta1\" is not client.authentication.k8s.io/v1"},
      {"no status", R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"})", "status: missing"},
      {"empty status", R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}})",
       "neither token nor clientCertificateData"},
      {"cert without key",
       R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientCertificateData":"C"}})",
       "status.clientKeyData: missing"},
      {"bad expiry",
       R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"x","expirationTimestamp":"tomorrow"}})",
       "status.expirationTimestamp: \"tomorrow\" is not an RFC 3339 time"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      auto got = ParseExecCredential(c.output, v1);
      REQUIRE_FALSE(got.ok());
      CHECK(absl::IsUnauthenticated(got.status()));
      CHECK_THAT(std::string(got.status().message()),
                 Catch::StartsWith("kubeconfig user \"oidc\": exec plugin \"kubelogin\": ExecCredential ") &&
                     Catch::Contains(c.want));
    }
  }
}

TEST_CASE("exec credential source: runs the plugin with its env, reruns it when expired") {
  auto dir = TempDir();
  const std::string runs = (dir / "runs").string();
  // The plugin counts its runs, checks what it was given, and answers with a token that
  // expires at a fixed time.
  Write(dir / "plugin", "#!/bin/sh\n"
                        "echo run >> '" + runs + "'\n"
                        "case \"$KUBERNETES_EXEC_INFO\" in *'\"interactive\":false'*) ;; *) exit 3;; esac\n"
                        "[ \"$1\" = --team ] || exit 4\n"
                        "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
                        "\"status\":{\"token\":\"%s-%s\",\"expirationTimestamp\":\"2030-01-01T00:00:00Z\"}}' "
                        "\"$TEAM_TOKEN\" \"$2\"\n");
  std::filesystem::permissions(dir / "plugin", std::filesystem::perms::owner_all);
  ManualClock clock(absl::FromUnixSeconds(1893455000));  // 2029-12-31T23:43:20Z
  ExecCredentialSource source({.user = "team-a",
                               .api_version = "client.authentication.k8s.io/v1",
                               .command = (dir / "plugin").string(),
                               .args = {"--team", "a"},
                               .env = {{"TEAM_TOKEN", "sa"}},
                               .interactive_mode = "Never"},
                              &clock);
  auto first = source.Get();
  REQUIRE(first.ok());
  CHECK(first->token == "sa-a");
  CHECK(source.Get().ok());
  CHECK(source.runs() == 1);  // cached while it has not expired
  clock.Advance(absl::Hours(1));  // past 2030-01-01T00:00:00Z
  REQUIRE(source.Get().ok());
  CHECK(source.runs() == 2);
  source.Invalidate();  // the server said 401
  REQUIRE(source.Get().ok());
  CHECK(source.runs() == 3);

  SECTION("a failing plugin: the user, the plugin, its status and stderr") {
    Write(dir / "fail", "#!/bin/sh\necho 'token expired, run aws sso login' >&2\nexit 2\n");
    std::filesystem::permissions(dir / "fail", std::filesystem::perms::owner_all);
    ExecCredentialSource failing({.user = "team-b", .api_version = "client.authentication.k8s.io/v1",
                                  .command = (dir / "fail").string(), .interactive_mode = "Never"});
    auto got = failing.Get();
    REQUIRE_FALSE(got.ok());
    CHECK(std::string(got.status().message()) ==
          "kubeconfig user \"team-b\": exec plugin \"" + (dir / "fail").string() +
              "\": exited with status 2: token expired, run aws sso login");
  }
  SECTION("a plugin that is not installed: the install hint") {
    ExecCredentialSource missing({.user = "team-c", .api_version = "client.authentication.k8s.io/v1beta1",
                                  .command = "tessel-no-such-plugin", .install_hint = "install it with apt"});
    auto got = missing.Get();
    REQUIRE_FALSE(got.ok());
    CHECK_THAT(std::string(got.status().message()),
               Catch::StartsWith("kubeconfig user \"team-c\": exec plugin \"tessel-no-such-plugin\": cannot run it: ") &&
                   Catch::EndsWith("\ninstall it with apt"));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace kubeconfig_test
}  // namespace tessel::kube
