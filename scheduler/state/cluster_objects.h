// The cluster objects besides nodes and pods that plugins read: PersistentVolumeClaims,
// PersistentVolumes, StorageClasses, CSINodes (volume scheduling), Namespaces (pod affinity's
// namespaceSelector), and the Dynamic Resource Allocation objects (ResourceSlices, DeviceClasses,
// ResourceClaims) as raw JSON: tessel_core does not decode them; the DynamicResources plugin,
// which stands on tessel_dra, does. Informers (live) or a snapshot (replay) put them into a
// ClusterObjectStore; a scheduling cycle reads an immutable ClusterObjects view of it, held by
// shared pointer for the whole cycle, so an informer update never changes what a cycle sees.
//
//   ClusterObjectStore store;
//   store.Put(pvc);                                       // informer thread
//   std::shared_ptr<const ClusterObjects> view = store.view();   // scheduling thread
//   const PersistentVolumeClaim* c = view->Claim("team-a", "data");
//
// VolumeBinding's Reserve "assumes" the API writes it is about to make (a PV's claimRef, a
// claim's selected-node annotation) with Assume, so the next cycle does not hand the same
// volume to another claim; Unreserve restores the object with Restore unless the informer
// delivered a newer one meanwhile. Each kind is copied on write separately, and only while a
// view that holds it is in use: a claim update copies at most the claims map.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json_fwd.hpp"
#include "scheduler/api/storage.h"

namespace tessel {

template <typename T>
using ObjectMap = std::map<std::string, T, std::less<>>;

// The kinds kept as JSON, each under its key (namespace/name, or the name of a cluster-scoped
// one).
enum class RawKind { kResourceSlice, kDeviceClass, kResourceClaim };
inline constexpr int kRawKinds = 3;

// An object of a RawKind as the informer delivered it. `meta` holds what the store needs
// (name, namespace, resourceVersion); `json` is never null.
struct RawObject {
  ObjectMeta meta;
  std::shared_ptr<const nlohmann::json> json;
};

class ClusterObjects {
 public:
  const PersistentVolumeClaim* Claim(std::string_view namespace_, std::string_view name) const;
  const PersistentVolume* Volume(std::string_view name) const;
  const StorageClass* Class(std::string_view name) const;
  // Labels of the Namespace, or null when the scheduler has no Namespace of that name.
  const StringMap* NamespaceLabels(std::string_view name) const;
  // The CSINode of a node (same name), or null.
  const CSINode* CSINodeOf(std::string_view node) const;
  // The claims the pod's volumes use, in volume order; or why not, in kube-scheduler's words:
  // 'persistentvolumeclaim "x" not found', '... is being deleted', or for an ephemeral volume
  // 'waiting for ephemeral volume controller to create the persistentvolumeclaim "x"'.
  absl::StatusOr<std::vector<const PersistentVolumeClaim*>> ClaimsOf(const Pod& pod) const;
  // Every PV, by name (static binding scans them).
  const ObjectMap<PersistentVolume>& volumes() const { return *volumes_; }
  // Every object of a raw kind, by key; and one of them, or null.
  const ObjectMap<RawObject>& Raw(RawKind kind) const { return *raw_[static_cast<int>(kind)]; }
  const RawObject* RawOf(RawKind kind, std::string_view key) const;
  // Whether the informer deleted the object of that key and UID, among the last
  // kRememberedDeletes deletions of its kind: an object made and deleted between two looks of a
  // plugin (a ResourceClaim whose pod ran and ended at once) is known gone, not still coming.
  bool RecentlyDeleted(RawKind kind, std::string_view key, std::string_view uid) const;
  static constexpr size_t kRememberedDeletes = 256;

 private:
  friend class ClusterObjectStore;
  std::shared_ptr<const ObjectMap<PersistentVolumeClaim>> claims_;  // by namespace/name
  std::shared_ptr<const ObjectMap<PersistentVolume>> volumes_;
  std::shared_ptr<const ObjectMap<StorageClass>> classes_;
  std::shared_ptr<const ObjectMap<Namespace>> namespaces_;
  std::shared_ptr<const ObjectMap<CSINode>> csi_nodes_;
  std::shared_ptr<const ObjectMap<RawObject>> raw_[kRawKinds];
  // The last deletions of each raw kind, oldest first: (key, UID).
  std::shared_ptr<const std::deque<std::pair<std::string, std::string>>> raw_deleted_[kRawKinds];
};

class ClusterObjectStore {
 public:
  ClusterObjectStore();

  void Put(PersistentVolumeClaim claim);
  void Put(PersistentVolume volume);
  void Put(StorageClass storage_class);
  void Put(Namespace ns);
  void Put(CSINode csi_node);
  void DeleteClaim(std::string_view key);  // namespace/name
  void DeleteVolume(std::string_view name);
  void DeleteClass(std::string_view name);
  void DeleteNamespace(std::string_view name);
  void DeleteCSINode(std::string_view name);
  // A raw object (its key is metadata.namespace/name, or metadata.name without a namespace);
  // an error naming the kind when the JSON has no metadata.name.
  absl::Status PutRaw(RawKind kind, const nlohmann::json& object);
  void DeleteRaw(RawKind kind, std::string_view key);

  // An API write about to be made, seen by the next cycles at once (same object, changed).
  void Assume(PersistentVolumeClaim claim) { Put(std::move(claim)); }
  void Assume(PersistentVolume volume) { Put(std::move(volume)); }
  // Puts `original` back if the object is still at the resourceVersion of `original` (no newer
  // informer update replaced the assumed copy).
  void Restore(PersistentVolumeClaim original);
  void Restore(PersistentVolume original);

  std::shared_ptr<const ClusterObjects> view() const;

  // Blocks (a binding thread, never the scheduling thread) until `ready` holds for the view, or
  // `timeout` of real time passed; returns whether it held. Every update wakes the waiters.
  bool WaitFor(const std::function<bool(const ClusterObjects&)>& ready, absl::Duration timeout) const;

 private:
  template <typename T>
  void Update(std::shared_ptr<const ObjectMap<T>> ClusterObjects::*member, std::string_view key,
              std::optional<T> value, const std::string* only_if_version = nullptr);
  void UpdateRaw(RawKind kind, std::string_view key, std::optional<RawObject> value);
  // The one copy-on-write update: `slot_of(view)` is the map it changes.
  template <typename T, typename SlotOf>
  void UpdateSlot(SlotOf slot_of, std::string_view key, std::optional<T> value, const std::string* only_if_version);

  mutable absl::Mutex mu_;
  mutable absl::CondVar changed_;
  std::shared_ptr<ClusterObjects> view_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel
