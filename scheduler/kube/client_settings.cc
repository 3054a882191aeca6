// Reading clientConnection.
#include "scheduler/kube/client_settings.h"

#include "scheduler/util/strings.h"

namespace tessel::kube {

namespace {

absl::Status FieldError(std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(StrCat("scheduler configuration: clientConnection.", field,
                                           ": ", what));
}

}  // namespace

absl::StatusOr<ClientConnection> ReadClientConnection(const YAML::Node& root) {
  ClientConnection out;
  if (!root || !root.IsMap()) return out;
  const YAML::Node cc = root["clientConnection"];
  if (!cc || cc.IsNull()) return out;
  if (!cc.IsMap()) {
    return absl::InvalidArgumentError("scheduler configuration: clientConnection: expected a map");
  }
  for (const auto& item : cc) {
    const std::string key = item.first.Scalar();
    const YAML::Node& v = item.second;
    if (key == "qps") {
      double qps = 0;
      if (!v.IsScalar() || !YAML::convert<double>::decode(v, qps) || qps < 0) {
        return FieldError("qps", "must be a number >= 0 (0: no client-side limit)");
      }
      out.qps = qps;
    } else if (key == "burst") {
      int64_t burst = 0;
      if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, burst) || burst < 1) {
        return FieldError("burst", "must be an integer >= 1");
      }
      out.burst = burst;
    } else if (key == "kubeconfig") {
      if (!v.IsScalar()) return FieldError("kubeconfig", "must be a path");
      out.kubeconfig = v.Scalar();
    } else if (key == "contentType") {
      if (!v.IsScalar()) return FieldError("contentType", "must be a string");
      const std::string t = v.Scalar();
      if (t != "application/json" && t != "application/vnd.kubernetes.protobuf" && !t.empty()) {
        return FieldError("contentType", StrCat("\"", t, "\" is not application/json or "
                                                     "application/vnd.kubernetes.protobuf"));
      }
      out.content_type = t.empty() ? "application/json" : t;
    } else if (key == "acceptContentTypes") {
      if (!v.IsScalar()) return FieldError("acceptContentTypes", "must be a string");
    } else {
      return FieldError(key, "unknown field (known: acceptContentTypes, burst, contentType, "
                             "kubeconfig, qps)");
    }
  }
  return out;
}

}  // namespace tessel::kube
