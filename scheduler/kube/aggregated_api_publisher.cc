// Pointing the admin APIService at the leader (see aggregated_api_publisher.h).
#include "scheduler/kube/aggregated_api_publisher.h"

#include <arpa/inet.h>

#include "absl/strings/escaping.h"
#include "nlohmann/json.hpp"
#include "scheduler/util/file.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"
#include "spdlog/spdlog.h"

namespace tessel::kube {

using nlohmann::json;

namespace {

std::string AddressType(const std::string& address) {
  unsigned char buf[sizeof(in6_addr)];
  if (inet_pton(AF_INET, address.c_str(), buf) == 1) return "IPv4";
  if (inet_pton(AF_INET6, address.c_str(), buf) == 1) return "IPv6";
  return "FQDN";
}

}  // namespace

absl::StatusOr<std::unique_ptr<AggregatedApiPublisher>> AggregatedApiPublisher::New(
    KubeClient* client, server::AdminBackend* backend, server::UserAuthorizer* authorizer,
    AggregatedApiPublisherOptions options) {
  const std::string host = StrCat(options.service_name, ".", options.service_namespace, ".svc");
  ASSIGN_OR_RETURN(server::ServingCert cert,
                   server::ServingCertFor({.cert_dir = options.cert_dir.empty() ? "" : StrCat(options.cert_dir, "/admin-api"),
                                           .hosts = {host}}));
  ASSIGN_OR_RETURN(std::string ca_pem, ReadFileToString(cert.cert_file));
  auto api = std::make_unique<server::AggregatedApiServer>(
      server::AggregatedApiOptions{.bind_address = options.bind_address, .port = options.port, .tls = cert,
                                   .identity = options.identity, .admin_limits = options.admin_limits},
      backend, authorizer);
  return std::unique_ptr<AggregatedApiPublisher>(
      new AggregatedApiPublisher(client, std::move(api), std::move(options), std::move(ca_pem)));
}

AggregatedApiPublisher::AggregatedApiPublisher(KubeClient* client, std::unique_ptr<server::AggregatedApiServer> server,
                                               AggregatedApiPublisherOptions options, std::string ca_pem)
    : client_(client), server_(std::move(server)), options_(std::move(options)), ca_pem_(std::move(ca_pem)) {}

AggregatedApiPublisher::~AggregatedApiPublisher() { Stop(); }

void AggregatedApiPublisher::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    std::string last_error;  // said once, not at every resync
    do {
      absl::Status st = SyncOnce();
      if (!st.ok() && st.message() != last_error) spdlog::error("aggregated admin API: {}", st.message());
      if (st.ok() && !last_error.empty()) spdlog::info("aggregated admin API: published again");
      last_error = st.ok() ? "" : std::string(st.message());
    } while (!stop_.WaitForNotificationWithTimeout(options_.resync));
  });
}

void AggregatedApiPublisher::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
  server_->Stop();
}

absl::Status AggregatedApiPublisher::SyncOnce() {
  constexpr std::string_view kConfigMap =
      "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";
  absl::StatusOr<Response> r = client_->Do({.path = std::string(kConfigMap)});
  if (!r.ok()) return r.status();
  if (!r->ok()) {
    return r->ToStatus("get ConfigMap kube-system/extension-apiserver-authentication (the scheduler needs "
                       "RoleBinding extension-apiserver-authentication-reader, manifests/admin-api.yaml)");
  }
  ASSIGN_OR_RETURN(server::RequestHeaderConfig trust,
                   server::ParseRequestHeaderConfig(json::parse(r->body, nullptr, false)));
  RETURN_IF_ERROR(server_->SetRequestHeaderConfig(trust));
  if (!server_->running()) RETURN_IF_ERROR(server_->Start());
  RETURN_IF_ERROR(PublishCaBundle());
  return PublishEndpoint();
}

absl::Status AggregatedApiPublisher::PublishEndpoint() {
  const std::string what = StrCat("EndpointSlice ", options_.service_namespace, "/", options_.service_name);
  if (options_.advertise_address.empty()) {
    return absl::FailedPreconditionError(
        StrCat(what, ": not updated: this replica's address is unknown (set POD_IP from status.podIP, or "
                     "--admin-api-advertise-address)"));
  }
  const std::string path = StrCat("/apis/discovery.k8s.io/v1/namespaces/", options_.service_namespace,
                                  "/endpointslices/", options_.service_name);
  absl::StatusOr<Response> r = client_->Do({.path = path});
  if (!r.ok()) return r.status();
  if (!r->ok()) return r->ToStatus(StrCat("get ", what, " (manifests/admin-api.yaml creates it)"));
  const json slice = json::parse(r->body, nullptr, false);
  const std::string type = AddressType(options_.advertise_address);
  if (JsonString(slice, "addressType") != type) {
    return absl::FailedPreconditionError(
        StrCat(what, ": addressType is ", JsonString(slice, "addressType"), " but this replica's address \"",
               options_.advertise_address, "\" is ", type, " (addressType cannot change: recreate the slice)"));
  }
  const json endpoints = json::array(
      {{{"addresses", {options_.advertise_address}}, {"conditions", {{"ready", true}}}}});
  const json ports = json::array({{{"name", "https"}, {"port", server_->port()}, {"protocol", "TCP"}}});
  if (slice.value("endpoints", json()) == endpoints && slice.value("ports", json()) == ports) {
    return absl::OkStatus();
  }
  r = client_->Do({.method = "PATCH",
                   .path = path,
                   .body = json{{"endpoints", endpoints}, {"ports", ports}}.dump(),
                   .content_type = std::string(kMergePatch),
                   .write_budget = options_.write_budget});
  if (!r.ok()) return r.status();
  if (!r->ok()) return r->ToStatus(StrCat("update ", what));
  spdlog::info("aggregated admin API: {} points at {}:{}", what, options_.advertise_address, server_->port());
  return absl::OkStatus();
}

absl::Status AggregatedApiPublisher::PublishCaBundle() {
  const std::string what = StrCat("APIService ", server::kAdminApiServiceName);
  const std::string path = StrCat("/apis/apiregistration.k8s.io/v1/apiservices/", server::kAdminApiServiceName);
  absl::StatusOr<Response> r = client_->Do({.path = path});
  if (!r.ok()) return r.status();
  if (!r->ok()) return r->ToStatus(StrCat("get ", what, " (manifests/admin-api.yaml creates it)"));
  const json service = json::parse(r->body, nullptr, false);
  const std::string bundle = absl::Base64Escape(ca_pem_);
  if (service.contains("spec") && JsonString(service["spec"], "caBundle") == bundle) return absl::OkStatus();
  r = client_->Do({.method = "PATCH",
                   .path = path,
                   .body = json{{"spec", {{"caBundle", bundle}}}}.dump(),
                   .content_type = std::string(kMergePatch),
                   .write_budget = options_.write_budget});
  if (!r.ok()) return r.status();
  if (!r->ok()) return r->ToStatus(StrCat("update ", what, " spec.caBundle"));
  spdlog::info("aggregated admin API: {} trusts this replica's serving certificate", what);
  return absl::OkStatus();
}

}  // namespace tessel::kube
