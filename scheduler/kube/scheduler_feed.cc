// Informer handlers that feed the Scheduler.
#include "scheduler/kube/scheduler_feed.h"

#include <functional>
#include <map>

#include "absl/time/clock.h"
#include "scheduler/api/decode.h"
#include "scheduler/gang/gang_api.h"
#include "scheduler/kinds/object_kinds.h"
#include "spdlog/spdlog.h"

namespace tessel::kube {

using nlohmann::json;

namespace {

void WarnUndecodable(const absl::Status& st) {
  spdlog::warn("skipping an object that does not decode: {}", st.message());
}

class PodHandler final : public InformerHandler {
 public:
  PodHandler(Scheduler* s, std::function<void(const std::string&)> bound,
             std::function<void(const std::string&)> gone)
      : s_(s), bound_(std::move(bound)), gone_(std::move(gone)) {}
  void OnAdd(const json& object) override { Observe(object); }
  void OnUpdate(const json& object) override { Observe(object); }
  void OnDelete(const std::string& key, const json* last) override {
    // The UID of the deleted object: a late delete of an old pod must not end a new pod that
    // took its name.
    std::string uid;
    if (last != nullptr) {
      if (auto m = last->find("metadata"); m != last->end() && m->is_object()) {
        if (auto u = m->find("uid"); u != m->end() && u->is_string()) uid = u->get<std::string>();
      }
    }
    s_->OnPodDelete(key, uid);
    if (gone_) gone_(key);
  }

 private:
  // Add and update are one: the core tells them apart by what it holds. A bound pod always
  // decodes (leniently if need be: DecodePod); one that fails is pending and is reported.
  void Observe(const json& object) {
    absl::StatusOr<Pod> pod = DecodePod(object);
    if (!pod.ok()) {
      WarnUndecodable(pod.status());
      s_->OnPodUndecodable(DecodePodIdentity(object), pod.status());
      return;
    }
    for (const std::string& w : pod->decode_warnings) spdlog::warn("{}", w);
    if (!pod->node_name.empty() && bound_) bound_(pod->Key());
    s_->OnPodUpdate(*std::move(pod));
  }

  Scheduler* s_;
  std::function<void(const std::string&)> bound_;
  std::function<void(const std::string&)> gone_;
};

class NodeHandler final : public InformerHandler {
 public:
  explicit NodeHandler(Scheduler* s) : s_(s) {}
  void OnAdd(const json& object) override { Observe(object, /*added=*/true); }
  void OnUpdate(const json& object) override { Observe(object, /*added=*/false); }
  void OnDelete(const std::string& key, const json*) override { s_->OnNodeDelete(key); }

 private:
  // A node that does not read is fenced, never kept as it last read (a cordon or a shrink that
  // came with the bad field would be missed).
  void Observe(const json& object, bool added) {
    NodeRead node = ReadNode(object);
    for (const std::string& w : node.warnings) spdlog::warn("{}", w);
    if (!node.node.ok()) {
      spdlog::warn("{}; the node takes no new pods until it reads", node.node.status().message());
      return s_->OnNodeUndecodable(ObjectName(object), node.node.status());
    }
    if (added) return s_->OnNodeAdd(*std::move(node.node));
    s_->OnNodeUpdate(*std::move(node.node));
  }

  Scheduler* s_;
};

class PriorityClassHandler final : public InformerHandler {
 public:
  explicit PriorityClassHandler(Scheduler* s) : s_(s) {}
  void OnAdd(const json& object) override { OnUpdate(object); }
  void OnUpdate(const json& object) override {
    absl::StatusOr<PriorityClass> pc = DecodePriorityClass(object);
    if (!pc.ok()) return WarnUndecodable(pc.status());
    s_->OnPriorityClass(*std::move(pc));
    s_->OnCustomObjectChange();
  }
  void OnDelete(const std::string& key, const json*) override { s_->OnPriorityClassDelete(key); }

