// Decoding Kubernetes JSON (as the API server or `kubectl get -o json` prints it) into the
// objects of objects.h. Never throws: a malformed object yields an InvalidArgument status whose
// message names the object and the field, e.g.
//   Pod team-a/train-0: spec.containers[0].resources.requests.cpu: quantity "ten" is not valid: no digits
//
//   absl::StatusOr<Pod> pod = DecodePod(json);
//   absl::StatusOr<ObjectList> list = DecodeList(text);  // a v1 List, objects decoded one by one
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "scheduler/api/objects.h"
#include "scheduler/api/storage.h"
#include "scheduler/util/strings.h"

namespace tessel {

// A pod bound to a node holds resources whatever else is in it, so it is never dropped, as
// kube-scheduler never drops one: when strict decoding fails (an enum value of a newer
// Kubernetes, such as a toleration operator "Lt"; a quantity beyond int64, such as a CPU limit
// of 2^63-1), the pod is decoded leniently and returned with the first problem, naming the
// field, in `decode_warnings`. Leniently, a field that does not read keeps its default, and a
// resource quantity that does not read is charged as kUnreadableQuantity: more than any node
// has, so the node counts as full of that resource while the pod runs there, and nothing is
// overcommitted (a limit that does not read matters only where it stands in for a missing
// request). A bound pod holds at most kUnreadableQuantity of any resource, and sums that would
// pass int64 (two containers of "memory: 5E") saturate there, so that it is always charged and
// a node's sum never overflows. A pod not bound yet fails, naming the field (it cannot be scheduled as written);
// so does one whose name or spec.nodeName does not read.
absl::StatusOr<Pod> DecodePod(const nlohmann::json& object);
inline constexpr int64_t kUnreadableQuantity = int64_t{1} << 52;
// What identifies a pod, read as far as it reads (never fails): metadata, spec.schedulerName
// and spec.nodeName. For reporting a pod that DecodePod refused.
Pod DecodePodIdentity(const nlohmann::json& object);
// A Node as far as it reads. Lenient where that is safe: an amount beyond int64 saturates (the
// node offers more than can be counted), and an extended resource whose amount does not read
// counts as none of it, named in `warnings` (no pod asking for it goes there). Anything else
// that does not read (a taint, spec.unschedulable, cpu, memory, pods, a GPU resource) fails,
// naming the field: the caller fences the node (FenceUnreadableNode) rather than keep an older
// copy that may be less cordoned or larger than the node now is.
struct NodeRead {
  absl::StatusOr<Node> node;
  std::vector<std::string> warnings;
};
NodeRead ReadNode(const nlohmann::json& object);
absl::StatusOr<Node> DecodeNode(const nlohmann::json& object);  // ReadNode(object).node
// A node that cannot be read takes no pods until it can: `last` (its last readable version,
// or just its name) made unschedulable, tainted kUnreadableNodeTaint:NoSchedule, and with no
// allocatable room, so no toleration lets a pod in. Its pods stay charged where they are.
Node FenceUnreadableNode(Node last);
inline constexpr std::string_view kUnreadableNodeTaint = "tessel.io/unreadable";
// metadata.name as far as it reads ("" when it does not).
std::string ObjectName(const nlohmann::json& object);
absl::StatusOr<PriorityClass> DecodePriorityClass(const nlohmann::json& object);
absl::StatusOr<PodDisruptionBudget> DecodePodDisruptionBudget(const nlohmann::json& object);
// Volume scheduling's objects (storage.h) and Namespaces (their labels).
absl::StatusOr<PersistentVolumeClaim> DecodePersistentVolumeClaim(const nlohmann::json& object);
absl::StatusOr<PersistentVolume> DecodePersistentVolume(const nlohmann::json& object);
absl::StatusOr<StorageClass> DecodeStorageClass(const nlohmann::json& object);
absl::StatusOr<Namespace> DecodeNamespace(const nlohmann::json& object);
absl::StatusOr<CSINode> DecodeCSINode(const nlohmann::json& object);

// "Pod ns/name", "Node name": how messages refer to an object, read defensively from JSON.
std::string DescribeObject(const nlohmann::json& object);

// The contents of a v1 List. Objects that fail to decode are left out and named in `warnings`.
// Kinds this file does not decode are kept raw in `others` for the decoders of later layers.
struct ObjectList {
  std::vector<Pod> pods;
  std::vector<Node> nodes;
  std::vector<PriorityClass> priority_classes;
  std::vector<PodDisruptionBudget> disruption_budgets;
  std::vector<PersistentVolumeClaim> claims;
  std::vector<PersistentVolume> volumes;
  std::vector<StorageClass> storage_classes;
  std::vector<Namespace> namespaces;
  std::vector<CSINode> csi_nodes;
  std::vector<nlohmann::json> others;
  std::vector<std::string> warnings;
};

// Fails (one line, no object) only when the text is not JSON or not a List with an items array.
absl::StatusOr<ObjectList> DecodeList(std::string_view text);

// Shared helpers for decoders in later layers (PodGroup, Queue): they read a field and record
// the first error with its path, so a decoder reads as a list of fields.
class FieldDecoder {
 public:
  explicit FieldDecoder(std::string object) : object_(std::move(object)) {}

