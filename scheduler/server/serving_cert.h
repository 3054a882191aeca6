// The TLS certificate of the scheduler's secure port: the one given (--tls-cert-file,
// --tls-private-key-file), or, as kube-scheduler does without one, a self-signed certificate
// generated at start (EC P-256, valid one year, subject alternative names localhost, 127.0.0.1
// and the host's name) written to a directory of its own.
//
//   ASSIGN_OR_RETURN(ServingCert cert, ServingCertFor({.cert_dir = "/var/run/tessel"}));
//   HttpServer https({.tls = cert, ...});
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessel::server {

struct ServingCert {
  std::string cert_file;  // PEM
  std::string key_file;   // PEM
};

struct ServingCertOptions {
  std::string cert_file;  // both given: used as they are (checked to exist)
  std::string key_file;
  std::string cert_dir;   // where a self-signed pair is written; empty: a new temporary directory
  std::vector<std::string> hosts = {"localhost", "127.0.0.1"};  // plus the host name
};

absl::StatusOr<ServingCert> ServingCertFor(const ServingCertOptions& options);

// Writes a self-signed certificate for `hosts` (DNS names and IP addresses) and its key.
absl::Status WriteSelfSignedCert(const std::string& cert_file, const std::string& key_file,
                                 const std::vector<std::string>& hosts);

}  // namespace tessel::server
