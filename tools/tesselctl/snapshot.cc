// Snapshot lists and consistent renaming (see snapshot.h).
#include "tools/tesselctl/snapshot.h"

#include <map>
#include <string>

#include "scheduler/kube/informer.h"
#include "scheduler/util/strings.h"

namespace tessel::ctl {

using nlohmann::json;

namespace {

struct Kind {
  const char* path;
  const char* api_version;
  const char* kind;
};

constexpr Kind kKinds[] = {
    {"/api/v1/nodes", "v1", "Node"},
    {"/api/v1/pods", "v1", "Pod"},
    {"/apis/scheduling.k8s.io/v1/priorityclasses", "scheduling.k8s.io/v1", "PriorityClass"},
    {"/apis/scheduling.x-k8s.io/v1alpha1/podgroups", "scheduling.x-k8s.io/v1alpha1", "PodGroup"},
    {"/apis/tessel.io/v1alpha1/queues", "tessel.io/v1alpha1", "Queue"},
    {"/apis/tessel.io/v1alpha1/resourceflavors", "tessel.io/v1alpha1", "ResourceFlavor"},
    {"/apis/tessel.io/v1alpha1/cohorts", "tessel.io/v1alpha1", "Cohort"},
    {"/apis/policy/v1/poddisruptionbudgets", "policy/v1", "PodDisruptionBudget"},
    {"/api/v1/persistentvolumeclaims", "v1", "PersistentVolumeClaim"},
    {"/api/v1/persistentvolumes", "v1", "PersistentVolume"},
    {"/apis/storage.k8s.io/v1/storageclasses", "storage.k8s.io/v1", "StorageClass"},
    {"/apis/storage.k8s.io/v1/csinodes", "storage.k8s.io/v1", "CSINode"},
    {"/api/v1/namespaces", "v1", "Namespace"},
    // Dynamic Resource Allocation (Kubernetes 1.34 and later; an older server answers 404).
    {"/apis/resource.k8s.io/v1/resourceslices", "resource.k8s.io/v1", "ResourceSlice"},
    {"/apis/resource.k8s.io/v1/deviceclasses", "resource.k8s.io/v1", "DeviceClass"},
    {"/apis/resource.k8s.io/v1/resourceclaims", "resource.k8s.io/v1", "ResourceClaim"},
};

// One renaming table: the same name gets the same new name.
class Renamer {
 public:
  explicit Renamer(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string operator()(const std::string& name) {
    if (name.empty()) return name;
    auto [it, added] = names_.try_emplace(name, "");
    if (added) it->second = StrCat(prefix_, names_.size());
    return it->second;
  }

 private:
  std::string prefix_;
  std::map<std::string, std::string> names_;
};

void RenameString(json& object, const char* field, Renamer& rename) {
  if (object.is_object() && object.contains(field) && object[field].is_string()) {
    object[field] = rename(object[field].get<std::string>());
  }
}

// Every renaming table of one snapshot.
struct Renamers {
  Renamer ns{"ns-"}, pod{"pod-"}, node{"node-"}, claim{"claim-"}, pool{"pool-"}, slice{"slice-"};
};

// Calls f on each object of the array object[field], if it is one.
template <typename F>
void ForEach(json& object, const char* field, F f) {
  if (!object.is_object() || !object.contains(field) || !object[field].is_array()) return;
  for (json& element : object[field]) {
    if (element.is_object()) f(element);
  }
}

// A node selector's terms name nodes by metadata.name (fields) and kubernetes.io/hostname.
void RenameNodeSelector(json& selector, Renamer& node) {
  auto rename_values = [&](json& requirement, const char* key) {
    if (kube::JsonString(requirement, "key") != key) return;
    if (!requirement.contains("values") || !requirement["values"].is_array()) return;
    for (json& v : requirement["values"]) {
      if (v.is_string()) v = node(v.get<std::string>());
    }
  };
  ForEach(selector, "nodeSelectorTerms", [&](json& term) {
    ForEach(term, "matchFields", [&](json& r) { rename_values(r, "metadata.name"); });
    ForEach(term, "matchExpressions", [&](json& r) { rename_values(r, "kubernetes.io/hostname"); });
  });
}

// What the DRA objects and pods' claim references name: nodes (a slice's node and node
// selectors, an allocation's node selector), pools and slices (named after their node by
// node-local drivers), pods (reservedFor, the owner of a generated claim) and claims (a generated
// claim's name holds its pod's).
void AnonymizeDra(json& item, const std::string& kind, Renamers& r) {
  json& spec = item["spec"];
  json& status = item["status"];
  if (kind == "Pod") {
    ForEach(spec, "resourceClaims", [&](json& c) { RenameString(c, "resourceClaimName", r.claim); });
    ForEach(status, "resourceClaimStatuses", [&](json& c) { RenameString(c, "resourceClaimName", r.claim); });
  } else if (kind == "ResourceSlice") {
    RenameString(item["metadata"], "name", r.slice);
    RenameString(spec, "nodeName", r.node);
    if (spec.is_object() && spec.contains("pool")) RenameString(spec["pool"], "name", r.pool);
    if (spec.is_object() && spec.contains("nodeSelector")) RenameNodeSelector(spec["nodeSelector"], r.node);
    ForEach(spec, "devices", [&](json& d) {
      RenameString(d, "nodeName", r.node);
      if (d.contains("nodeSelector")) RenameNodeSelector(d["nodeSelector"], r.node);
    });
  } else if (kind == "ResourceClaim") {
    RenameString(item["metadata"], "name", r.claim);
    ForEach(item["metadata"], "ownerReferences", [&](json& o) {
      if (kube::JsonString(o, "kind") == "Pod") RenameString(o, "name", r.pod);
    });
    ForEach(status, "reservedFor", [&](json& ref) {
      if (kube::JsonString(ref, "resource") == "pods") RenameString(ref, "name", r.pod);
    });
    ForEach(status, "devices", [&](json& d) { RenameString(d, "pool", r.pool); });
    if (status.is_object() && status.contains("allocation") && status["allocation"].is_object()) {
      json& allocation = status["allocation"];
      if (allocation.contains("nodeSelector")) RenameNodeSelector(allocation["nodeSelector"], r.node);
      if (allocation.contains("devices")) {
        ForEach(allocation["devices"], "results", [&](json& d) { RenameString(d, "pool", r.pool); });
      }
    }
  }
  if (status.is_null()) item.erase("status");
}

}  // namespace

absl::StatusOr<json> TakeSnapshot(kube::KubeClient& client) {
  json items = json::array();
  for (const Kind& k : kKinds) {
    std::string next;
    do {
      std::string path = StrCat(k.path, "?limit=500");
      if (!next.empty()) path += StrCat("&continue=", kube::UrlEncode(next));
      absl::StatusOr<kube::Response> r = client.Do({.path = path});
      if (!r.ok()) return r.status();
      if (r->code == 404) break;  // not served here (a CRD not installed)
      if (!r->ok()) return r->ToStatus(StrCat("list ", k.kind, "s"));
      json list = json::parse(r->body, nullptr, false);
      if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) {
        return absl::DataLossError(StrCat("list ", k.kind, "s: the answer is not a list"));
      }
      for (json& item : list["items"]) {
        item["apiVersion"] = k.api_version;
        item["kind"] = k.kind;
        items.push_back(std::move(item));
      }
      next = list.contains("metadata") ? kube::JsonString(list["metadata"], "continue") : "";
    } while (!next.empty());
  }
  return json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

void Anonymize(json& list) {
  Renamers r;
  Renamer& ns = r.ns;
  Renamer& pod = r.pod;
  Renamer& node = r.node;
  for (json& item : list["items"]) {
    const std::string kind = kube::JsonString(item, "kind");
    json& meta = item["metadata"];
    if (meta.is_object()) {
      meta.erase("annotations");
      meta.erase("managedFields");
      RenameString(meta, "namespace", ns);
      if (kind == "Pod") RenameString(meta, "name", pod);
      if (kind == "Node" || kind == "CSINode") RenameString(meta, "name", node);
      if (kind == "Namespace") RenameString(meta, "name", ns);
      if (meta.contains("labels") && meta["labels"].is_object()) {
        RenameString(meta["labels"], "kubernetes.io/hostname", node);
        RenameString(meta["labels"], "kubernetes.io/metadata.name", ns);
      }
    }
    json& spec = item["spec"];
    if (kind == "Pod") {
      RenameString(spec, "nodeName", node);
      if (spec.is_object()) spec.erase("hostname");
      if (item.contains("status") && item["status"].is_object()) {
        RenameString(item["status"], "nominatedNodeName", node);
      }
    }
    if (kind == "Node" && item.contains("status") && item["status"].is_object()) {
      item["status"].erase("addresses");  // the host name and IPs
      item["status"].erase("images");
    }
    if (kind == "Queue" && spec.is_object() && spec.contains("namespaces") && spec["namespaces"].is_array()) {
      for (json& n : spec["namespaces"]) {
        if (n.is_string()) n = ns(n.get<std::string>());
      }
    }
    AnonymizeDra(item, kind, r);
    if (spec.is_null()) item.erase("spec");
  }
}

}  // namespace tessel::ctl
