// The leader's admin endpoint from its Lease and pod (see leader.h).
#include "tools/tesselctl/leader.h"

#include "nlohmann/json.hpp"
#include "scheduler/util/strings.h"

namespace tessel::ctl {

using nlohmann::json;

absl::StatusOr<std::string> FindLeaderEndpoint(kube::KubeClient& client, std::string_view ns,
                                               std::string_view lease_name) {
  const std::string lease_path =
      StrCat("/apis/coordination.k8s.io/v1/namespaces/", ns, "/leases/", lease_name);
  absl::StatusOr<kube::Response> r = client.Do({.path = lease_path});
  if (!r.ok()) return r.status();
  if (!r->ok()) return r->ToStatus(StrCat("get Lease ", ns, "/", lease_name));
  const json lease = json::parse(r->body, nullptr, false);
  const std::string holder =
      lease.is_object() && lease.contains("spec") ? kube::JsonString(lease["spec"], "holderIdentity") : "";
  if (holder.empty()) {
    return absl::UnavailableError(StrCat("Lease ", ns, "/", lease_name,
                                         ": spec.holderIdentity is empty: no scheduler leads now"));
  }
  const std::string pod_name = holder.substr(0, holder.rfind('_'));
  r = client.Do({.path = StrCat("/api/v1/namespaces/", ns, "/pods/", pod_name)});
  if (!r.ok()) return r.status();
  if (!r->ok()) {
    return r->ToStatus(StrCat("the leader \"", holder, "\" of Lease ", ns, "/", lease_name,
                              ": get its pod ", ns, "/", pod_name, " (or give --server HOST:PORT)"));
  }
  const json pod = json::parse(r->body, nullptr, false);
  const std::string ip =
      pod.is_object() && pod.contains("status") ? kube::JsonString(pod["status"], "podIP") : "";
  if (ip.empty()) {
    return absl::UnavailableError(StrCat("Pod ", ns, "/", pod_name, ": status.podIP is empty"));
  }
  int64_t port = kDefaultAdminPort;
  if (pod.contains("spec") && pod["spec"].contains("containers") && pod["spec"]["containers"].is_array()) {
    for (const json& c : pod["spec"]["containers"]) {
      if (!c.is_object() || !c.contains("ports") || !c["ports"].is_array()) continue;
      for (const json& p : c["ports"]) {
        if (kube::JsonString(p, "name") == "admin") port = kube::JsonInt(p, "containerPort", port);
      }
    }
  }
  return ip.find(':') != std::string::npos ? StrCat("[", ip, "]:", port) : StrCat(ip, ":", port);
}

}  // namespace tessel::ctl
