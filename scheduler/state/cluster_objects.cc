// ClusterObjectStore: copy-on-write maps per kind behind one immutable view.
#include "scheduler/state/cluster_objects.h"

#include <algorithm>
#include <atomic>

#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "scheduler/api/decode.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace {

template <typename T>
const T* Find(const std::shared_ptr<const ObjectMap<T>>& map, std::string_view key) {
  auto it = map->find(key);
  return it == map->end() ? nullptr : &it->second;
}

std::string ClaimKey(std::string_view namespace_, std::string_view name) {
  return StrCat(namespace_, "/", name);
}

}  // namespace

const CSINode* ClusterObjects::CSINodeOf(std::string_view node) const {
  return Find(csi_nodes_, node);
}

const PersistentVolumeClaim* ClusterObjects::Claim(std::string_view namespace_,
                                                   std::string_view name) const {
  return Find(claims_, ClaimKey(namespace_, name));
}

const PersistentVolume* ClusterObjects::Volume(std::string_view name) const {
  return Find(volumes_, name);
}

const StorageClass* ClusterObjects::Class(std::string_view name) const {
  return Find(classes_, name);
}

const StringMap* ClusterObjects::NamespaceLabels(std::string_view name) const {
  const Namespace* ns = Find(namespaces_, name);
  return ns == nullptr ? nullptr : &ns->meta.labels;
}

absl::StatusOr<std::vector<const PersistentVolumeClaim*>> ClusterObjects::ClaimsOf(
    const Pod& pod) const {
  std::vector<const PersistentVolumeClaim*> out;
  out.reserve(pod.volumes.size());
  for (const PodVolume& volume : pod.volumes) {
    const std::string name = ClaimNameOf(pod, volume);
    const PersistentVolumeClaim* claim = Claim(pod.meta.namespace_, name);
    if (claim == nullptr) {
      return absl::NotFoundError(
          volume.ephemeral
              ? StrCat("waiting for ephemeral volume controller to create the persistentvolumeclaim \"",
                       name, "\"")
              : StrCat("persistentvolumeclaim \"", name, "\" not found"));
    }
    if (claim->meta.deletion_timestamp.has_value()) {
      return absl::FailedPreconditionError(
          StrCat("persistentvolumeclaim \"", name, "\" is being deleted"));
    }
    out.push_back(claim);
  }
  return out;
}

ClusterObjectStore::ClusterObjectStore() {
  auto view = std::make_shared<ClusterObjects>();
  view->claims_ = std::make_shared<ObjectMap<PersistentVolumeClaim>>();
  view->volumes_ = std::make_shared<ObjectMap<PersistentVolume>>();
  view->classes_ = std::make_shared<ObjectMap<StorageClass>>();
  view->namespaces_ = std::make_shared<ObjectMap<Namespace>>();
  view->csi_nodes_ = std::make_shared<ObjectMap<CSINode>>();
  for (auto& raw : view->raw_) raw = std::make_shared<ObjectMap<RawObject>>();
  for (auto& deleted : view->raw_deleted_) deleted = std::make_shared<std::deque<std::pair<std::string, std::string>>>();
  view_ = std::move(view);
}

template <typename T>
void ClusterObjectStore::Update(std::shared_ptr<const ObjectMap<T>> ClusterObjects::*member,
                                std::string_view key, std::optional<T> value,
                                const std::string* only_if_version) {
  UpdateSlot<T>([member](ClusterObjects& v) -> std::shared_ptr<const ObjectMap<T>>& { return v.*member; }, key,
                std::move(value), only_if_version);
}

template <typename T, typename SlotOf>
void ClusterObjectStore::UpdateSlot(SlotOf slot_of, std::string_view key, std::optional<T> value,
                                    const std::string* only_if_version) {
  absl::MutexLock lock(&mu_);
  const ObjectMap<T>& current = *slot_of(*view_);
  auto it = current.find(key);
  if (only_if_version != nullptr &&
      (it == current.end() || it->second.meta.resource_version != *only_if_version)) {
    return;  // replaced by a newer version (or deleted) meanwhile
  }
  if (!value.has_value() && it == current.end()) return;
  // A view or map that only the store holds is changed in place (an informer's initial list:
  // no cycle holds a view, so n objects cost n map insertions, not n copies of the map). One
  // that a cycle holds is copied first, so what that cycle sees never changes. The counts are
  // read under mu_, and other holders get a view only through view() (under mu_), so a count of
  // one cannot rise meanwhile; the fence orders the last holder's reads before our writes.
  if (view_.use_count() > 1) view_ = std::make_shared<ClusterObjects>(*view_);
  std::shared_ptr<const ObjectMap<T>>& slot = slot_of(*view_);
  if (slot.use_count() > 1) slot = std::make_shared<ObjectMap<T>>(*slot);
  std::atomic_thread_fence(std::memory_order_acquire);
  auto& map = const_cast<ObjectMap<T>&>(*slot);  // created non-const by make_shared
  if (value.has_value()) {
    map.insert_or_assign(std::string(key), *std::move(value));
  } else {
    map.erase(map.find(key));
  }
  changed_.SignalAll();
}

void ClusterObjectStore::Put(PersistentVolumeClaim claim) {
  const std::string key = claim.Key();
  Update(&ClusterObjects::claims_, key, std::optional(std::move(claim)));
}