  // Each returns the field's value, or the fallback when absent or null; a wrong type records
  // an error. `path` is the field's full path, used in the message.
  std::string String(const nlohmann::json& parent, std::string_view key, std::string_view path,
                     std::string fallback = "");
  int64_t Int(const nlohmann::json& parent, std::string_view key, std::string_view path,
              int64_t fallback = 0);
  bool Bool(const nlohmann::json& parent, std::string_view key, std::string_view path,
            bool fallback = false);
  // The child as an object or array, or nullptr when absent/null (wrong type records an error).
  const nlohmann::json* Object(const nlohmann::json& parent, std::string_view key,
                               std::string_view path);
  const nlohmann::json* Array(const nlohmann::json& parent, std::string_view key,
                              std::string_view path);
  // Each item of the array under `key` (none when it is absent or null; a value that is not an
  // array records an error), with its path `path[i]`: each(item, item_path).
  template <typename Fn>
  void ForEach(const nlohmann::json& parent, std::string_view key, std::string_view path, Fn&& each) {
    const nlohmann::json* list = Array(parent, key, path);
    if (list == nullptr) return;
    for (size_t i = 0; i < list->size(); ++i) each((*list)[i], ItemPath(path, i));
  }
  // The items decoded one by one, in order: decode(item, item_path) returns a T.
  template <typename T, typename Fn>
  std::vector<T> List(const nlohmann::json& parent, std::string_view key, std::string_view path,
                      Fn&& decode) {
    std::vector<T> out;
    ForEach(parent, key, path, [&](const nlohmann::json& item, const std::string& item_path) {
      out.push_back(decode(item, item_path));
    });
    return out;
  }
  // A list item that must be a non-empty string (a namespace, a resource name): the string, or
  // nullopt with the error "expected <what>" at `path`.
  std::optional<std::string> NameItem(const nlohmann::json& item, std::string_view path, std::string_view what);
  // "spec.tolerations[2]": the path of item `i` of the list at `path`.
  static std::string ItemPath(std::string_view path, size_t i) { return StrCat(path, "[", i, "]"); }
  StringMap StringMapField(const nlohmann::json& parent, std::string_view key,
                           std::string_view path);
  // A metav1.LabelSelector (matchLabels, matchExpressions); nullopt when absent or null (a nil
  // selector, which selects nothing).
  std::optional<LabelSelector> Selector(const nlohmann::json& parent, std::string_view key,
                                        std::string_view path);
  Resources ResourceMap(const nlohmann::json& parent, std::string_view key, std::string_view path,
                        bool allow_negative = false);
  absl::Time Timestamp(const nlohmann::json& parent, std::string_view key, std::string_view path);
  ObjectMeta Meta(const nlohmann::json& object);

  // Leniently, a resource quantity that does not read is kUnreadableQuantity (still an error).
  void SaturateUnreadableQuantities() { saturate_quantities_ = true; }

  void Fail(std::string_view path, std::string_view why);
  // How messages name the object ("Node gpu-1").
  const std::string& object() const { return object_; }
  bool ok() const { return error_.empty(); }
  // InvalidArgument "<object>: <path>: <why>" for the first error, or OK.
  absl::Status status() const;

 private:
  const nlohmann::json* Child(const nlohmann::json& parent, std::string_view key);
  std::string object_;
  std::string error_;
  bool saturate_quantities_ = false;
};

// spec.taints / spec.tolerations shapes under another key (a ResourceFlavor's spec.nodeTaints),
// decoded as a Node's and a Pod's are; errors name `path`.
std::vector<Taint> DecodeTaints(FieldDecoder& d, const nlohmann::json& parent, std::string_view key,
                                std::string_view path);
std::vector<Toleration> DecodeTolerations(FieldDecoder& d, const nlohmann::json& parent,
                                          std::string_view key, std::string_view path);
// What a pod's toleration and a device's (resource.k8s.io) share: key, operator (Equal or
// Exists), value and tolerationSeconds, read from the list item `t` at `path` into `tol`; the
// effect is each kind's own.
template <typename TolerationT>
void DecodeTolerationFields(FieldDecoder& d, const nlohmann::json& t, std::string_view path, TolerationT& tol) {
  auto field = [&](std::string_view name) { return StrCat(path, ".", name); };
  tol.key = d.String(t, "key", field("key"));
  const std::string op = d.String(t, "operator", field("operator"), "Equal");
  if (op == "Exists") {
    tol.op = TolerationT::Operator::kExists;
  } else if (op != "Equal") {
    d.Fail(field("operator"), StrCat("unknown operator \"", op, "\" (want Equal or Exists)"));
  }
  tol.value = d.String(t, "value", field("value"));
  if (t.contains("tolerationSeconds") && !t["tolerationSeconds"].is_null()) {
    tol.toleration_seconds = d.Int(t, "tolerationSeconds", field("tolerationSeconds"));
  }
}
// A core/v1 NodeSelector (its nodeSelectorTerms, ORed) under `key`, as node affinity decodes it;
// nullopt when absent. For later layers' objects that embed one (a ResourceSlice).
std::optional<std::vector<NodeSelectorTerm>> DecodeNodeSelector(FieldDecoder& d,
                                                                const nlohmann::json& parent,
                                                                std::string_view key,
                                                                std::string_view path);

}  // namespace tessel
