// Credentials from a kubeconfig user's `exec` plugin, as kubectl gets them: the plugin runs
// with its args and env plus KUBERNETES_EXEC_INFO (an ExecCredential whose spec says whether
// it may talk to the user, and the cluster when provideClusterInfo is set), and prints an
// ExecCredential whose status holds a bearer token or a client certificate and key, and
// optionally when they expire. The answer is kept until then; Invalidate() (after a 401)
// makes the next Get() run the plugin again.
//
//   ExecCredentialSource source(*config.exec);
//   ASSIGN_OR_RETURN(ExecCredential cred, source.Get());
//   ... Authorization: Bearer cred.token, or TLS with cred.client_cert_pem / client_key_pem
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/kube/kubeconfig.h"
#include "scheduler/util/clock.h"

namespace tessel::kube {

struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<absl::Time> expiry;  // unset: good until the server refuses it
};

// Parses a plugin's output. Errors name the kubeconfig user, the plugin and the field
// (apiVersion must be the one the kubeconfig asked for; status needs a token or both
// clientCertificateData and clientKeyData; expirationTimestamp is RFC 3339).
absl::StatusOr<ExecCredential> ParseExecCredential(std::string_view output, const ExecConfig& exec);

// The KUBERNETES_EXEC_INFO the plugin is given.
std::string ExecInfo(const ExecConfig& exec, bool interactive);

class ExecCredentialSource {
 public:
  explicit ExecCredentialSource(ExecConfig exec, const Clock* clock = nullptr);
  // The cached credential while it has not expired, else the plugin's new answer. Thread-safe:
  // one caller runs the plugin, the others wait for it.
  absl::StatusOr<ExecCredential> Get();
  void Invalidate();
  int64_t runs() const;

 private:
  absl::StatusOr<std::string> Run(bool interactive) const;

  const ExecConfig exec_;
  const Clock* clock_;
  mutable absl::Mutex mu_;
  std::optional<ExecCredential> cached_ ABSL_GUARDED_BY(mu_);
  int64_t runs_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessel::kube
