// The what-if layer over the snapshot (see what_if.h).
#include "scheduler/framework/what_if.h"


namespace tessel {

bool BetterFill(const FillOption& a, const FillOption& b, int32_t remaining) {
  const bool all_a = a.capacity >= remaining, all_b = b.capacity >= remaining;
  if (all_a != all_b) return all_a;
  if (a.capacity != b.capacity) return all_a ? a.capacity < b.capacity : a.capacity > b.capacity;
  if (a.score != b.score) return a.score > b.score;
  if (a.fullness != b.fullness) return a.fullness < b.fullness;
  return a.order < b.order;
}

WhatIf::WhatIf(const Snapshot* snapshot, Options options) : snapshot_(snapshot), options_(options) {}

const NodeInfo* WhatIf::Get(std::string_view name) const {
  auto it = changed_.find(name);
  return it != changed_.end() ? it->second.get() : snapshot_->Get(name);
}

const std::vector<NodeInfo*>& WhatIf::nodes() const {
  if (!scope_built_) {
    scope_ = options_.scope != nullptr ? *options_.scope : snapshot_->nodes();
    index_.reserve(scope_.size());
    for (size_t i = 0; i < scope_.size(); ++i) {
      if (auto it = changed_.find(scope_[i]->name()); it != changed_.end()) scope_[i] = it->second.get();
      index_.emplace(scope_[i], i);
    }
    scope_built_ = true;
  }
  return scope_;
}

size_t WhatIf::IndexOf(const NodeInfo* node) const {
  (void)nodes();
  return index_.at(node);
}

Status WhatIf::Fits(const Framework& fw, const CycleState& state, const Pod& pod, const NodeInfo& node) const {
  return fw.RunFiltersWithNominatedPods(state, pod, node, options_.nominated);
}

NodeInfo& WhatIf::Mutable(const std::string& name) {
  auto it = changed_.find(name);
  if (it != changed_.end()) {
    // Copied before the latest checkpoint and first changed since: kept aside as it stands.
    if (!checkpoints_.empty()) {
      const Mark cp = checkpoints_.back();
      auto [at, fresh] = kept_at_.try_emplace(name, cp);
      const bool kept = !fresh && at->second == cp;
      if (made_at_.at(name) < cp && !kept) {
        at->second = cp;
        kept_aside_.push_back(KeptAside{.mark = cp, .name = name, .node = *it->second});
      }
    }
    return *it->second;
  }
  const NodeInfo* original = snapshot_->Get(name);
  auto copy = std::make_unique<NodeInfo>(*original);
  NodeInfo* fresh = copy.get();
  changed_.emplace(name, std::move(copy));
  copies_.emplace_back(changes_.size(), name);  // made for the change about to be logged
  made_at_[name] = changes_.size();
  if (scope_built_) {
    if (auto pos = index_.find(original); pos != index_.end()) {
      const size_t i = pos->second;
      index_.erase(pos);
      scope_[i] = fresh;
      index_.emplace(fresh, i);
    }
  }
  return *fresh;
}

void WhatIf::Restore(const std::string& name) {
  auto it = changed_.find(name);
  if (scope_built_) {
    if (auto pos = index_.find(it->second.get()); pos != index_.end()) {
      const size_t i = pos->second;
      index_.erase(pos);
      scope_[i] = snapshot_->nodes()[static_cast<size_t>(snapshot_->PositionOf(name))];
      index_.emplace(scope_[i], i);
    }
  }
  changed_.erase(it);
}

void WhatIf::Apply(const Change& c) {
  NodeInfo& node = Mutable(c.pod->node_name);
  if (c.add) {
    node.AddPod(c.pod);
  } else {
    node.RemovePod(c.pod->Key());
  }
}

WhatIf::Mark WhatIf::Checkpoint() {
  checkpoints_.push_back(changes_.size());  // nested ones at the same mark are counted apart
  return changes_.size();
}

PodRef WhatIf::Place(const Pod& pod, const std::string& node) {
  Pod at = pod;
  at.node_name = node;
  PodRef ref = std::make_shared<const Pod>(std::move(at));
  Place(ref);
  return ref;
}

void WhatIf::Place(PodRef placed) {
  Change c{.add = true, .pod = std::move(placed)};
  Apply(c);
  changes_.push_back(std::move(c));
}

bool WhatIf::Evict(const PodRef& pod) {
  const NodeInfo* node = Get(pod->node_name);
  if (node == nullptr || node->FindPod(pod->Key()) == nullptr) return false;
  Change c{.add = false, .pod = pod};
  Apply(c);
  changes_.push_back(std::move(c));
  return true;
}

PodRef WhatIf::Move(const PodRef& pod, const std::string& to) {
  Evict(pod);
  Pod pending = *pod;
  pending.nominated_node_name.clear();
  return Place(pending, to);
}

void WhatIf::Rollback(Mark mark) {
  if (changes_.size() > mark) changes_.resize(mark);
  while (!kept_aside_.empty() && kept_aside_.back().mark >= mark) {
    KeptAside& k = kept_aside_.back();
    *changed_.at(k.name) = std::move(k.node);  // in place: pointers into the plan stay good
    kept_at_.erase(k.name);
    kept_aside_.pop_back();
  }
  while (!copies_.empty() && copies_.back().first >= mark) {
    kept_at_.erase(copies_.back().second);
    made_at_.erase(copies_.back().second);
    Restore(copies_.back().second);
    copies_.pop_back();
  }
  // The checkpoints after `mark` are gone, and the one rolled back to; one taken earlier at the
  // same mark (nothing changed between) stays.
  while (!checkpoints_.empty() && checkpoints_.back() > mark) checkpoints_.pop_back();
  if (!checkpoints_.empty() && checkpoints_.back() == mark) checkpoints_.pop_back();
}

Status WhatIf::Replay(const Framework& fw, CycleState& state, const Pod& pod, Mark from,
                      const Pod* except) const {
  for (size_t i = from; i < changes_.size(); ++i) {
    const Change& c = changes_[i];
    if (c.pod.get() == except) continue;
    const NodeInfo* where = Get(c.pod->node_name);
    if (where == nullptr) continue;
    Status st = c.add ? fw.RunPreFilterExtensionAddPod(state, pod, *c.pod, *where)
                      : fw.RunPreFilterExtensionRemovePod(state, pod, *c.pod, *where);
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

}  // namespace tessel