 private:
  Scheduler* s_;
};

class DisruptionBudgetHandler final : public InformerHandler {
 public:
  explicit DisruptionBudgetHandler(Scheduler* s) : s_(s) {}
  void OnAdd(const json& object) override { OnUpdate(object); }
  void OnUpdate(const json& object) override {
    absl::StatusOr<PodDisruptionBudget> pdb = DecodePodDisruptionBudget(object);
    if (!pdb.ok()) return WarnUndecodable(pdb.status());
    s_->OnPodDisruptionBudget(*std::move(pdb));
  }
  void OnDelete(const std::string& key, const json*) override { s_->OnPodDisruptionBudgetDelete(key); }

 private:
  Scheduler* s_;
};

// PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes and Namespaces: into the
// scheduler's cluster-object store (volume plugins, pod affinity's namespaceSelector). List
// items carry no kind, so the handler names it for the decoder's messages.
template <typename T, absl::StatusOr<T> (*Decode)(const json&)>
class ClusterObjectHandler final : public InformerHandler {
 public:
  ClusterObjectHandler(Scheduler* s, std::string kind) : s_(s), kind_(std::move(kind)) {}
  void OnAdd(const json& object) override { OnUpdate(object); }
  void OnUpdate(const json& object) override {
    absl::StatusOr<T> decoded = Decode(object);
    if (!decoded.ok()) {
      json typed = object;
      typed["kind"] = kind_;
      return WarnUndecodable(Decode(typed).status());
    }
    s_->OnClusterObject(*std::move(decoded));
  }
  void OnDelete(const std::string& key, const json*) override { s_->OnClusterObjectDelete<T>(key); }

 private:
  Scheduler* s_;
  std::string kind_;
};

// ResourceSlices, DeviceClasses and ResourceClaims (resource.k8s.io/v1): kept as JSON in the
// cluster-object store; the DynamicResources plugin decodes them (a malformed one fails the pods
// that need it there, naming the object and field).
class RawObjectHandler final : public InformerHandler {
 public:
  RawObjectHandler(Scheduler* s, RawKind kind) : s_(s), kind_(kind) {}
  void OnAdd(const json& object) override { OnUpdate(object); }
  void OnUpdate(const json& object) override {
    if (absl::Status st = s_->OnRawObject(kind_, object); !st.ok()) WarnUndecodable(st);
  }
  void OnDelete(const std::string& key, const json*) override { s_->OnRawObjectDelete(kind_, key); }

 private:
  Scheduler* s_;
  RawKind kind_;
};

// The kinds of the table in scheduler/kinds/object_kinds.h: gang objects (PodGroups, Workloads,
// scheduling.k8s.io PodGroups, Jobs) and team Queues. List items of built-in kinds carry no
// apiVersion/kind, so the handler knows what it watches. An object that does not decode is
// logged naming it and the field, and only that object is left out.
//
// With `status_read` (what the kind's decoding reads of its status; none for the quota kinds,
// Queues, Cohorts and ResourceFlavors, whose status the scheduler itself writes every interval
// per busy queue, the scheduler-plugins PodGroup, whose status is the scheduler's report, and
// Jobs, whose status the Job controller rewrites at every pod's start and end; part of it for
// the scheduling.k8s.io PodGroup, whose condition message Tessel writes), an update that changes
// nothing but the unread status and the object's bookkeeping is not delivered: a delivery wakes
// every pod parked for quota or for its gang, and a quota object's rebuilds the quota directory
// (every cached verdict that reads quota goes stale). Without it every update is delivered.
using StatusRead = json (*)(const json& status);
json NothingOfStatus(const json&) { return nullptr; }

class ReadKindHandler final : public InformerHandler {
 public:
  ReadKindHandler(Scheduler* s, std::string api_version, std::string kind,
                  std::function<void(const json&)> on_object = nullptr, StatusRead status_read = nullptr)
      : s_(s),
        api_version_(std::move(api_version)),
        kind_(std::move(kind)),
        on_object_(std::move(on_object)),
        status_read_(status_read) {}
  void OnAdd(const json& object) override { OnUpdate(object); }
  void OnUpdate(const json& object) override {
    if (on_object_) on_object_(object);
    if (status_read_ != nullptr && !ReadChanged(object)) return;
    json typed = object;
    typed["apiVersion"] = api_version_;
    typed["kind"] = kind_;
    // The error names the object and the field (or the queues that list one namespace).
    absl::StatusOr<bool> delivered = DeliverObject(*s_, typed);
    if (!delivered.ok()) spdlog::warn("{}", delivered.status().message());
  }
  void OnDelete(const std::string& key, const json*) override {
    delivered_.erase(key);
    DeliverDelete(*s_, api_version_, kind_, key);
  }

