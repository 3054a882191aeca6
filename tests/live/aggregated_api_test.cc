// The aggregated admin API's reading of the front proxy: ConfigMap
// extension-apiserver-authentication and the forwarded user's headers.
#include <catch2/catch.hpp>

#include "nlohmann/json.hpp"
#include "scheduler/server/aggregated_api.h"

namespace tessel::server {
namespace {

using nlohmann::json;

json ConfigMap(json data) { return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"data", std::move(data)}}; }

TEST_CASE("aggregated API: the requestheader settings kube-apiserver publishes") {
  auto c = ParseRequestHeaderConfig(ConfigMap({{"requestheader-client-ca-file", "PEM"},
                                               {"requestheader-allowed-names", R"(["front-proxy-client"])"},
                                               {"requestheader-username-headers", R"(["X-Remote-User"])"},
                                               {"requestheader-group-headers", R"(["X-Remote-Group"])"},
                                               {"requestheader-extra-headers-prefix", R"(["X-Remote-Extra-"])"}}));
  REQUIRE(c.ok());
  CHECK(c->client_ca_pem == "PEM");
  CHECK(c->allowed_names == std::vector<std::string>{"front-proxy-client"});
  CHECK(c->username_headers == std::vector<std::string>{"X-Remote-User"});
  CHECK(c->uid_headers.empty());  // older API servers do not publish it

  struct Case {
    const char* name;
    json data;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"no aggregation layer", json::object(),
       "data.requestheader-client-ca-file: missing: kube-apiserver runs without --requestheader-client-ca-file"},
      {"not a list", {{"requestheader-client-ca-file", "PEM"}, {"requestheader-allowed-names", "front-proxy"}},
       "data.requestheader-allowed-names: \"front-proxy\" is not a JSON list"},
      {"no user header", {{"requestheader-client-ca-file", "PEM"}, {"requestheader-username-headers", "[]"}},
       "data.requestheader-username-headers: empty"},
  };
  for (const Case& t : cases) {
    SECTION(t.name) {
      auto got = ParseRequestHeaderConfig(ConfigMap(t.data));
      REQUIRE_FALSE(got.ok());
      CHECK_THAT(std::string(got.status().message()),
                 Catch::StartsWith("ConfigMap kube-system/extension-apiserver-authentication: ") &&
                     Catch::Contains(t.want));
    }
  }
}

TEST_CASE("aggregated API: the forwarded user, as kube-apiserver writes the headers") {
  const RequestHeaderConfig config{.username_headers = {"X-Remote-User"},
                                   .uid_headers = {"X-Remote-Uid"},
                                   .group_headers = {"X-Remote-Group"},
                                   .extra_headers_prefix = {"X-Remote-Extra-"}};
  const UserInfo user = UserFromHeaders(config, {{"x-remote-user", "jane"},
                                                 {"X-Remote-User", "mallory"},  // the first one counts
                                                 {"X-Remote-Uid", "42"},
                                                 {"X-Remote-Group", "team-a"},
                                                 {"x-remote-group", "system:authenticated"},
                                                 {"X-Remote-Extra-Scopes", "read"},
                                                 {"X-Remote-Extra-Scopes", "write"},
                                                 {"X-Remote-Extra-Acme.com%2Fproject", "gpu"},
                                                 {"Authorization", "Bearer not-for-us"}});
  CHECK(user.name == "jane");
  CHECK(user.uid == "42");
  CHECK(user.groups == std::vector<std::string>{"team-a", "system:authenticated"});
  CHECK(user.extra == std::map<std::string, std::vector<std::string>>{{"scopes", {"read", "write"}},
                                                                      {"acme.com/project", {"gpu"}}});
  CHECK(UserFromHeaders(config, {{"X-Remote-Group", "team-a"}}).name.empty());
}

}  // namespace
}  // namespace tessel::server
