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
  Renamer ns("ns-"), pod("pod-"), node("node-");
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
    if (spec.is_null()) item.erase("spec");
  }
}

}  // namespace tessel::ctl
