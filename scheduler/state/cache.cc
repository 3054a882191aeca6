// Cache bookkeeping. Every change stamps the touched node with a new generation so that
// UpdateSnapshot copies only what moved.
#include "scheduler/state/cache.h"

#include "scheduler/api/changes.h"
#include "scheduler/api/uid.h"
#include "scheduler/state/pod_charge.h"
#include "scheduler/util/strings.h"

namespace tessel {

NodeInfo& Cache::NodeLocked(const std::string& name) {
  auto& slot = nodes_[name];
  if (!slot) {
    slot = std::make_unique<NodeInfo>();
    slot->set_name(name);
    membership_generation_ = generation_ + 1;
  }
  return *slot;
}


bool Cache::AddOrUpdateNode(Node node) {
  absl::MutexLock lock(&mu_);
  NodeInfo& info = NodeLocked(node.name());
  const bool changed = info.node() == nullptr || NodeSchedulingChanged(*info.node(), node);
  if (info.node() == nullptr) membership_generation_ = generation_ + 1;
  info.SetNode(std::make_shared<const Node>(std::move(node)));
  // The snapshot copies the node only when something a plugin reads moved.
  if (changed) Touch(info);
  return changed;
}

void Cache::RemoveNode(std::string_view name) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  // Pods still bound to a deleted node keep a ghost entry until they are deleted too, so that
  // their resources are not counted twice if the node comes back.
  it->second->SetNode(nullptr);
  Touch(*it->second);
  membership_generation_ = generation_;
  DropGhostIfEmpty(std::string(name));
}

void Cache::DropGhostIfEmpty(const std::string& name) {
  auto it = nodes_.find(name);
  if (it != nodes_.end() && it->second->node() == nullptr && it->second->pods().empty()) {
    nodes_.erase(it);
    membership_generation_ = ++generation_;
  }
}

void Cache::AddPodLocked(PodRef pod) {
  NodeInfo& info = NodeLocked(pod->node_name);
  info.AddPod(pod);
  Touch(info);
  std::string key = pod->Key();
  pods_[std::move(key)] = PodState{.pod = std::move(pod)};
}

void Cache::RemovePodLocked(std::string_view key) {
  auto it = pods_.find(key);
  if (it == pods_.end()) return;
  const std::string node = it->second.pod->node_name;
  pods_.erase(it);
  auto n = nodes_.find(node);
  if (n == nodes_.end()) return;
  n->second->RemovePod(key);
  Touch(*n->second);
  DropGhostIfEmpty(node);
}

namespace {

// Whether `uid` names the pod held as `held` (an empty UID on either side matches).
bool SamePod(const Pod& held, std::string_view uid) {
  return SameUid(held.meta.uid, uid);
}

}  // namespace

bool Cache::AddOrUpdatePod(Pod pod) {
  absl::MutexLock lock(&mu_);
  const std::string key = pod.Key();
  auto it = pods_.find(key);
  if (it != pods_.end() && !SamePod(*it->second.pod, pod.meta.uid)) {
    // Another pod now holds the name: the old one is gone, with whatever it held.
    RemovePodLocked(key);
    it = pods_.end();
  }
  if (pod.node_name.empty() || pod.IsTerminal()) {
    // Unbound pods hold nothing. An unbound, unfinished copy of a pod held here is stale: the
    // bind may not have landed yet (assumed), or the informer is behind (bound pods never
    // become unbound). Only a finished pod releases.
    if (it != pods_.end() && pod.IsTerminal()) RemovePodLocked(key);
    return false;
  }
  // What a pod is charged was fixed when it was placed: a later copy keeps it, whatever its
  // annotations and labels say now (pod_charge.h).
  if (it != pods_.end() && it->second.pod->node_name == pod.node_name) {
    KeepCharge(*it->second.pod, pod);
  } else {
    RestoreCharge(pod);
  }
  if (it != pods_.end()) {
    const Pod& old = *it->second.pod;
    if (old.node_name == pod.node_name && old.requests == pod.requests && !it->second.assumed) {
      // Same place, same size: replace the object without touching accounting.
      const bool relabelled = old.meta.labels != pod.meta.labels;
      auto updated = std::make_shared<const Pod>(std::move(pod));
      NodeInfo& info = NodeLocked(updated->node_name);
      info.RemovePod(key);
      info.AddPod(updated);
      Touch(info);
      it->second.pod = std::move(updated);
      return relabelled;
    }
    RemovePodLocked(key);
  }
  AddPodLocked(std::make_shared<const Pod>(std::move(pod)));
  return true;
}

void Cache::MarkTerminating(std::string_view key, std::string_view uid, absl::Time when) {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(key);
  if (it == pods_.end() || !SamePod(*it->second.pod, uid) || it->second.pod->meta.deletion_timestamp) {
    return;
  }
  Pod leaving = *it->second.pod;
  leaving.meta.deletion_timestamp = when;
  auto updated = std::make_shared<const Pod>(std::move(leaving));
  NodeInfo& info = NodeLocked(updated->node_name);
  info.RemovePod(updated->Key());
  info.AddPod(updated);
  Touch(info);
  it->second.pod = std::move(updated);
}

void Cache::RemovePod(std::string_view key, std::string_view uid) {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(key);
  if (it == pods_.end() || !SamePod(*it->second.pod, uid)) return;
  RemovePodLocked(key);
}