void ClusterObjectStore::Put(PersistentVolume volume) {
  const std::string key = volume.meta.name;
  Update(&ClusterObjects::volumes_, key, std::optional(std::move(volume)));
}

void ClusterObjectStore::Put(StorageClass storage_class) {
  const std::string key = storage_class.meta.name;
  Update(&ClusterObjects::classes_, key, std::optional(std::move(storage_class)));
}

void ClusterObjectStore::Put(Namespace ns) {
  const std::string key = ns.meta.name;
  Update(&ClusterObjects::namespaces_, key, std::optional(std::move(ns)));
}

void ClusterObjectStore::Put(CSINode csi_node) {
  const std::string key = csi_node.meta.name;
  Update(&ClusterObjects::csi_nodes_, key, std::optional(std::move(csi_node)));
}

void ClusterObjectStore::DeleteClaim(std::string_view key) {
  Update(&ClusterObjects::claims_, key, std::optional<PersistentVolumeClaim>());
}

void ClusterObjectStore::DeleteVolume(std::string_view name) {
  Update(&ClusterObjects::volumes_, name, std::optional<PersistentVolume>());
}

void ClusterObjectStore::DeleteClass(std::string_view name) {
  Update(&ClusterObjects::classes_, name, std::optional<StorageClass>());
}

void ClusterObjectStore::DeleteNamespace(std::string_view name) {
  Update(&ClusterObjects::namespaces_, name, std::optional<Namespace>());
}

void ClusterObjectStore::DeleteCSINode(std::string_view name) {
  Update(&ClusterObjects::csi_nodes_, name, std::optional<CSINode>());
}

void ClusterObjectStore::Restore(PersistentVolumeClaim original) {
  const std::string key = original.Key();
  const std::string version = original.meta.resource_version;
  Update(&ClusterObjects::claims_, key, std::optional(std::move(original)), &version);
}

void ClusterObjectStore::Restore(PersistentVolume original) {
  const std::string key = original.meta.name;
  const std::string version = original.meta.resource_version;
  Update(&ClusterObjects::volumes_, key, std::optional(std::move(original)), &version);
}

const RawObject* ClusterObjects::RawOf(RawKind kind, std::string_view key) const {
  return Find(raw_[static_cast<int>(kind)], key);
}

bool ClusterObjects::RecentlyDeleted(RawKind kind, std::string_view key, std::string_view uid) const {
  const auto& deleted = *raw_deleted_[static_cast<int>(kind)];
  return std::any_of(deleted.begin(), deleted.end(), [&](const auto& d) { return d.first == key && d.second == uid; });
}

namespace {
std::string_view RawKindName(RawKind kind) {
  switch (kind) {
    case RawKind::kResourceSlice: return "ResourceSlice";
    case RawKind::kDeviceClass: return "DeviceClass";
    case RawKind::kResourceClaim: return "ResourceClaim";
  }
  return "object";
}
}  // namespace

absl::Status ClusterObjectStore::PutRaw(RawKind kind, const nlohmann::json& object) {
  FieldDecoder d(std::string(RawKindName(kind)));
  ObjectMeta meta = d.Meta(object);
  if (!d.ok()) return d.status();  // names the kind and the field (metadata.name missing)
  std::string key = meta.namespace_.empty() ? meta.name : StrCat(meta.namespace_, "/", meta.name);
  // List items carry no kind; the decoders name the object by it ("ResourceSlice node-1-gpus").
  auto stored = std::make_shared<nlohmann::json>(object);
  if (!stored->contains("kind")) (*stored)["kind"] = RawKindName(kind);
  UpdateRaw(kind, key, RawObject{.meta = std::move(meta), .json = std::move(stored)});
  return absl::OkStatus();
}

void ClusterObjectStore::DeleteRaw(RawKind kind, std::string_view key) {
  {
    absl::MutexLock lock(&mu_);
    const RawObject* gone = view_->RawOf(kind, key);
    if (gone != nullptr && !gone->meta.uid.empty()) {
      // Copied, never changed in place: a cycle may hold the view (as UpdateSlot does).
      if (view_.use_count() > 1) view_ = std::make_shared<ClusterObjects>(*view_);
      auto& slot = view_->raw_deleted_[static_cast<int>(kind)];
      auto deleted = std::make_shared<std::deque<std::pair<std::string, std::string>>>(*slot);
      deleted->emplace_back(std::string(key), gone->meta.uid);
      if (deleted->size() > ClusterObjects::kRememberedDeletes) deleted->pop_front();
      slot = std::move(deleted);
    }
  }
  UpdateRaw(kind, key, std::nullopt);
}

void ClusterObjectStore::UpdateRaw(RawKind kind, std::string_view key, std::optional<RawObject> value) {
  const int k = static_cast<int>(kind);
  UpdateSlot<RawObject>([k](ClusterObjects& v) -> std::shared_ptr<const ObjectMap<RawObject>>& { return v.raw_[k]; },
                        key, std::move(value), nullptr);
}

std::shared_ptr<const ClusterObjects> ClusterObjectStore::view() const {
  absl::MutexLock lock(&mu_);
  return view_;
}

bool ClusterObjectStore::WaitFor(const std::function<bool(const ClusterObjects&)>& ready,
                                 absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  absl::MutexLock lock(&mu_);
  while (!ready(*view_)) {
    if (changed_.WaitWithDeadline(&mu_, deadline) && absl::Now() >= deadline) return ready(*view_);
  }
  return true;
}

}  // namespace tessel
