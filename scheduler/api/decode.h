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

namespace tessel {

absl::StatusOr<Pod> DecodePod(const nlohmann::json& object);
absl::StatusOr<Node> DecodeNode(const nlohmann::json& object);
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
  StringMap StringMapField(const nlohmann::json& parent, std::string_view key,
                           std::string_view path);
  Resources ResourceMap(const nlohmann::json& parent, std::string_view key, std::string_view path,
                        bool allow_negative = false);
  absl::Time Timestamp(const nlohmann::json& parent, std::string_view key, std::string_view path);
  ObjectMeta Meta(const nlohmann::json& object);

  void Fail(std::string_view path, std::string_view why);
  bool ok() const { return error_.empty(); }
  // InvalidArgument "<object>: <path>: <why>" for the first error, or OK.
  absl::Status status() const;

 private:
  const nlohmann::json* Child(const nlohmann::json& parent, std::string_view key);
  std::string object_;
  std::string error_;
};

}  // namespace tessel
