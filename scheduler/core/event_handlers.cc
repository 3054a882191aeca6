// The informers' side of the Scheduler: pods, nodes and cluster objects arriving, changing and
// leaving (kube-scheduler's eventhandlers.go). Each handler updates the cache, the stores and
// the queue, and raises the queue's cluster event so that parked pods that may now fit move.
#include <algorithm>
#include <type_traits>
#include <variant>

#include "scheduler/api/decode.h"
#include "scheduler/api/uid.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/state/dra_charge.h"
#include "scheduler/util/strings.h"

namespace tessel {

bool Scheduler::Ours(const Pod& pod) const { return FrameworkFor(pod.scheduler_name) != nullptr; }

void Scheduler::OnPodAdd(Pod pod) { OnPodObserved(std::move(pod)); }

void Scheduler::OnPodUpdate(Pod pod) { OnPodObserved(std::move(pod)); }

void Scheduler::OnPodObserved(Pod pod) {
  priority_classes_.Resolve(pod);
  if (!pod.resource_claims.empty()) pod.dra_charge = DraChargeOf(pod, *objects_.view());
  const std::string key = pod.Key();
  const std::string uid = pod.meta.uid;
  std::optional<Cache::HeldPod> held = cache_->Held(key);
  if (held.has_value() && !SameUid(held->uid, uid)) {
    // Same name, new pod (a StatefulSet re-created it): the old one is gone with all it held.
    EndPod(key, held->uid);
    held.reset();
  }
  if (!pod.node_name.empty() || pod.IsTerminal()) {
    // Bound (by us or anyone) or finished: it is the cache's, and never queued again. A request
    // it waited on alone is no longer needed.
    if (provisioner_ != nullptr && Ours(pod)) provisioner_->GangPlaced(provisioning::PodKey(key));
    nominator_.Remove(key);
    EndGated(key);
    ReportGang(pod.node_name.empty() ? tracker_->Forget(key) : tracker_->NotePlaced(pod));
    queue_->Delete(key, uid);
    const bool releases = pod.IsTerminal();
    const std::string node = pod.node_name;
    // A status write of a running pod (the kubelet's) is no news to the pods parked for it.
    const bool news = cache_->AddOrUpdatePod(std::move(pod));
    if (!releases) {
      if (news) queue_->OnClusterEvent(kAssignedPodAdd);
    } else {
      NotifyPodLeft(node);
    }
    return;
  }
  if (!Ours(pod)) return;
  if (pod.meta.deletion_timestamp.has_value()) return ForgetPending(key, uid);
  // Only a pod the apiserver shows unbound and the core does not hold (assumed, or bound per an
  // informer that is ahead of this copy) enters the queue; the queue keeps in-flight pods out.
  if (held.has_value()) return;
  if (!pod.scheduling_gates.empty()) {
    queue_->Delete(key, uid);
    bool first_seen = false;
    {
      absl::MutexLock lock(&mu_);
      auto [it, inserted] = gated_.try_emplace(key, uid);
      first_seen = inserted || it->second != uid;
      it->second = uid;
    }
    if (first_seen && observer_) observer_->PodSchedulingGated(pod);
    return;
  }
  EndGated(key);  // its gates are gone
  // Its nomination: what the API server shows, else the one this scheduler made and has not
  // seen written back yet (an update may arrive before the status patch lands).
  pod.nominated_node_name = nominator_.Observe(key, pod.nominated_node_name);
  auto ref = std::make_shared<const Pod>(std::move(pod));
  nominator_.Set(ref, ref->nominated_node_name);
  if (tracker_->Admit(ref)) {  // the gang's head stands for it in the queue
    TellUndecodableGang(gangs_.Resolve(*ref).spec.id);  // a member that joins a gang that cannot be read
    queue_->OnClusterEvent(kUnassignedPodAdd);
    return;
  }
  if (queue_->Add(std::move(ref)) == SchedulingQueue::AddResult::kQueued) {
    queue_->OnClusterEvent(kUnassignedPodAdd);
  }
}

void Scheduler::RechargePendingClaims() {
  const std::shared_ptr<const ClusterObjects> objects = objects_.view();
  for (const PodRef& p : PendingPods()) {
    if (p->resource_claims.empty() || DraChargeOf(*p, *objects) == p->dra_charge) continue;
    OnPodObserved(*p);  // computes the charge again on the way in
  }
}

bool Scheduler::EndGated(const std::string& key) {
  absl::MutexLock lock(&mu_);
  return gated_.erase(key) > 0;
}

void Scheduler::ForgetPending(const std::string& key, std::string_view uid) {
  if (provisioner_ != nullptr) provisioner_->GangGone(provisioning::PodKey(key));
  nominator_.Remove(key);
  EndGated(key);
  ReportGang(tracker_->Forget(key));
  queue_->Delete(key, uid);  // an in-flight pod is marked ended: it is not requeued
}

void Scheduler::EndPod(const std::string& key, const std::string& uid) {
  ForgetPending(key, uid);
  if (std::optional<WaitingPods<InFlightPod>::Entry> w = waiting_.Take(key, uid)) {
    UndoAssume(*w->fw, *w->state, w->held.pod(), w->node);
  }  // its token is dropped here: the queue is done with it
  const std::optional<Cache::HeldPod> held = cache_->Held(key);
  cache_->RemovePod(key, uid);
  if (held.has_value() && !cache_->Held(key).has_value()) NotifyPodLeft(held->node);
}

void Scheduler::NotifyPodLeft(const std::string& node) {
  // With the room it left: parked pods that only room can help and that it cannot hold stay.
  const std::optional<Resources> room = node.empty() ? std::nullopt : cache_->RoomOn(node);
  queue_->OnClusterEvent(kAssignedPodDelete, room.has_value() ? &*room : nullptr);
}

void Scheduler::OnPodDelete(const std::string& key, const std::string& uid) { EndPod(key, uid); }

void Scheduler::OnPodUndecodable(const Pod& identity, const absl::Status& problem) {
  if (!identity.node_name.empty() || identity.meta.name.empty() || !Ours(identity)) return;
  ForgetPending(identity.Key(), identity.meta.uid);
  if (observer_) {
    observer_->PodUnschedulable(identity, FailureKind::kError,
                                StrCat("the pod cannot be scheduled as written: ", ToStd(problem.message())));
  }
}

void Scheduler::OnNodeAdd(Node node) {
  cache_->AddOrUpdateNode(std::move(node));
  queue_->OnClusterEvent(kNodeAdd);
}

void Scheduler::OnNodeUpdate(Node node) {
  // A heartbeat (resourceVersion, condition timestamps) cannot make a parked pod fit.
  if (cache_->AddOrUpdateNode(std::move(node))) queue_->OnClusterEvent(kNodeUpdate);
}

void Scheduler::OnNodeUndecodable(const std::string& name, const absl::Status& problem) {
  if (name.empty()) return;
  const std::optional<NodeInfo> info = cache_->GetNodeInfo(name);
  Node last = info.has_value() && info->node() != nullptr ? *info->node() : Node{.meta = {.name = name}};
  const bool fenced = std::any_of(last.taints.begin(), last.taints.end(),
                                  [](const Taint& t) { return t.key == kUnreadableNodeTaint; });
  const std::string uid = last.meta.uid;
  cache_->AddOrUpdateNode(FenceUnreadableNode(std::move(last)));
  if (fenced || api_ == nullptr) return;  // told once per spell
  api_->RecordObjectEvent(ObjectReference{.api_version = "v1", .kind = "Node", .name = name, .uid = uid},
                          "Warning", "NodeUnreadable",
                          StrCat(problem.message(), "; the node takes no new pods until it reads"));
}

void Scheduler::OnNodeDelete(const std::string& name) { cache_->RemoveNode(name); }

void Scheduler::OnPriorityClass(PriorityClass pc) { priority_classes_.Put(std::move(pc)); }

void Scheduler::OnPriorityClassDelete(const std::string& name) { priority_classes_.Delete(name); }

void Scheduler::OnPodDisruptionBudget(PodDisruptionBudget pdb) { budgets_.Put(std::move(pdb)); }

void Scheduler::OnPodDisruptionBudgetDelete(const std::string& key) { budgets_.Delete(key); }

void Scheduler::OnCustomObjectChange() { queue_->OnClusterEvent(kCustomObjectChange); }

absl::Status Scheduler::OnQueue(Queue queue) {
  absl::Status st = queue_store_.Put(std::move(queue));
  ReportQueueConflicts();
  OnCustomObjectChange();
  return st;
}

absl::Status Scheduler::OnQueueUndecodable(const std::string& name, const absl::Status& problem,
                                           std::vector<std::string> namespaces) {
  absl::Status st = queue_store_.PutUndecodable(name, problem, std::move(namespaces));
  ReportQueueConflicts();
  OnCustomObjectChange();
  return st;
}

void Scheduler::OnQueueDelete(const std::string& name) {
  queue_store_.Delete(name);
  ReportQueueConflicts();  // the next oldest of several claimants now keeps the namespace
  OnCustomObjectChange();
}

void Scheduler::OnResourceFlavor(ResourceFlavor flavor) {
  queue_store_.PutFlavor(std::move(flavor));
  OnCustomObjectChange();
}

absl::Status Scheduler::OnResourceFlavorUndecodable(const std::string& name, const absl::Status& problem) {
  absl::Status st = queue_store_.PutUndecodableFlavor(name, problem);
  OnCustomObjectChange();
  return st;
}

void Scheduler::OnResourceFlavorDelete(const std::string& name) {
  queue_store_.DeleteFlavor(name);
  OnCustomObjectChange();
}

void Scheduler::OnCohort(Cohort cohort) {
  queue_store_.PutCohort(std::move(cohort));
  OnCustomObjectChange();
}

absl::Status Scheduler::OnCohortUndecodable(const std::string& name, const absl::Status& problem) {
  absl::Status st = queue_store_.PutUndecodableCohort(name, problem);
  OnCustomObjectChange();
  return st;
}

void Scheduler::OnCohortDelete(const std::string& name) {
  queue_store_.DeleteCohort(name);
  OnCustomObjectChange();
}

void Scheduler::ReportQueueConflicts() {
  for (const NamespaceConflict& c : queue_store_.TakeNewConflicts()) {
    if (api_ == nullptr) continue;
    api_->RecordObjectEvent(ObjectReference{.api_version = std::string(kQueueApiVersion),
                                            .kind = std::string(kQueueKind),
                                            .name = c.refused,
                                            .uid = c.refused_uid},
                            "Warning", "NamespaceConflict", c.Message());
  }
}

void Scheduler::OnGangObject(gang::GangObject object) {
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        const gang::GangKind kind = std::is_same_v<T, gang::PodGroup>             ? gang::GangKind::kPodGroup
                                    : std::is_same_v<T, gang::SchedulingPodGroup> ? gang::GangKind::kSchedulingPodGroup
                                    : std::is_same_v<T, gang::Workload>           ? gang::GangKind::kWorkload
                                                                                  : gang::GangKind::kJob;
        if (const std::optional<gang::GangId> id = gang::GangBook::IdOf(kind, o.meta.namespace_, o.meta.name)) {
          absl::MutexLock lock(&mu_);
          undecodable_gangs_.erase(id->Key());
        }
      },
      object);
  gangs_.Put(std::move(object));
  OnCustomObjectChange();
}

