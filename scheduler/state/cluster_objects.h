// The cluster objects besides nodes and pods that plugins read: PersistentVolumeClaims,
// PersistentVolumes, StorageClasses, CSINodes (volume scheduling) and Namespaces (pod affinity's
// namespaceSelector). Informers (live) or a snapshot (replay) put them into a
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

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/api/storage.h"

namespace tessel {

template <typename T>
using ObjectMap = std::map<std::string, T, std::less<>>;

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

 private:
  friend class ClusterObjectStore;
  std::shared_ptr<const ObjectMap<PersistentVolumeClaim>> claims_;  // by namespace/name
  std::shared_ptr<const ObjectMap<PersistentVolume>> volumes_;
  std::shared_ptr<const ObjectMap<StorageClass>> classes_;
  std::shared_ptr<const ObjectMap<Namespace>> namespaces_;
  std::shared_ptr<const ObjectMap<CSINode>> csi_nodes_;
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

  mutable absl::Mutex mu_;
  mutable absl::CondVar changed_;
  std::shared_ptr<ClusterObjects> view_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel
