// Discovery of the upstream gang APIs: the newest PodGroup version the server serves is read, a
// version it does not serve never is (Kubernetes 1.35, 1.36 and 1.37 discovery documents).
#include <catch2/catch.hpp>

#include "nlohmann/json.hpp"
#include "scheduler/kube/gang_apis.h"

namespace tessel::kube {
namespace gang_apis_test {

using nlohmann::json;

json Group(std::initializer_list<const char*> versions) {
  json group{{"kind", "APIGroup"}, {"name", "scheduling.k8s.io"}, {"versions", json::array()}};
  for (const char* v : versions) group["versions"].push_back({{"groupVersion", v}, {"version", "x"}});
  return group;
}

TEST_CASE("gang API discovery picks the newest served PodGroup, and the 1.35 Workload", "[discovery]") {
  struct Case {
    const char* name;
    json group;
    std::string pod_group;
    bool workload;
  };
  const Case cases[] = {
      {"1.37, GenericWorkload on, v1beta1 and v1alpha3 served",
       Group({"scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3"}),
       "scheduling.k8s.io/v1beta1", false},
      {"1.37, alpha only", Group({"scheduling.k8s.io/v1", "scheduling.k8s.io/v1alpha3"}), "scheduling.k8s.io/v1alpha3",
       false},
      {"1.36", Group({"scheduling.k8s.io/v1", "scheduling.k8s.io/v1alpha2"}), "scheduling.k8s.io/v1alpha2", false},
      {"1.35", Group({"scheduling.k8s.io/v1", "scheduling.k8s.io/v1alpha1"}), "", true},
      {"gate off: PriorityClasses only", Group({"scheduling.k8s.io/v1"}), "", false},
      {"not a group", json::array(), "", false},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const GangApis apis = GangApisFromGroup(c.group);
      CHECK(apis.pod_group == c.pod_group);
      CHECK(apis.workload_v1alpha1 == c.workload);
    }
  }
  CHECK(Describe(GangApisFromGroup(Group({"scheduling.k8s.io/v1"}))) ==
        "the server serves no scheduling.k8s.io PodGroup (scheduling.k8s.io/v1beta1, scheduling.k8s.io/v1alpha3, "
        "scheduling.k8s.io/v1alpha2): pods' spec.schedulingGroup is not read (Kubernetes 1.37: feature gate "
        "GenericWorkload and --runtime-config=scheduling.k8s.io/v1beta1=true)");
}

}  // namespace gang_apis_test
}  // namespace tessel::kube