 private:
  // Whether the object differs from the last one delivered under its key in more than its
  // unread status, resourceVersion and managedFields (the informer calls one handler from one
  // thread).
  bool ReadChanged(const json& object) {
    json kept = object;
    if (kept.is_object()) {
      if (auto status = kept.find("status"); status != kept.end()) *status = status_read_(*status);
      if (auto meta = kept.find("metadata"); meta != kept.end() && meta->is_object()) {
        meta->erase("resourceVersion");
        meta->erase("managedFields");
      }
    }
    // A hash, not the text: a Job carries its whole pod template.
    const size_t hash = std::hash<std::string>{}(kept.dump());
    auto [it, added] = delivered_.try_emplace(ObjectKey(object), hash);
    if (!added && it->second == hash) return false;
    it->second = hash;
    return true;
  }

  Scheduler* s_;
  std::string api_version_;
  std::string kind_;
  std::function<void(const json&)> on_object_;
  const StatusRead status_read_;
  std::map<std::string, size_t, std::less<>> delivered_;  // key -> the hash of what was delivered (ReadChanged)
};

// Other optional collections: any change may unpark pods.
class CustomObjectHandler final : public InformerHandler {
 public:
  explicit CustomObjectHandler(Scheduler* s) : s_(s) {}
  void OnAdd(const json&) override { s_->OnCustomObjectChange(); }
  void OnUpdate(const json&) override { s_->OnCustomObjectChange(); }
  void OnDelete(const std::string&, const json*) override { s_->OnCustomObjectChange(); }

