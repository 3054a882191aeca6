// The user an aggregated API server serves: kube-apiserver authenticates the caller, then
// forwards the call with its front-proxy client certificate and the user in request headers
// whose names it publishes in ConfigMap kube-system/extension-apiserver-authentication. Pure
// parsing, no I/O: the aggregated API (aggregated_api.h) checks the certificate, and the fuzz
// target request_header (tests/fuzz) reads arbitrary ConfigMaps and headers.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tessel::server {

// Where kube-apiserver publishes the front proxy's CA and header names; errors name it.
inline constexpr std::string_view kRequestHeaderConfigMap = "ConfigMap kube-system/extension-apiserver-authentication";

// A user the API server has authenticated, as the front proxy forwards it.
struct UserInfo {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};

// The aggregation layer's settings that kube-apiserver publishes in ConfigMap
// kube-system/extension-apiserver-authentication.
struct RequestHeaderConfig {
  std::string client_ca_pem;               // requestheader-client-ca-file
  std::vector<std::string> allowed_names;  // empty: any name the CA signed
  std::vector<std::string> username_headers;
  std::vector<std::string> uid_headers;
  std::vector<std::string> group_headers;
  std::vector<std::string> extra_headers_prefix;
};

// From the ConfigMap (its JSON as the API server returns it). Errors name the ConfigMap key.
absl::StatusOr<RequestHeaderConfig> ParseRequestHeaderConfig(const nlohmann::json& configmap);

// The forwarded user from the request's headers (`headers` gives all values of a header,
// case-insensitive; `all` every header's name and value), as kube-apiserver writes them:
// the first username header set, all group headers, and the extra headers (names after the
// prefix lowercased and percent-decoded).
UserInfo UserFromHeaders(const RequestHeaderConfig& config,
                         const std::vector<std::pair<std::string, std::string>>& all_headers);

}  // namespace tessel::server
