// DynamicResources: a pod that names DRA claims is held (unresolvable, the claims named), a pod
// without claims is left to the other plugins; and the pod decode keeps spec.resourceClaims,
// naming a malformed entry.
#include <catch2/catch.hpp>

#include "nlohmann/json.hpp"
#include "plugins/dynamic_resources/dynamic_resources.h"
#include "scheduler/api/decode.h"

namespace tessel {
namespace {

using dynamic_resources::DynamicResources;
using nlohmann::json;

json PodWithClaims(json claims) {
  json pod = json::parse(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "infer", "namespace": "team-a"},
      "spec": {"schedulerName": "tessel",
               "containers": [{"name": "main", "image": "busybox",
                               "resources": {"claims": [{"name": "gpu"}]}}]}})");
  pod["spec"]["resourceClaims"] = std::move(claims);
  return pod;
}

TEST_CASE("DynamicResources holds pods with DRA claims and names them", "[plugins][dra]") {
  struct Case {
    const char* name;
    const char* claims;
    const char* want;  // "" = skipped
  };
  const Case cases[] = {
      {"no claims", "[]", ""},
      {"a template", R"([{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}])",
       "resource claim \"gpu\" (ResourceClaimTemplate single-gpu): Tessel does not allocate Dynamic Resource "
       "Allocation (DRA) claims yet, so it does not bind the pod"},
      {"a claim and a template",
       R"([{"name": "gpu", "resourceClaimName": "shared-gpu"}, {"name": "nic", "resourceClaimTemplateName": "rdma"}])",
       "resource claim \"gpu\" (ResourceClaim shared-gpu), resource claim \"nic\" (ResourceClaimTemplate rdma): "
       "Tessel does not allocate Dynamic Resource Allocation (DRA) claims yet, so it does not bind the pod"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      absl::StatusOr<Pod> pod = DecodePod(PodWithClaims(json::parse(c.claims)));
      REQUIRE(pod.ok());
      DynamicResources plugin;
      CycleState state;
      const Status st = plugin.PreFilter(state, *pod);
      if (std::string(c.want).empty()) {
        CHECK(st.IsSkip());
      } else {
        CHECK(st.code() == Code::kUnschedulableAndUnresolvable);
        CHECK(st.reasons() == std::vector<std::string>{c.want});
      }
    }
  }
  // Nothing in the cluster changes the answer: no event requeues the pod.
  CHECK(DynamicResources().EventsToRegister() == 0);
}

TEST_CASE("the pod decode keeps spec.resourceClaims and names a malformed entry", "[decode][dra]") {
  absl::StatusOr<Pod> pod = DecodePod(PodWithClaims(json::parse(R"([{"name": "gpu", "resourceClaimName": "c"}])")));
  REQUIRE(pod.ok());
  REQUIRE(pod->resource_claims.size() == 1);
  CHECK(pod->resource_claims[0].name == "gpu");
  CHECK(pod->resource_claims[0].resource_claim_name == "c");
  CHECK(pod->resource_claims[0].resource_claim_template_name.empty());

  struct Case {
    const char* claims;
    const char* want;
  };
  const Case cases[] = {
      {R"([{"resourceClaimName": "c"}])", "Pod team-a/infer: spec.resourceClaims[0].name: missing"},
      {R"([{"name": "gpu"}])",
       "Pod team-a/infer: spec.resourceClaims[0]: exactly one of resourceClaimName and resourceClaimTemplateName "
       "must be set"},
      {R"([{"name": "gpu", "resourceClaimName": "c", "resourceClaimTemplateName": "t"}])",
       "Pod team-a/infer: spec.resourceClaims[0]: exactly one of resourceClaimName and resourceClaimTemplateName "
       "must be set"},
      {R"({"name": "gpu"})", "Pod team-a/infer: spec.resourceClaims: expected a list, got object"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Pod> bad = DecodePod(PodWithClaims(json::parse(c.claims)));
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(std::string(bad.status().message()), Catch::StartsWith(c.want));
  }
}

}  // namespace
}  // namespace tessel
