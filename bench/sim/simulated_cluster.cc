// The simulated cluster: binds land at once and are confirmed to the scheduler the way an
// informer would confirm them.
#include "bench/sim/simulated_cluster.h"

#include "scheduler/api/device_list.h"
#include "scheduler/kinds/object_kinds.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {

std::vector<std::string> SimulatedCluster::LoadObjects(const ObjectList& objects,
                                                      std::vector<Pod>* movable_pods) {
  std::vector<std::string> warnings;
  for (const PriorityClass& pc : objects.priority_classes) scheduler_->OnPriorityClass(pc);
  for (const PodDisruptionBudget& pdb : objects.disruption_budgets) {
    pdbs_[StrCat(pdb.meta.namespace_, "/", pdb.meta.name)] = pdb;
    scheduler_->OnPodDisruptionBudget(pdb);
  }
  for (const Node& node : objects.nodes) scheduler_->OnNodeAdd(node);
  for (const Namespace& ns : objects.namespaces) scheduler_->OnClusterObject(ns);
  for (const StorageClass& sc : objects.storage_classes) scheduler_->OnClusterObject(sc);
  for (const PersistentVolume& pv : objects.volumes) scheduler_->OnClusterObject(pv);
  for (const PersistentVolumeClaim& pvc : objects.claims) scheduler_->OnClusterObject(pvc);
  for (const CSINode& csi_node : objects.csi_nodes) scheduler_->OnClusterObject(csi_node);
  for (const nlohmann::json& other : objects.others) {
    if (std::optional<std::vector<std::string>> dra = LoadDraObject(other)) {
      for (std::string& w : *dra) warnings.push_back(std::move(w));
      continue;
    }
    // A snapshot with Jobs holds every Job: a pod whose Job is missing waits for it, as live.
    if (other.is_object() && other.value("kind", "") == "Job") scheduler_->OnJobsWatched();
    // A bad object is named and left out; the others stay in force.
    absl::StatusOr<bool> read = DeliverObject(*scheduler_, other);
    if (!read.ok()) {
      warnings.push_back(std::string(read.status().message()));
    } else if (!*read) {
      warnings.push_back(StrCat(DescribeObject(other), ": kind not used by replay; skipped"));
    }
  }
  const std::vector<std::string> profiles = scheduler_->ProfileNames();
  for (size_t i = 0; i < objects.pods.size(); ++i) {
    const Pod& pod = objects.pods[i];
    // A bound pod is the scheduler's cache's to hold; here only where it runs is kept.
    if (pod.node_name.empty()) {
      bound_.erase(pod.Key());
      unbound_[pod.Key()] = std::make_shared<const Pod>(pod);
    } else {
      unbound_.erase(pod.Key());
      bound_[pod.Key()] = BoundPod{.node = pod.node_name, .uid = pod.meta.uid};
    }
    const bool ours = std::find(profiles.begin(), profiles.end(), pod.scheduler_name) != profiles.end();
    if (ours && pod.node_name.empty() && !pod.IsTerminal()) placements_[pod.Key()] = "";
    if (movable_pods != nullptr) {
      scheduler_->OnPodAdd(std::move((*movable_pods)[i]));
    } else {
      scheduler_->OnPodAdd(pod);
    }
  }
  if (movable_pods != nullptr) movable_pods->clear();
  return warnings;
}

void SimulatedCluster::RunUntilIdle(int64_t max_cycles) {
  if (max_cycles <= 0) max_cycles = 50 * static_cast<int64_t>(placements_.size()) + 100;
  if (cycles_ >= max_cycles) return;
  const std::atomic<bool> never{false};
  cycles_ += scheduler_->Run(
      never, {.on_idle =
                  [&] {
                    // Nothing ready: let virtual time pass to the next backoff expiry or
                    // permit timeout, if any.
                    std::optional<absl::Time> next = scheduler_->NextWakeup();
                    if (!next.has_value()) return false;
                    clock_->Set(std::max(*next, clock_->Now()));
                    return true;
                  },
              .max_cycles = max_cycles - cycles_});
}

