// libFuzzer target: the aggregated admin API's forwarded user (scheduler/server/request_header.h).
// The input's first line is ConfigMap extension-apiserver-authentication as JSON, the rest are
// request headers ("Name: value" a line), as an API server's front proxy (or anyone who reaches
// the port) could send them. ParseRequestHeaderConfig answers a config or an error naming the
// ConfigMap; with a config, UserFromHeaders never throws, and what it returns came from the
// headers it was told to read: the user is the value of a username header, every group the
// value of a group header, and every extra key lowercase.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "scheduler/server/request_header.h"

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Whether `value` is the value of some header named (case-insensitively) one of `names`.
bool FromOneOf(const std::vector<std::pair<std::string, std::string>>& headers,
               const std::vector<std::string>& names, const std::string& value) {
  for (const auto& [k, v] : headers) {
    if (v != value) continue;
    for (const std::string& n : names) {
      if (Lower(k) == Lower(n)) return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t newline = text.find('\n');
  const nlohmann::json configmap =
      nlohmann::json::parse(text.substr(0, newline), nullptr, /*allow_exceptions=*/false);
  const absl::StatusOr<tessel::server::RequestHeaderConfig> config =
      tessel::server::ParseRequestHeaderConfig(configmap);
  if (!config.ok()) {
    if (std::string(config.status().message()).find("extension-apiserver-authentication") == std::string::npos) {
      std::abort();
    }
    return 0;
  }
  std::vector<std::pair<std::string, std::string>> headers;
  for (size_t at = newline == std::string_view::npos ? text.size() : newline + 1; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
    }
    at = end + 1;
  }
  const tessel::server::UserInfo user = tessel::server::UserFromHeaders(*config, headers);
  if (!user.name.empty() && !FromOneOf(headers, config->username_headers, user.name)) std::abort();
  if (!user.uid.empty() && !FromOneOf(headers, config->uid_headers, user.uid)) std::abort();
  for (const std::string& g : user.groups) {
    if (!FromOneOf(headers, config->group_headers, g)) std::abort();
  }
  for (const auto& [key, values] : user.extra) {
    if (key != Lower(key) || values.empty()) std::abort();
  }
  return 0;
}
