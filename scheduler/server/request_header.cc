// The aggregation layer's forwarded user: the front proxy's settings from ConfigMap
// kube-system/extension-apiserver-authentication, and the user from a request's headers (see
// request_header.h).
#include "scheduler/server/request_header.h"

#include <cctype>

#include "scheduler/util/strings.h"

namespace tessel::server {

using nlohmann::json;

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && Lower(s.substr(0, prefix.size())) == Lower(prefix);
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// A ConfigMap value that holds a JSON list of strings ("" or absent: empty).
absl::StatusOr<std::vector<std::string>> StringList(const json& data, const char* key) {
  if (!data.contains(key)) return std::vector<std::string>{};
  if (!data[key].is_string()) return absl::InvalidArgumentError(StrCat(kRequestHeaderConfigMap, ": data.", key, ": not a string"));
  const std::string text = data[key].get<std::string>();
  if (text.empty()) return std::vector<std::string>{};
  const json list = json::parse(text, nullptr, false);
  std::vector<std::string> out;
  if (!list.is_array()) {
    return absl::InvalidArgumentError(StrCat(kRequestHeaderConfigMap, ": data.", key, ": \"", text, "\" is not a JSON list"));
  }
  for (const json& v : list) {
    if (!v.is_string()) return absl::InvalidArgumentError(StrCat(kRequestHeaderConfigMap, ": data.", key, ": not a list of strings"));
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

absl::StatusOr<RequestHeaderConfig> ParseRequestHeaderConfig(const json& configmap) {
  const json data = configmap.is_object() && configmap.contains("data") && configmap["data"].is_object()
                        ? configmap["data"]
                        : json::object();
  RequestHeaderConfig c;
  if (data.contains("requestheader-client-ca-file") && data["requestheader-client-ca-file"].is_string()) {
    c.client_ca_pem = data["requestheader-client-ca-file"].get<std::string>();
  }
  if (c.client_ca_pem.empty()) {
    return absl::FailedPreconditionError(
        StrCat(kRequestHeaderConfigMap, ": data.requestheader-client-ca-file: missing: kube-apiserver runs without "
                           "--requestheader-client-ca-file, so it cannot forward users to aggregated APIs"));
  }
  auto set = [&](const char* key, std::vector<std::string>* into) -> absl::Status {
    absl::StatusOr<std::vector<std::string>> list = StringList(data, key);
    if (!list.ok()) return list.status();
    *into = *std::move(list);
    return absl::OkStatus();
  };
  for (auto [key, into] : {std::pair{"requestheader-allowed-names", &c.allowed_names},
                           std::pair{"requestheader-username-headers", &c.username_headers},
                           std::pair{"requestheader-uid-headers", &c.uid_headers},
                           std::pair{"requestheader-group-headers", &c.group_headers},
                           std::pair{"requestheader-extra-headers-prefix", &c.extra_headers_prefix}}) {
    if (absl::Status st = set(key, into); !st.ok()) return st;
  }
  if (c.username_headers.empty()) {
    return absl::FailedPreconditionError(StrCat(kRequestHeaderConfigMap, ": data.requestheader-username-headers: empty"));
  }
  return c;
}

UserInfo UserFromHeaders(const RequestHeaderConfig& config,
                         const std::vector<std::pair<std::string, std::string>>& all_headers) {
  UserInfo user;
  auto values = [&](std::string_view name) {
    std::vector<std::string> out;
    for (const auto& [k, v] : all_headers) {
      if (Lower(k) == Lower(name)) out.push_back(v);
    }
    return out;
  };
  for (const std::string& h : config.username_headers) {
    for (const std::string& v : values(h)) {
      if (user.name.empty()) user.name = v;
    }
  }
  for (const std::string& h : config.uid_headers) {
    for (const std::string& v : values(h)) {
      if (user.uid.empty()) user.uid = v;
    }
  }
  for (const std::string& h : config.group_headers) {
    for (std::string& v : values(h)) user.groups.push_back(std::move(v));
  }
  for (const std::string& prefix : config.extra_headers_prefix) {
    for (const auto& [k, v] : all_headers) {
      if (k.size() > prefix.size() && StartsWithNoCase(k, prefix)) {
        user.extra[Lower(PercentDecode(k.substr(prefix.size())))].push_back(v);
      }
    }
  }
  return user;
}

}  // namespace tessel::server