absl::Status Cache::AssumePod(Pod pod) {
  absl::MutexLock lock(&mu_);
  const std::string key = pod.Key();
  if (pods_.contains(key)) {
    return absl::AlreadyExistsError(StrCat("pod ", key, " is already in the cache"));
  }
  auto node = nodes_.find(pod.node_name);
  if (node == nodes_.end() || node->second->node() == nullptr) {
    return absl::NotFoundError(StrCat("cannot assume pod ", key, ": node \"",
                                            pod.node_name, "\" is not in the cache"));
  }
  AddPodLocked(std::make_shared<const Pod>(std::move(pod)));
  PodState& state = pods_[key];
  state.assumed = true;
  state.assumed_at = clock_->Now();
  return absl::OkStatus();
}

absl::Status Cache::FinishBinding(std::string_view key, std::string_view uid) {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(key);
  if (it == pods_.end() || !SamePod(*it->second.pod, uid)) {
    return absl::NotFoundError(StrCat("pod ", key, " is not assumed"));
  }
  // The informer may already have confirmed the pod: then nothing is left to do.
  if (it->second.assumed) it->second.binding_finished = true;
  return absl::OkStatus();
}

absl::Status Cache::ForgetPod(std::string_view key, std::string_view uid) {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(key);
  if (it == pods_.end() || !it->second.assumed || !SamePod(*it->second.pod, uid)) {
    return absl::NotFoundError(StrCat("pod ", key, " is not assumed"));
  }
  RemovePodLocked(key);
  return absl::OkStatus();
}

absl::Status Cache::CheckNodesFit() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> problems;
  for (const auto& [name, info] : nodes_) {
    if (info->node() == nullptr) continue;  // a ghost: its pods wait for their own deletes
    if (!info->requested().FitsIn(info->allocatable())) {
      problems.push_back(StrCat(name, ": pods request ", info->requested().DebugString(),
                                " of ", info->allocatable().DebugString()));
    }
    if (info->gpus().unplaced_milli() > 0) {
      problems.push_back(StrCat(name, ": ", info->gpus().unplaced_milli(),
                                " milli-GPU held by pods that fit on no device"));
    }
    if (std::string bad = info->gpus().CheckInvariants(); !bad.empty()) {
      problems.push_back(StrCat(name, ": ", bad));
    }
  }
  if (problems.empty()) return absl::OkStatus();
  std::sort(problems.begin(), problems.end());
  return absl::InternalError(StrCat("overcommitted: ", StrJoin(problems, "; ")));
}

void Cache::Touch(NodeInfo& info) {
  info.set_generation(++generation_);
  // The log of touched nodes lets UpdateSnapshot find what moved without walking every node.
  // Snapshots older than its floor walk every node once.
  if (touched_.size() >= 2 * nodes_.size() + 1024) {
    touched_.clear();
    touched_floor_ = generation_ - 1;
  }
  touched_.emplace_back(generation_, info.name());
}

void Cache::UpdateSnapshot(Snapshot& snapshot) {
  absl::MutexLock lock(&mu_);
  const bool membership_changed = membership_generation_ > snapshot.generation_;
  auto copy = [&](const std::string& name, const NodeInfo& info) {
    auto held = snapshot.infos_.find(name);
    if (held != snapshot.infos_.end() && held->second->generation() == info.generation()) return;
    snapshot.Put(name, info);
  };
  if (membership_changed || snapshot.generation_ < touched_floor_) {
    for (auto& [name, info] : nodes_) {
      if (info->generation() > snapshot.generation_) copy(name, *info);
    }
  } else {
    auto first = std::upper_bound(
        touched_.begin(), touched_.end(), snapshot.generation_,
        [](int64_t g, const std::pair<int64_t, std::string>& t) { return g < t.first; });
    for (auto it = first; it != touched_.end(); ++it) {
      auto node = nodes_.find(it->second);
      if (node != nodes_.end()) copy(node->first, *node->second);
    }
  }
  // Nodes changed in place during a cycle are copied back from the cache.
  for (const std::string& name : snapshot.mutated_) {
    auto node = nodes_.find(name);
    if (node != nodes_.end()) snapshot.Put(node->first, *node->second);
  }
  snapshot.mutated_.clear();
  if (membership_changed) {
    for (auto it = snapshot.infos_.begin(); it != snapshot.infos_.end();) {
      if (!nodes_.contains(it->first)) {
        snapshot.Erase((it++)->first);
      } else {
        ++it;
      }
    }
    snapshot.RebuildList();
  }
  snapshot.generation_ = generation_;
}

bool Cache::IsAssumed(std::string_view key, std::string_view uid) const {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(key);
  return it != pods_.end() && it->second.assumed && SamePod(*it->second.pod, uid);
}

std::optional<std::string> Cache::NodeOf(std::string_view key) const {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(key);
  if (it == pods_.end()) return std::nullopt;
  return it->second.pod->node_name;
}

std::optional<Cache::HeldPod> Cache::Held(std::string_view key) const {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(key);
  if (it == pods_.end()) return std::nullopt;
  return HeldPod{.uid = it->second.pod->meta.uid, .node = it->second.pod->node_name,
                 .assumed = it->second.assumed};
}

bool Cache::HasNode(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  return it != nodes_.end() && it->second->node() != nullptr;
}

size_t Cache::NodeCount() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [name, info] : nodes_) n += info->node() != nullptr;
  return n;
}

size_t Cache::PodCount() const {
  absl::MutexLock lock(&mu_);
  return pods_.size();
}

std::optional<NodeInfo> Cache::GetNodeInfo(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return std::nullopt;
  return *it->second;
}

std::optional<Resources> Cache::RoomOn(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end() || it->second->node() == nullptr) return std::nullopt;
  return it->second->Room();
}

std::vector<std::string> Cache::NodeNames() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [name, info] : nodes_) {
    if (info->node() != nullptr) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tessel