absl::Status SimulatedCluster::Bind(const Pod& pod, const std::string& node,
                                    const StringMap& annotations) {
  if (auto it = bound_.find(pod.Key()); it != bound_.end()) {
    return absl::AlreadyExistsError(StrCat("pod ", pod.Key(), " is already bound to ", it->second.node));
  }
  Pod bound = pod;
  auto it = unbound_.find(pod.Key());
  if (it != unbound_.end()) bound = *it->second;
  bound.node_name = node;
  bound.phase = PodPhase::kRunning;
  bound.start_time = clock_->Now();  // status.startTime, as the kubelet reports it once it runs
  for (const auto& [k, v] : annotations) {
    annotations_[pod.Key()][k] = v;
    bound.meta.annotations[k] = v;  // as the API server copies a Binding's annotations
  }
  ReadGpuDevicesAnnotation(bound);  // as the informer's decoder reads the pod back
  bound_[pod.Key()] = BoundPod{.node = node, .uid = bound.meta.uid};
  unbound_.erase(pod.Key());
  scheduler_->OnPodUpdate(std::move(bound));  // what the informer would deliver
  return absl::OkStatus();
}

absl::Status SimulatedCluster::Evict(const Pod& pod, std::string_view) {
  if (!unbound_.contains(pod.Key()) && !bound_.contains(pod.Key())) return absl::NotFoundError(StrCat("pod ", pod.Key(), " is gone"));
  // The Eviction API's rule: every budget that covers the pod must allow one more disruption.
  std::vector<PodDisruptionBudget*> covering;
  for (auto& [key, pdb] : pdbs_) {
    if (!pdb.Covers(pod)) continue;
    if (pdb.disruptions_allowed <= 0) {
      ++evictions_refused_;
      return absl::ResourceExhaustedError(
          StrCat("Cannot evict pod ", pod.Key(), " as it would violate the pod's disruption budget ",
                 key));
    }
    covering.push_back(&pdb);
  }
  for (PodDisruptionBudget* pdb : covering) {
    --pdb->disruptions_allowed;
    scheduler_->OnPodDisruptionBudget(*pdb);
  }
  evicted_.push_back(pod.Key());
  if (auto it = placements_.find(pod.Key()); it != placements_.end()) it->second.clear();
  EndPod(pod.Key());
  return absl::OkStatus();
}

void SimulatedCluster::EndPod(std::string_view pod_key) {
  const std::string key(pod_key);  // the caller's view may be into a map entry erased here
  std::string uid;
  if (auto it = unbound_.find(key); it != unbound_.end()) {
    uid = it->second->meta.uid;
    unbound_.erase(it);
  } else if (auto b = bound_.find(key); b != bound_.end()) {
    uid = b->second.uid;
    bound_.erase(b);
  }
  // Pods a driver (the trace simulator) hands to the scheduler directly are not in the maps
  // until bound: their claims are matched by name alone.
  const std::string_view view = key;
  const size_t slash = view.find('/');
  if (slash != std::string_view::npos) ReleaseClaims(view.substr(0, slash), view.substr(slash + 1), uid);
  scheduler_->OnPodDelete(key);
}

void SimulatedCluster::RecordEvent(const Pod& pod, std::string_view, std::string_view reason,
                                   std::string_view message) {
  // A victim's "Preempted" event is what the replay reports for it (it was placed, then evicted).
  if (reason == "Preempted") last_failure_[pod.Key()] = StrCat("evicted: ", message);
}

