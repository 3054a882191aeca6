// GangBook: definitions by kind, and a pod's resolution to its gang (see gang_book.h).
#include "scheduler/gang/gang_book.h"

#include "scheduler/api/decode.h"
#include "scheduler/util/strings.h"

namespace tessel::gang {

namespace {

std::string TopologyKey(const ObjectMeta& meta) {
  auto it = meta.annotations.find(kTopologyKeyAnnotation);
  return it == meta.annotations.end() ? "" : it->second;
}

}  // namespace

void GangBook::Put(GangObject object) {
  std::visit([this](auto&& o) { Put(std::move(o)); }, std::move(object));
}

void GangBook::Remove(GangKind kind, const std::string& namespace_, const std::string& name) {
  Key key{namespace_.empty() ? "default" : namespace_, name};
  absl::MutexLock lock(&mu_);
  switch (kind) {
    case GangKind::kPodGroup:
      pod_groups_.erase(key);
      break;
    case GangKind::kWorkload:
      workloads_.erase(key);
      break;
    case GangKind::kSchedulingPodGroup:
      scheduling_pod_groups_.erase(key);
      break;
    case GangKind::kJob:
      jobs_.erase(key);
      break;
  }
}

std::optional<GangId> GangBook::IdOf(GangKind kind, const std::string& namespace_, const std::string& name) {
  if (kind == GangKind::kWorkload) return std::nullopt;
  return GangId{.kind = kind, .namespace_ = namespace_.empty() ? "default" : namespace_, .name = name};
}

void GangBook::Put(PodGroup pg) {
  absl::MutexLock lock(&mu_);
  Key key{pg.meta.namespace_, pg.meta.name};
  pod_groups_[std::move(key)] = std::move(pg);
}

void GangBook::Put(Workload w) {
  absl::MutexLock lock(&mu_);
  Key key{w.meta.namespace_, w.meta.name};
  workloads_[std::move(key)] = std::move(w);
}

void GangBook::Put(SchedulingPodGroup pg) {
  absl::MutexLock lock(&mu_);
  Key key{pg.meta.namespace_, pg.meta.name};
  scheduling_pod_groups_[std::move(key)] = std::move(pg);
}

void GangBook::Put(JobInfo job) {
  absl::MutexLock lock(&mu_);
  Key key{job.meta.namespace_, job.meta.name};
  jobs_[std::move(key)] = std::move(job);
}

GangBook::Resolution GangBook::Resolve(const Pod& pod) const {
  Resolution r;
  std::optional<GangId> id = DeclaredGang(pod);
  if (!id.has_value()) return r;
  r.spec.id = *id;
  const Key key{id->namespace_, id->name};
  absl::MutexLock lock(&mu_);
  auto gang = [&](int32_t min_member, const ObjectMeta& meta) {
    r.membership = Membership::kGang;
    r.spec.min_member = std::max(min_member, 1);
    r.spec.topology_key = TopologyKey(meta);
  };
  switch (id->kind) {
    case GangKind::kPodGroup: {
      auto it = pod_groups_.find(key);
      if (it == pod_groups_.end()) {
        r.membership = Membership::kWaiting;
        return r;
      }
      gang(it->second.min_member, it->second.meta);
      if (it->second.schedule_timeout_seconds.has_value()) {
        r.spec.schedule_timeout = absl::Seconds(*it->second.schedule_timeout_seconds);
      }
      r.spec.min_resources = it->second.min_resources;
      return r;
    }
    case GangKind::kWorkload: {
      auto it = workloads_.find(key);
      if (it == workloads_.end()) {
        r.membership = Membership::kWaiting;
        return r;
      }
      for (const WorkloadPodGroup& g : it->second.pod_groups) {
        if (g.name != id->pod_group) continue;
        if (g.gang_min_count.has_value()) gang(*g.gang_min_count, it->second.meta);
        return r;  // basic policy: an ordinary pod
      }
      r.membership = Membership::kWaiting;  // the Workload has no such group (yet)
      return r;
    }
    case GangKind::kSchedulingPodGroup: {
      auto it = scheduling_pod_groups_.find(key);
      if (it == scheduling_pod_groups_.end()) {
        r.membership = Membership::kWaiting;
        return r;
      }
      const SchedulingPodGroup& pg = it->second;
      if (!pg.gang_min_count.has_value()) return r;  // basic policy: an ordinary pod
      gang(*pg.gang_min_count, pg.meta);
      if (!pg.topology_key.empty()) r.spec.topology_key = pg.topology_key;
      r.spec.preemption_policy = pg.preemption_policy;
      r.spec.unsupported = Unsupported(pg);
      // kube-scheduler requires the members' priority to be the group's; Tessel orders and
      // preempts by the members' own, and says so when they differ.
      if (pg.priority.has_value() && *pg.priority != pod.PriorityValue()) {
        r.spec.unsupported.push_back(StrCat("spec.priority: ", *pg.priority, " differs from member ", pod.Key(),
                                            "'s priority ", pod.PriorityValue(),
                                            "; Tessel orders and preempts by the members' priority"));
      }
      return r;
    }
    case GangKind::kJob: {
      // The pod's own annotation (from the Job's pod template) wins over the Job's.
      auto own = MinAvailable(pod.meta.annotations, StrCat("Pod ", pod.Key()));
      if (!own.ok()) {
        r.warning = std::string(own.status().message());
      } else if (own->has_value()) {
        StringMap annotations = pod.meta.annotations;
        ObjectMeta meta;
        meta.annotations = std::move(annotations);
        gang(**own, meta);
        return r;
      }
      auto it = jobs_.find(key);
      if (it == jobs_.end()) {
        if (jobs_watched_) r.membership = Membership::kWaiting;  // its Job is on its way
      } else if (it->second.min_available.has_value()) {
        gang(*it->second.min_available, it->second.meta);
      }
      return r;
    }
  }
  return r;
}

void GangBook::SetJobsWatched(bool watched) {
  absl::MutexLock lock(&mu_);
  jobs_watched_ = watched;
}

std::optional<PodGroup> GangBook::FindPodGroup(const std::string& ns,
                                               const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = pod_groups_.find(Key{ns, name});
  if (it == pod_groups_.end()) return std::nullopt;
  return it->second;
}

std::optional<PodGroupClaims> GangBook::FindPodGroupClaims(const std::string& ns, const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = scheduling_pod_groups_.find(Key{ns, name});
  if (it == scheduling_pod_groups_.end()) return std::nullopt;
  const SchedulingPodGroup& pg = it->second;
  return PodGroupClaims{.name = pg.meta.name, .uid = pg.meta.uid, .claims = pg.resource_claims,
                        .generated = pg.generated_claims};
}

size_t GangBook::size() const {
  absl::MutexLock lock(&mu_);
  return pod_groups_.size() + workloads_.size() + scheduling_pod_groups_.size() + jobs_.size();
}

}  // namespace tessel::gang