void Scheduler::OnGangObjectUndecodable(gang::GangKind kind, const std::string& namespace_,
                                        const std::string& name, const absl::Status& problem) {
  const std::optional<gang::GangId> id = gang::GangBook::IdOf(kind, namespace_, name);
  if (!id.has_value() || name.empty()) return;
  {
    absl::MutexLock lock(&mu_);
    UndecodableGang& u = undecodable_gangs_[id->Key()];
    if (u.problem == problem.message()) return;
    u = UndecodableGang{.problem = std::string(problem.message())};
  }
  OnCustomObjectChange();  // its waiting members are tried, and told
}

void Scheduler::OnGangObjectDelete(gang::GangKind kind, std::string_view key) {
  const size_t slash = key.find('/');
  const std::string ns(slash == std::string_view::npos ? std::string_view() : key.substr(0, slash));
  const std::string name(slash == std::string_view::npos ? key : key.substr(slash + 1));
  gangs_.Remove(kind, ns, name);
  OnCustomObjectChange();
  const std::optional<gang::GangId> id = gang::GangBook::IdOf(kind, ns, name);
  if (!id.has_value()) return;
  {
    absl::MutexLock lock(&mu_);
    undecodable_gangs_.erase(id->Key());
  }
  if (provisioner_ != nullptr) provisioner_->GangGone(id->Key());
  if (gang_status_ != nullptr) gang_status_->GangForgotten(*id);
}

}  // namespace tessel
