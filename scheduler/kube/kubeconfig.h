// Where the API server is and how to authenticate to it: read from a kubeconfig file (the
// clusters/users/contexts YAML kubectl uses) or from the in-cluster service account.
//
//   ASSIGN_OR_RETURN(ClientConfig config, LoadKubeconfig("/etc/tessel/kubeconfig"));
//   ASSIGN_OR_RETURN(ClientConfig config, InClusterConfig());
//
// Certificates and keys are kept as PEM text (files are read at load time), so the transport
// never touches the file system except for a token file, which TokenSource re-reads when it
// changes (bound service account tokens rotate). A user whose credentials come from an `exec`
// plugin (EKS, GKE, AKS, OIDC) gets `exec` set; ExecCredentialSource (exec_credential.h) runs
// it when a request needs credentials. The deprecated `auth-provider` is refused with a pointer
// to the exec plugin that replaces it.
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tessel::kube {

// A kubeconfig user's `exec` credential plugin (client.authentication.k8s.io v1 or v1beta1).
struct ExecConfig {
  std::string user;         // the kubeconfig user's name, for errors
  std::string api_version;  // the ExecCredential version the plugin speaks
  std::string command;      // a path relative to the kubeconfig's folder is resolved against it
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // added to this process's environment
  std::string interactive_mode = "IfAvailable";           // Never, IfAvailable, Always
  std::string install_hint;
  // provideClusterInfo: the cluster, as ExecCredential spec.cluster JSON; empty otherwise.
  std::string cluster_json;
};

struct ClientConfig {
  std::string server;  // https://host:port, no trailing slash
  std::string ca_pem;  // empty: the system trust store
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;       // a static bearer token
  std::string token_file;  // re-read when it changes; wins over `token`
  // Only when the kubeconfig says so explicitly; never a default.
  bool insecure_skip_tls_verify = false;
  std::optional<ExecConfig> exec;  // set: the plugin gives the token or client certificate
};

// Parses kubeconfig text. Relative file paths resolve against `base_dir` (the file's folder, as
// kubectl does). `context` empty: the file's current-context.
absl::StatusOr<ClientConfig> ParseKubeconfig(std::string_view text, std::string_view base_dir,
                                             std::string_view context = "");
absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path, std::string_view context = "");

struct InClusterPaths {
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
};
// From KUBERNETES_SERVICE_HOST/PORT and the mounted service account.
absl::StatusOr<ClientConfig> InClusterConfig(const InClusterPaths& paths = {});


// The bearer token to send: the static one, or the token file's contents, re-read when the
// file's modification time or size changes (checked at most once per `recheck`). Thread-safe.
class TokenSource {
 public:
  TokenSource(std::string token, std::string token_file,
              absl::Duration recheck = absl::Seconds(1));
  // Empty when there is no token. A token file that cannot be read keeps the last good token.
  std::string Token();

 private:
  const std::string token_file_;
  const absl::Duration recheck_;
  absl::Mutex mu_;
  std::string token_ ABSL_GUARDED_BY(mu_);
  absl::Time next_check_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  struct timespec mtime_ ABSL_GUARDED_BY(mu_) = {};
  int64_t size_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace tessel::kube