absl::Status SimulatedCluster::AnnotateClaim(const PersistentVolumeClaim& claim, std::string_view key,
                                             std::string_view value) {
  std::shared_ptr<const ClusterObjects> objects = scheduler_->Objects();
  const PersistentVolumeClaim* current = objects->Claim(claim.meta.namespace_, claim.meta.name);
  if (current == nullptr) {
    return absl::NotFoundError(StrCat("persistentvolumeclaims \"", claim.meta.name, "\" not found"));
  }
  PersistentVolumeClaim updated = *current;
  updated.meta.annotations[std::string(key)] = std::string(value);
  if (key != kSelectedNodeAnnotation || updated.bound()) {
    scheduler_->OnClusterObject(std::move(updated));
    return absl::OkStatus();
  }
  // The provisioner: a volume where the node is, then the PV controller binds the claim to it.
  PersistentVolume volume;
  volume.meta.name = StrCat("pvc-", claim.meta.namespace_, "-", claim.meta.name);
  volume.access_modes = claim.access_modes;
  volume.capacity_bytes = claim.request_bytes;
  volume.storage_class = claim.storage_class;
  volume.volume_mode = claim.volume_mode;
  volume.claim_ref = ClaimReference{
      .namespace_ = claim.meta.namespace_, .name = claim.meta.name, .uid = claim.meta.uid};
  volume.phase = "Bound";
  const StorageClass* sc = objects->Class(claim.storage_class);
  if (sc != nullptr && sc->provisioner != kNoProvisioner) {
    // A CSI provisioner's volumes are attached by its driver (NodeVolumeLimits counts them).
    volume.csi_driver = sc->provisioner;
    volume.csi_volume_handle = volume.meta.name;
  }
  const NodeInfo* node = scheduler_->snapshot().Get(value);
  if (sc != nullptr && node != nullptr && node->node() != nullptr && !sc->allowed_topologies.empty()) {
    NodeSelectorTerm term;
    for (const TopologySelectorTerm& allowed : sc->allowed_topologies) {
      for (const auto& requirement : allowed.match_label_expressions) {
        auto label = node->node()->meta.labels.find(requirement.key);
        if (label == node->node()->meta.labels.end()) continue;
        term.match_expressions.push_back(
            {.key = requirement.key, .op = NodeSelectorRequirement::Operator::kIn, .values = {label->second}});
      }
    }
    volume.node_affinity = std::vector<NodeSelectorTerm>{std::move(term)};
  }
  updated.volume_name = volume.meta.name;
  updated.phase_bound = true;
  claims_[claim.Key()] = {.selected_node = std::string(value), .volume = volume.meta.name};
  scheduler_->OnClusterObject(std::move(volume));
  scheduler_->OnClusterObject(std::move(updated));
  return absl::OkStatus();
}

absl::Status SimulatedCluster::SetClaimRef(const PersistentVolume& volume,
                                           const PersistentVolumeClaim& claim) {
  std::shared_ptr<const ClusterObjects> objects = scheduler_->Objects();
  const PersistentVolume* current_volume = objects->Volume(volume.meta.name);
  const PersistentVolumeClaim* current_claim = objects->Claim(claim.meta.namespace_, claim.meta.name);
  if (current_volume == nullptr || current_claim == nullptr) {
    return absl::NotFoundError(StrCat("PersistentVolume ", volume.meta.name, " or claim ",
                                      claim.Key(), " is gone"));
  }
  // The PV controller completes the binding on both sides.
  PersistentVolume bound_volume = *current_volume;
  bound_volume.claim_ref = ClaimReference{
      .namespace_ = claim.meta.namespace_, .name = claim.meta.name, .uid = claim.meta.uid};
  bound_volume.phase = "Bound";
  PersistentVolumeClaim bound_claim = *current_claim;
  bound_claim.volume_name = volume.meta.name;
  bound_claim.phase_bound = true;
  claims_[claim.Key()] = {.selected_node = "", .volume = volume.meta.name};
  scheduler_->OnClusterObject(std::move(bound_volume));
  scheduler_->OnClusterObject(std::move(bound_claim));
  return absl::OkStatus();
}

void SimulatedCluster::PodScheduled(const Pod& pod, const std::string& node) {
  placements_[pod.Key()] = node;
  last_failure_.erase(pod.Key());
}

void SimulatedCluster::PodUnschedulable(const Pod& pod, FailureKind, const std::string& message) {
  last_failure_[pod.Key()] = message;
}

void SimulatedCluster::GangStatusChanged(const gang::GangId& id,
                                         const gang::GangStatusUpdate& update) {
  gangs_[id.Describe()] = update;
}

std::map<std::string, std::string> SimulatedCluster::reasons() const {
  std::map<std::string, std::string> out;
  for (const auto& [key, node] : placements_) {
    if (!node.empty()) continue;
    auto it = last_failure_.find(key);
    out[key] = it == last_failure_.end() ? "not attempted" : it->second;
  }
  return out;
}

}  // namespace tessel::bench
