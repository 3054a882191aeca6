// The trace simulator's event loop (see timeline.h).
#include "bench/trace/timeline.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <queue>

#include "bench/sim/sim_world.h"
#include "bench/trace/owed_room.h"
#include "scheduler/kinds/object_kinds.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/quota/cohort.h"
#include "scheduler/quota/queue.h"
#include "scheduler/report/cluster_report.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

const absl::Time kEpoch = absl::FromUnixSeconds(1'700'000'000);
absl::Time At(int64_t seconds) { return kEpoch + absl::Seconds(seconds); }

// The pods this scheduler bound, in order (the simulated cluster binds inline), and the reason
// each victim of a PostFilter plugin was evicted for (kMoveReason: a move).
class BindLog final : public SchedulingObserver {
 public:
  void PodScheduled(const Pod& pod, const std::string&) override { bound.push_back(pod.Key()); }
  void PodUnschedulable(const Pod&, FailureKind, const std::string&) override {}
  void PodsPreempted(const Pod&, const std::string&, const std::vector<PreemptionVictim>& victims) override {
    for (const PreemptionVictim& v : victims) victim_reason[v.pod->Key()] = v.reason;
  }
  std::vector<std::string> bound;
  std::map<std::string, std::string> victim_reason;
};

struct TimelineEvent {
  enum class Kind { kChange, kArrival, kCompletion };
  int64_t at;
  int64_t seq;  // arrival order among events at one time
  Kind kind;
  size_t index;
  int32_t incarnation = 0;  // a completion of an interrupted run is stale
  bool operator>(const TimelineEvent& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

// A job's life in the simulation.
struct JobState {
  int32_t incarnation = 0;   // bumped when the job goes back to the queue
  std::vector<std::string> keys;  // its pods' current keys
  size_t bound = 0;
  bool pending = false, running = false;
  int64_t run_start = 0;
  int64_t remaining = 0;
};

class Simulation {
 public:
  Simulation(const TimelineInput& in, const TimelineOptions& o, SimWorld& w)
      : in_(in), o_(o), w_(w), s_(*w.scheduler), states_(in.jobs.size()) {}

  absl::StatusOr<TimelineResult> Run(BindLog& log) {
    for (const Node& n : in_.nodes) AddNode(n);
    int64_t seq = 0;
    for (size_t i = 0; i < in_.changes.size(); ++i) {
      events_.push({in_.changes[i].at, seq++, TimelineEvent::Kind::kChange, i});
    }
    std::map<std::string, int32_t> class_value;  // the PriorityClasses the input brings
    for (const ClusterChange& c : in_.changes) {
      if (c.kind == ClusterChange::Kind::kPriorityClass) class_value[c.priority.meta.name] = c.priority.value;
    }
    auto priority_of = [&](const Pod& p) {
      if (p.priority.has_value()) return *p.priority;
      auto it = class_value.find(p.priority_class_name);
      return it == class_value.end() ? 0 : it->second;
    };
    int64_t horizon = 0;
    result_.first_arrival = in_.jobs.empty() ? 0 : in_.jobs.front().arrive;
    for (size_t i = 0; i < in_.jobs.size(); ++i) {
      const TraceJob& j = in_.jobs[i];
      events_.push({j.arrive, seq++, TimelineEvent::Kind::kArrival, i});
      result_.first_arrival = std::min(result_.first_arrival, j.arrive);
      result_.last_arrival = std::max(result_.last_arrival, j.arrive);
      horizon = std::max(horizon, j.arrive + j.duration);
      JobOutcome& out = result_.jobs.emplace_back();
      out.id = j.id;
      out.size_class = j.size_class;
      out.queue = j.queue;
      out.priority = j.pods.empty() ? 0 : priority_of(j.pods.front());
      out.arrive = j.arrive;
      out.duration = j.duration;
      states_[i].remaining = j.duration;
      int64_t requested = 0;
      for (const Pod& p : j.pods) requested += gpu::ReadGpuRequest(p).total_milli();
      requested_milli_.push_back(requested);
    }
    seq_ = seq;
    result_.steady = in_.window_to > in_.window_from;
    result_.window_from = result_.steady ? in_.window_from : result_.first_arrival;
    result_.window_to = result_.steady ? in_.window_to : result_.last_arrival;
    // The curves cover the run, or twice the arrival window when the run is longer: a trace whose
    // few long jobs outlast the arrivals by months (openb) would otherwise plot months of drain.
    const int64_t window = result_.last_arrival - result_.first_arrival;
    if (window > 0 && horizon - result_.first_arrival > 2 * window) {
      sample_until_ = result_.first_arrival + 2 * window;
      horizon = sample_until_;
    }
    sample_every_ = std::max<int64_t>(1, (horizon - result_.first_arrival) / std::max(1, o_.samples));
    next_sample_ = result_.first_arrival;
    now_ = result_.first_arrival;
    const std::atomic<bool> never{false};
    while (true) {
      std::optional<int64_t> next;
      if (!events_.empty()) next = events_.top().at;
      if (pending_ > 0) {
        // A pod in backoff, or (while events are to come) one that waited unschedulable for the
        // retry period: time moves to its retry (whole seconds, rounded up). After the last
        // event an unschedulable pod is not retried: nothing could change for it.
        for (std::optional<absl::Time> wake :
             {s_.NextWakeup(), next ? s_.NextUnschedulableRetry() : std::optional<absl::Time>()}) {
          if (!wake) continue;
          int64_t w = absl::ToInt64Seconds(*wake - kEpoch);
          if (At(w) < *wake) ++w;
          w = std::max(w, now_ + 1);
          if (!next || w < *next) next = w;
        }
      }
      if (!next) break;
      Advance(*next);
      while (!events_.empty() && events_.top().at == now_) {
        const TimelineEvent e = events_.top();
        events_.pop();
        Handle(e);
        ++result_.events;
        if (o_.progress != nullptr) o_.progress->fetch_add(1, std::memory_order_relaxed);
      }
      s_.Run(never, {.on_idle = [] { return false; }});
      Settle(log);
    }
    if (absl::Status st = TakeSample(now_, /*keep=*/now_ <= sample_until_); !st.ok()) return st;
    result_.ended_at = now_;
    for (const JobOutcome& j : result_.jobs) {
      if (j.end >= 0) result_.makespan = std::max(result_.makespan, j.end - result_.first_arrival);
    }
    return std::move(result_);
  }

 private:
  void AddNode(const Node& n) {
    capacity_by_node_[n.meta.name] = GpuCapacity(n);
    s_.OnNodeAdd(n);
    Recount();
  }
  static int64_t GpuCapacity(const Node& n) {
    const gpu::GpuInventory inv = gpu::ReadGpuInventory(n);
    return int64_t{inv.count} * gpu::kMilliPerGpu;
  }
  void Recount() {
    result_.capacity_milli = 0;
    for (const auto& [name, c] : capacity_by_node_) result_.capacity_milli += c;
  }

  // Moves virtual time to `t`: the allocation integral, and the samples passed on the way.
  void Advance(int64_t t) {
    while (next_sample_ <= std::min(t, sample_until_) && sample_error_.ok()) {
      sample_error_ = TakeSample(next_sample_);
      next_sample_ += sample_every_;
    }
    result_.allocated_milli_seconds += running_milli_ * (t - now_);
    const int64_t from = std::clamp(now_, result_.window_from, result_.window_to);
    const int64_t to = std::clamp(t, result_.window_from, result_.window_to);
    result_.window_allocated_milli_seconds += running_milli_ * (to - from);
    now_ = t;
    w_.clock.Set(At(t));
  }

  // Checks the cache's allocation against the jobs' bookkeeping; `keep` adds the point to the curves.
  absl::Status TakeSample(int64_t at, bool keep = true) {
    static const gpu::FragModel kNoWorkload;  // no fragmentation curve: 0
    w_.cache.UpdateSnapshot(snapshot_);
    const GpuReport gpus = ReportGpus(snapshot_, o_.frag != nullptr ? o_.frag : &kNoWorkload);
    Sample smp{.at = at, .allocated_milli = gpus.allocated_milli, .frag_milli = gpus.fragmented_milli,
               .evictions = result_.evictions};
    if (smp.allocated_milli != running_milli_) {
      return absl::InternalError(StrCat("at t=", at, "s the nodes hold ", smp.allocated_milli,
                                        " GPU milli but the running jobs ", running_milli_));
    }
    if (keep && !quota_tree_.empty()) smp.shares = Shares();
    if (keep) result_.samples.push_back(smp);
    return sample_error_;
  }

  // The Queue or Cohort (decoded already by ParseEventList) in the tree the shares are measured
  // against.
  void ApplyToQuotaTree(const nlohmann::json& object) {
    if (!object.is_object()) return;
    if (object.value("kind", "") == kCohortKind) {
      if (absl::StatusOr<Cohort> c = DecodeCohort(object); c.ok()) quota_tree_[c->name()] = TreeNodeOf(*c);
    } else if (absl::StatusOr<Queue> q = DecodeQueue(object); q.ok()) {
      quota_tree_[q->name()] = TreeNodeOf(*q);
    }
    result_.quota_tree.clear();
    for (const auto& [name, node] : quota_tree_) result_.quota_tree.push_back(node);
  }

  // The smaller of two requests, 0 standing for none.
  static int64_t SmallestOf(int64_t a, int64_t b) { return a == 0 ? b : b == 0 ? a : std::min(a, b); }

  // Each queue's usage (its running jobs' GPUs), demand (those and its pending jobs' requests)
  // and smallest waiting request, summed up the tree to the cohorts, and the entitlements they give.
  std::map<std::string, ShareSample> Shares() const {
    std::map<std::string, ShareSample> out;
    std::map<std::string, int64_t> demand;
    for (size_t i = 0; i < states_.size(); ++i) {
      const JobState& st = states_[i];
      if (!st.running && !st.pending) continue;
      ShareSample& q = out[in_.jobs[i].queue];
      q.usage_milli += st.running ? result_.jobs[i].gpu_milli : 0;
      q.demand_milli += st.running ? result_.jobs[i].gpu_milli : requested_milli_[i];
      if (!st.running) q.smallest_waiting_milli = SmallestOf(q.smallest_waiting_milli, requested_milli_[i]);
    }
    for (const auto& [name, q] : out) demand[name] = q.demand_milli;
    for (const auto& [name, node] : quota_tree_) {
      const ShareSample q = out[name];
      if (!node.queue) continue;
      // Up the parents (a cycle is cut at the tree's size).
      std::string up = node.parent;
      for (size_t depth = 0; !up.empty() && depth < quota_tree_.size(); ++depth) {
        ShareSample& c = out[up];
        c.usage_milli += q.usage_milli;
        c.demand_milli += q.demand_milli;
        c.smallest_waiting_milli = SmallestOf(c.smallest_waiting_milli, q.smallest_waiting_milli);
        auto parent = quota_tree_.find(up);
        up = parent == quota_tree_.end() ? "" : parent->second.parent;
      }
    }
    for (const auto& [name, e] : Entitlements(result_.quota_tree, demand, result_.capacity_milli)) {
      out[name].entitlement_milli = e;
    }
    MarkOwedRoom(out);
    // Only the tree's queues and cohorts (jobs of no Queue are left out).
    std::erase_if(out, [&](const auto& entry) {
      return entry.first.empty() ||
             (!quota_tree_.contains(entry.first) &&
              std::none_of(quota_tree_.begin(), quota_tree_.end(),
                           [&](const auto& node) { return node.second.parent == entry.first; }));
    });
    return out;
  }

  // Sets room_owed on each queue whose smallest waiting job fits within its entitlement and in
  // the room the others owe it on the nodes as this sample's snapshot holds them.
  void MarkOwedRoom(std::map<std::string, ShareSample>& shares) const {
    std::map<std::string, size_t> smallest;  // queue -> its smallest waiting job
    for (size_t i = 0; i < states_.size(); ++i) {
      if (!states_[i].pending) continue;
      auto it = shares.find(in_.jobs[i].queue);
      if (it == shares.end() || it->second.usage_milli + requested_milli_[i] > it->second.entitlement_milli) continue;
      auto [s, added] = smallest.emplace(in_.jobs[i].queue, i);
      if (!added && requested_milli_[i] < requested_milli_[s->second]) s->second = i;
    }
    if (smallest.empty()) return;
    std::vector<RoomNode> nodes;
    for (const NodeInfo* n : snapshot_.nodes()) {
      auto capacity = capacity_by_node_.find(n->node()->meta.name);
      RoomNode& r = nodes.emplace_back();
      r.free_milli = capacity == capacity_by_node_.end() ? 0 : capacity->second;
      for (const PodRef& pod : n->pods()) {
        const int64_t milli = gpu::ReadGpuRequest(*pod).total_milli();
        r.free_milli -= milli;
        auto job = by_key_.find(pod->Key());
        r.pods.emplace_back(job == by_key_.end() ? "" : in_.jobs[job->second].queue, milli);
      }
    }
    std::map<std::string, std::string> parent;
    for (const auto& [name, node] : quota_tree_) parent[name] = node.parent;
    const OwedRoom owed(std::move(parent), shares);
    for (const auto& [queue, i] : smallest) {
      std::vector<int64_t> pods;
      for (const Pod& p : in_.jobs[i].pods) pods.push_back(gpu::ReadGpuRequest(p).total_milli());
      shares[queue].room_owed = owed.Fits(queue, std::move(pods), nodes);
    }
  }

  void Handle(const TimelineEvent& e) {
    switch (e.kind) {
      case TimelineEvent::Kind::kChange: {
        const ClusterChange& c = in_.changes[e.index];
        switch (c.kind) {
          case ClusterChange::Kind::kNodeAdd: AddNode(c.node); break;
          case ClusterChange::Kind::kNodeRemove:
            capacity_by_node_.erase(c.name);
            s_.OnNodeDelete(c.name);
            Recount();
            break;
          case ClusterChange::Kind::kQuotaObject:
            (void)DeliverObject(s_, c.object).status();
            ApplyToQuotaTree(c.object);
            break;
          case ClusterChange::Kind::kPriorityClass: s_.OnPriorityClass(c.priority); break;
        }
        return;
      }
      case TimelineEvent::Kind::kArrival: {
        const TraceJob& j = in_.jobs[e.index];
        if (j.gang_object) (void)DeliverObject(s_, *j.gang_object);
        Submit(e.index);
        return;
      }
      case TimelineEvent::Kind::kCompletion: {
        JobState& st = states_[e.index];
        if (e.incarnation != st.incarnation || !st.running) return;  // interrupted meanwhile
        st.running = false;
        running_milli_ -= result_.jobs[e.index].gpu_milli;
        result_.jobs[e.index].end = now_;
        for (const std::string& key : st.keys) {
          by_key_.erase(key);
          w_.sim.EndPod(key);
        }
        return;
      }
    }
  }

  // Puts the job's pods in the queue (a new incarnation after an interruption: new names, as a
  // Job controller's replacements get).
  void Submit(size_t i) {
    const TraceJob& j = in_.jobs[i];
    JobState& st = states_[i];
    st.keys.clear();
    st.bound = 0;
    st.pending = true;
    ++pending_;
    for (size_t k = 0; k < j.pods.size(); ++k) {
      Pod p = j.pods[k];
      if (st.incarnation > 0) p.meta.name = StrCat(p.meta.name, "-r", st.incarnation);
      p.meta.uid = StrCat("job", i, "-", st.incarnation, "-", k);
      p.meta.creation_timestamp = At(now_);
      st.keys.push_back(p.Key());
      by_key_[p.Key()] = i;
      s_.OnPodAdd(std::move(p));
    }
  }

  // After scheduling: evicted jobs go back to the queue (first, so the allocation never counts a
  // victim beside its preemptor), then jobs whose pods are all bound start.
  void Settle(BindLog& log) {
    const std::vector<std::string>& evicted = w_.sim.evicted();
    for (; evicted_seen_ < evicted.size(); ++evicted_seen_) {
      const std::string& key = evicted[evicted_seen_];
      auto reason = log.victim_reason.find(key);
      const bool move = reason != log.victim_reason.end() && reason->second == kMoveReason;
      const std::string why = reason == log.victim_reason.end() || reason->second.empty() ? "other" : reason->second;
      if (reason != log.victim_reason.end()) log.victim_reason.erase(reason);
      auto it = by_key_.find(key);
      if (it == by_key_.end()) continue;
      ++result_.evictions;
      ++result_.evictions_by_reason[why];
      ++result_.jobs[it->second].pods_evicted;
      if (move) ++result_.moves;
      Interrupt(it->second, key, move);
    }
    for (const std::string& key : std::exchange(log.bound, {})) {
      auto it = by_key_.find(key);  // a pod of a job interrupted since is not found
      if (it == by_key_.end()) continue;
      const size_t i = it->second;
      JobState& st = states_[i];
      if (!st.pending || ++st.bound < st.keys.size()) continue;
      Start(i);
    }
  }

  void Start(size_t i) {
    JobState& st = states_[i];
    JobOutcome& out = result_.jobs[i];
    int64_t milli = 0;
    for (const std::string& key : st.keys) {
      std::optional<std::string> node = w_.cache.NodeOf(key);
      if (!node) continue;
      std::optional<NodeInfo> info = w_.cache.GetNodeInfo(*node);
      for (const PodRef& p : info->pods()) {
        if (p->Key() == key) milli += gpu::HeldGpuMilli(gpu::ReadGpuRequest(*p), info->gpus().inventory());
      }
    }
    out.gpu_milli = milli;
    running_milli_ += milli;
    result_.peak_allocated_milli = std::max(result_.peak_allocated_milli, running_milli_);
    if (out.start < 0) out.start = now_;
    st.pending = false;
    --pending_;
    st.running = true;
    st.run_start = now_;
    events_.push({now_ + st.remaining, seq_++, TimelineEvent::Kind::kCompletion, i, st.incarnation});
  }

  // A pod of the job was evicted: the job stops (a running one loses or keeps its progress) and
  // all its pods go back to the queue. (A job not started yet: a gang member bound and rolled
  // back.)
  void Interrupt(size_t i, const std::string& evicted_key, bool move) {
    JobState& st = states_[i];
    JobOutcome& out = result_.jobs[i];
    if (st.running) {
      const int64_t ran = now_ - st.run_start;
      st.running = false;
      running_milli_ -= out.gpu_milli;
      ++out.evictions;
      if (move) ++out.moves;
      if (o_.on_evict == OnEvict::kRestart) {
        const int64_t lost = ran * out.gpu_milli;
        out.lost_gpu_milli_seconds += lost;
        result_.lost_gpu_milli_seconds += lost;
        if (move) {
          out.lost_to_moves_gpu_milli_seconds += lost;
          result_.lost_to_moves_gpu_milli_seconds += lost;
        }
        st.remaining = in_.jobs[i].duration;
      } else {
        st.remaining -= ran;
      }
    } else if (st.pending) {
      st.pending = false;
      --pending_;
    }
    for (const std::string& key : st.keys) {
      by_key_.erase(key);
      if (key != evicted_key) w_.sim.EndPod(key);  // the rest of the job stops too
    }
    ++st.incarnation;
    Submit(i);
  }

  const TimelineInput& in_;
  const TimelineOptions& o_;
  SimWorld& w_;
  Scheduler& s_;
  std::vector<JobState> states_;
  std::priority_queue<TimelineEvent, std::vector<TimelineEvent>, std::greater<>> events_;
  std::map<std::string, size_t> by_key_;  // current pod key -> job
  std::map<std::string, int64_t> capacity_by_node_;
  std::vector<int64_t> requested_milli_;  // by job: the GPU milli its pods ask for
  std::map<std::string, QuotaTreeNode> quota_tree_;  // the Queues and Cohorts applied so far
  Snapshot snapshot_;  // the cache at the last sample
  TimelineResult result_;
  int64_t now_ = 0, seq_ = 0, pending_ = 0, running_milli_ = 0;
  int64_t sample_every_ = 1, next_sample_ = 0, sample_until_ = INT64_MAX;
  absl::Status sample_error_;
  size_t evicted_seen_ = 0;
};

}  // namespace

std::string SizeClassOf(const TraceJob& job, int64_t largest_node_gpus) {
  if (job.pods.size() > 1) return "gang";
  if (job.pods.empty()) return "cpu";
  const gpu::GpuRequest r = gpu::ReadGpuRequest(job.pods.front());
  if (!r.needs_devices()) return "cpu";
  if (r.kind == gpu::GpuRequest::Kind::kFraction) return "fractional";
  if (r.count >= largest_node_gpus && largest_node_gpus > 1) return "whole-node";
  if (r.count == 1) return "1";
  return "2-4";
}

int64_t MarkMovable(TimelineInput& input, const std::vector<std::string>& classes) {
  int64_t marked = 0;
  for (TraceJob& job : input.jobs) {
    if (job.pods.size() != 1 || std::find(classes.begin(), classes.end(), job.size_class) == classes.end()) continue;
    Pod& pod = job.pods.front();
    pod.meta.annotations[std::string(kMovableAnnotation)] = "true";
    // A controller's pod (a training operator's, which recreates it): its replacements after a
    // move are the same workload, for the move limit. Not a batch/v1 Job, which would make the
    // pod a gang member, nor a ReplicaSet, which default spreading would act on.
    if (pod.meta.owner_references.empty()) {
      pod.meta.owner_references.push_back({.api_version = "kubeflow.org/v1", .kind = "PyTorchJob", .name = job.id,
                                           .uid = StrCat("job-", job.id), .controller = true});
    }
    ++marked;
  }
  return marked;
}

absl::StatusOr<TimelineResult> SimulateTimeline(const TimelineInput& input, const TimelineOptions& options) {
  if (options.profile == nullptr) return absl::InvalidArgumentError("SimulateTimeline: no profile");
  const auto start = std::chrono::steady_clock::now();
  SchedulerConfig config;
  config.parallelism = 1;  // runs go in parallel instead
  BindLog log;
  auto world = SimWorld::New({.config = &config, .registry = options.registry, .defaults = options.profile,
                              .seed = options.seed, .observer = &log});
  if (!world.ok()) return world.status();
  (*world)->clock.Set(At(0));
  Simulation sim(input, options, **world);
  absl::StatusOr<TimelineResult> r = sim.Run(log);
  if (r.ok()) r->wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace tessel::bench