 private:
  Scheduler* s_;
};

void EraseKeys(json& object, std::initializer_list<const char*> keys) {
  if (!object.is_object()) return;
  for (const char* k : keys) object.erase(k);
}

json* Field(json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// spec.volumes keeps only what volume scheduling reads: the name and claim of the
// persistentVolumeClaim volumes, and that a volume is ephemeral (its claim is <pod>-<volume>).
void PruneVolumes(json& spec) {
  json* volumes = Field(spec, "volumes");
  if (volumes == nullptr) return;
  json kept = json::array();
  if (volumes->is_array()) {
    for (json& v : *volumes) {
      if (!v.is_object()) continue;
      if (json* claim = Field(v, "persistentVolumeClaim")) {
        json reduced = {{"name", v.value("name", json())}};
        if (claim->is_object() && claim->contains("claimName")) {
          reduced["persistentVolumeClaim"] = {{"claimName", (*claim)["claimName"]}};
        } else {
          reduced["persistentVolumeClaim"] = *claim;  // malformed: the decoder names it
        }
        kept.push_back(std::move(reduced));
      } else if (v.contains("ephemeral")) {
        kept.push_back({{"name", v.value("name", json())}, {"ephemeral", json::object()}});
      }
    }
  }
  if (kept.empty()) {
    spec.erase("volumes");
  } else {
    *volumes = std::move(kept);
  }
}

}  // namespace

void PrunePod(json& pod) {
  if (json* meta = Field(pod, "metadata")) {
    if (json* a = Field(*meta, "annotations"); a != nullptr && a->is_object()) {
      a->erase("kubectl.kubernetes.io/last-applied-configuration");  // a copy of the whole spec
    }
  }
  if (json* spec = Field(pod, "spec")) {
    EraseKeys(*spec, {"dnsConfig", "readinessGates", "securityContext", "hostAliases"});
    PruneVolumes(*spec);
    for (const char* list : {"containers", "initContainers", "ephemeralContainers"}) {
      json* containers = Field(*spec, list);
      if (containers == nullptr || !containers->is_array()) continue;
      for (json& c : *containers) {
        EraseKeys(c, {"env", "envFrom", "command", "args", "volumeMounts", "volumeDevices",
                      "livenessProbe", "readinessProbe", "startupProbe", "lifecycle",
                      "securityContext", "workingDir", "terminationMessagePath",
                      "terminationMessagePolicy", "imagePullPolicy"});
      }
    }
  }
  if (json* status = Field(pod, "status")) {
    EraseKeys(*status, {"containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses",
                        "podIPs", "podIP", "hostIP", "message"});
  }
}

void PruneNode(json& node) {
  if (json* meta = Field(node, "metadata")) {
    if (json* a = Field(*meta, "annotations"); a != nullptr && a->is_object()) {
      a->erase("kubectl.kubernetes.io/last-applied-configuration");
    }
  }
  if (json* status = Field(node, "status")) {
    EraseKeys(*status, {"images", "volumesInUse", "volumesAttached", "daemonEndpoints",
                        "nodeInfo", "addresses", "config"});
  }
}

SchedulerFeed::SchedulerFeed(KubeClient* client, Scheduler* scheduler, FeedOptions options) {
  auto add = [&](ResourceSpec spec, std::unique_ptr<InformerHandler> handler) {
    informers_.push_back(
        std::make_unique<Informer>(client, std::move(spec), handler.get(), options.informer));
    handlers_.push_back(std::move(handler));
  };
  // Priority classes and nodes first, so that pods find them when the informers start together.
  add({.name = "priorityclasses", .path = "/apis/scheduling.k8s.io/v1/priorityclasses"},
      std::make_unique<PriorityClassHandler>(scheduler));
  add({.name = "nodes", .path = "/api/v1/nodes", .prune = PruneNode},
      std::make_unique<NodeHandler>(scheduler));
  // Finished pods hold nothing and are never scheduled: as kube-scheduler, neither listed nor
  // watched (a pod that finishes leaves the watch as a delete).
  add({.name = "pods",
       .path = "/api/v1/pods",
       .field_selector = std::string(kActivePodsSelector),
       .prune = PrunePod},
      std::make_unique<PodHandler>(scheduler, options.on_pod_bound, options.on_pod_gone));
  // Gangs: the scheduler-plugins PodGroup, and the upstream APIs where the server has them (an
  // optional informer finds out, and looks again every absent_recheck).
  add({.name = "podgroups",
       .path = "/apis/scheduling.x-k8s.io/v1alpha1/podgroups",
       .optional = true},
      std::make_unique<ReadKindHandler>(scheduler, "scheduling.x-k8s.io/v1alpha1", "PodGroup", nullptr,
                                        NothingOfStatus));  // its status is Tessel's report
  // The upstream ones only in the versions the server serves (options.gang_apis, discovered):
  // a PodGroup served in two versions is read once, in the newest.
  if (options.gang_apis.workload_v1alpha1) {
    add({.name = "workloads", .path = StrCat("/apis/", gang::kWorkloadApiVersion, "/workloads"), .optional = true},
        std::make_unique<ReadKindHandler>(scheduler, std::string(gang::kWorkloadApiVersion), "Workload"));
  }
  if (!options.gang_apis.pod_group.empty()) {
    add({.name = "podgroups.scheduling.k8s.io",
         .path = StrCat("/apis/", options.gang_apis.pod_group, "/podgroups"),
         .optional = true},
        std::make_unique<ReadKindHandler>(scheduler, options.gang_apis.pod_group, "PodGroup", nullptr,
                                          gang::SchedulingPodGroupStatusRead));
  }
  add({.name = "jobs", .path = "/apis/batch/v1/jobs"},
      std::make_unique<ReadKindHandler>(scheduler, "batch/v1", "Job", nullptr, NothingOfStatus));
  // Budgets that preemption must respect: which version the server serves was discovered.
  add({.name = "poddisruptionbudgets",
       .path = StrCat("/apis/", options.pdb_api, "/poddisruptionbudgets")},
      std::make_unique<DisruptionBudgetHandler>(scheduler));
  add({.name = "queues", .path = "/apis/tessel.io/v1alpha1/queues", .optional = true},
      std::make_unique<ReadKindHandler>(scheduler, std::string(kQueueApiVersion), std::string(kQueueKind),
                                        options.on_queue_object, NothingOfStatus));
  add({.name = "resourceflavors", .path = "/apis/tessel.io/v1alpha1/resourceflavors", .optional = true},
      std::make_unique<ReadKindHandler>(scheduler, std::string(kQueueApiVersion), std::string(kResourceFlavorKind),
                                        nullptr, NothingOfStatus));
  add({.name = "cohorts", .path = "/apis/tessel.io/v1alpha1/cohorts", .optional = true},
      std::make_unique<ReadKindHandler>(scheduler, std::string(kQueueApiVersion), std::string(kCohortKind),
                                        nullptr, NothingOfStatus));
  // Volume scheduling (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits) and
  // namespaceSelector.
  add({.name = "persistentvolumeclaims", .path = "/api/v1/persistentvolumeclaims"},
      std::make_unique<ClusterObjectHandler<PersistentVolumeClaim, DecodePersistentVolumeClaim>>(
          scheduler, "PersistentVolumeClaim"));
  add({.name = "persistentvolumes", .path = "/api/v1/persistentvolumes"},
      std::make_unique<ClusterObjectHandler<PersistentVolume, DecodePersistentVolume>>(
          scheduler, "PersistentVolume"));
  add({.name = "storageclasses", .path = "/apis/storage.k8s.io/v1/storageclasses"},
      std::make_unique<ClusterObjectHandler<StorageClass, DecodeStorageClass>>(scheduler,
                                                                             "StorageClass"));
  add({.name = "csinodes", .path = "/apis/storage.k8s.io/v1/csinodes", .optional = true},
      std::make_unique<ClusterObjectHandler<CSINode, DecodeCSINode>>(scheduler, "CSINode"));
  add({.name = "namespaces", .path = "/api/v1/namespaces"},
      std::make_unique<ClusterObjectHandler<Namespace, DecodeNamespace>>(scheduler, "Namespace"));
  // Dynamic Resource Allocation (GA in 1.34): optional, so a server that does not serve
  // resource.k8s.io/v1 is found out (and looked at again); pods with claims then wait, told
  // that their claim is not found.
  add({.name = "resourceslices", .path = "/apis/resource.k8s.io/v1/resourceslices", .optional = true},
      std::make_unique<RawObjectHandler>(scheduler, RawKind::kResourceSlice));
  add({.name = "deviceclasses", .path = "/apis/resource.k8s.io/v1/deviceclasses", .optional = true},
      std::make_unique<RawObjectHandler>(scheduler, RawKind::kDeviceClass));
  add({.name = "resourceclaims", .path = "/apis/resource.k8s.io/v1/resourceclaims", .optional = true},
      std::make_unique<RawObjectHandler>(scheduler, RawKind::kResourceClaim));
  for (ResourceSpec& spec : options.extra_custom) {
    spec.optional = true;
    add(std::move(spec), std::make_unique<CustomObjectHandler>(scheduler));
  }
}

SchedulerFeed::~SchedulerFeed() { Stop(); }

void SchedulerFeed::Start() {
  for (auto& i : informers_) i->Start();
}

void SchedulerFeed::Stop() {
  for (auto& i : informers_) i->RequestStop();  // all at once: each may take a second to notice
  for (auto& i : informers_) i->Stop();
}

bool SchedulerFeed::HasSynced() const {
  for (const auto& i : informers_) {
    if (!i->HasSynced()) return false;
  }
  return true;
}

bool SchedulerFeed::WaitForSync(absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  while (!HasSynced()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return true;
}

}  // namespace tessel::kube
