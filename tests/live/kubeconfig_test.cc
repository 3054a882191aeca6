// Kubeconfig parsing: contexts, inline and file credentials, tokens, TLS settings, errors.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "scheduler/kube/kubeconfig.h"

namespace tessel::kube {
namespace {

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
      {"exec plugin",
       "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
       "users: [{name: u, user: {exec: {command: aws}}}]\n"
       "contexts: [{name: a, context: {cluster: c, user: u}}]\ncurrent-context: a\n",
       "", "exec/auth-provider"},
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

}  // namespace
}  // namespace tessel::kube
