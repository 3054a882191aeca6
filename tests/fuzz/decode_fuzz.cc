// libFuzzer target: the object decoders (scheduler/api/decode.h) on arbitrary JSON text, as the
// API server or a snapshot file could send it. The text goes to DecodeList, and, when it parses
// as JSON, to every object decoder (Pod, Node, PriorityClass, PodDisruptionBudget,
// PersistentVolumeClaim, PersistentVolume, StorageClass, Namespace, CSINode): each must answer with a value
// or an error, never throw. An error message must name the object it is about (kind and name).
// A pod decoded leniently (bound, but not strictly readable) must be bound, name itself in its
// warning, and hold no negative request; a bound pod holds at most kUnreadableQuantity of
// anything (so a node's sums never overflow). A Node read leniently names itself in each
// warning. The text also goes to DecodePodIdentity and to ListContinueToken (the informer's
// read of a list reply's head).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_checks.h"
#include "nlohmann/json.hpp"
#include "scheduler/api/decode.h"
#include "scheduler/kube/list_head.h"

using tessel::fuzz::CheckNamed;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)tessel::DecodeList(text);
  (void)tessel::kube::ListContinueToken(text);
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return 0;
  const std::string described = tessel::DescribeObject(object);
  const absl::StatusOr<tessel::Pod> pod = tessel::DecodePod(object);
  CheckNamed(pod, described);
  if (pod.ok()) {
    for (const std::string& w : pod->decode_warnings) {
      if (w.find("charged as read leniently") == std::string::npos) continue;
      if (pod->node_name.empty() || w.find(described) == std::string::npos) std::abort();
    }
    for (const auto& [name, amount] : pod->requests.Entries()) {
      if (amount < 0) std::abort();
      if (!pod->node_name.empty() && amount > tessel::kUnreadableQuantity) std::abort();
    }
  }
  (void)tessel::DecodePodIdentity(object);
  const tessel::NodeRead node = tessel::ReadNode(object);
  CheckNamed(node.node, described);
  for (const std::string& w : node.warnings) {
    if (w.find(described) == std::string::npos) std::abort();
  }
  if (!node.node.ok()) {
    const tessel::Node fenced = tessel::FenceUnreadableNode(tessel::Node{.meta = {.name = tessel::ObjectName(object)}});
    if (!fenced.unschedulable || !fenced.allocatable.IsZero()) std::abort();
  }
  CheckNamed(tessel::DecodePriorityClass(object), described);
  CheckNamed(tessel::DecodePodDisruptionBudget(object), described);
  CheckNamed(tessel::DecodePersistentVolumeClaim(object), described);
  CheckNamed(tessel::DecodePersistentVolume(object), described);
  CheckNamed(tessel::DecodeStorageClass(object), described);
  CheckNamed(tessel::DecodeNamespace(object), described);
  CheckNamed(tessel::DecodeCSINode(object), described);
  return 0;
}
