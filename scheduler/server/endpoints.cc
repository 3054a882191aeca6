#include "scheduler/server/endpoints.h"

#include "spdlog/spdlog.h"

namespace tessel::server {

Endpoints::Endpoints(const SchedulerOptions& options, const MetricsRegistry* registry,
                     std::function<ReadyState()> readiness, RequestAuthorizer* authorizer, AdminBackend* admin)
    : options_(options),
      registry_(registry),
      readiness_(std::move(readiness)),
      authorizer_(authorizer),
      admin_backend_(admin) {}

absl::Status Endpoints::Start() {
  const SchedulerOptions& o = options_;
  if (o.secure_port > 0 || (o.admin_port > 0 && !o.admin_insecure)) {
    absl::StatusOr<ServingCert> cert =
        ServingCertFor({.cert_file = o.tls_cert_file, .key_file = o.tls_key_file, .cert_dir = o.cert_dir});
    if (!cert.ok()) return cert.status();
    cert_ = *std::move(cert);
  }
  if (o.secure_port > 0) {
    servers_.push_back(std::make_unique<HttpServer>(
        HttpServerOptions{
            .bind_address = o.bind_address, .port = o.secure_port, .tls = *cert_, .metrics_authorizer = authorizer_},
        registry_, readiness_));
  }
  if (o.port > 0) {
    servers_.push_back(
        std::make_unique<HttpServer>(HttpServerOptions{.bind_address = o.bind_address, .port = o.port}, registry_,
                                     readiness_));
  }
  for (auto& s : servers_) {
    if (absl::Status st = s->Start(); !st.ok()) return st;
  }
  if (o.probe_port > 0) {
    probes_ = std::make_unique<ProbeServer>(ProbeServerOptions{.bind_address = o.bind_address, .port = o.probe_port},
                                            readiness_);
    if (absl::Status st = probes_->Start(); !st.ok()) return st;
  }
  admin_ = std::make_unique<AdminServer>(
      AdminServerOptions{.bind_address = o.bind_address,
                         .port = o.admin_port,
                         .tls = o.admin_insecure ? std::nullopt : cert_,
                         .limits = {.max_snapshot_bytes = static_cast<size_t>(o.simulate_max_bytes)}},
      admin_backend_, authorizer_);
  return absl::OkStatus();
}

void Endpoints::StartAdmin() {
  if (admin_ == nullptr || options_.admin_port <= 0) return;
  if (absl::Status st = admin_->Start(); !st.ok()) spdlog::error("{}", st.message());
}

void Endpoints::StopAdmin() {
  if (admin_ != nullptr) admin_->Stop();
}

void Endpoints::Stop() {
  for (auto& s : servers_) s->Stop();
  if (probes_ != nullptr) probes_->Stop();
}

}  // namespace tessel::server
