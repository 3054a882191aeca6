// Prometheus text rendering and Tessel's scheduler metrics.
#include "scheduler/server/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>

#include "plugins/reservation/reservation.h"
#include "scheduler/cmd/version.h"
#include "scheduler/quota/quota_usage.h"
#include "scheduler/report/dra_report.h"
#include "scheduler/util/strings.h"

namespace tessel::server {
namespace {

// Each profile's figures of its Reservation plugin, if it has one (plugins/reservation).
std::vector<std::pair<std::string, reservation::ReservationFigures>> ReservationFiguresByProfile(const Scheduler& s) {
  std::vector<std::pair<std::string, reservation::ReservationFigures>> out;
  for (const std::string& profile : s.ProfileNames()) {
    const Framework* fw = s.FrameworkFor(profile);
    const auto* plugin = fw == nullptr ? nullptr
                                       : dynamic_cast<const reservation::Reservation*>(
                                             fw->FindPlugin(reservation::Reservation::kName));
    if (plugin != nullptr) out.emplace_back(profile, plugin->figures());
  }
  return out;
}

// A gauge of one Resources field of a queue's (or a flavor's) report, by resource.
template <typename Report>
struct ResourceFieldGauge {
  const char* name;
  const char* help;
  Resources Report::*field;
};

}  // namespace

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return fmt::format("{}", static_cast<int64_t>(value));
  }
  return fmt::format("{}", value);
}

std::string FormatSeries(std::string_view name, const Labels& labels) {
  std::string out(name);
  if (labels.empty()) return out;
  out.push_back('{');
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out.push_back(',');
    first = false;
    StrAppend(&out, k, "=\"");
    for (char c : v) {
      if (c == '\\') out += "\\\\";
      else if (c == '"') out += "\\\"";
      else if (c == '\n') out += "\\n";
      else out.push_back(c);
    }
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

namespace {

Labels Zip(const std::vector<std::string>& names, const std::vector<std::string>& values) {
  Labels out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) out.emplace_back(names[i], values[i]);
  return out;
}

// Help text: backslashes and newlines escaped.
std::string EscapeHelp(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

}  // namespace

void CounterFamily::Inc(const std::vector<std::string>& label_values, double by) {
  absl::MutexLock lock(&mu_);
  values_[label_values] += by;
}

double CounterFamily::Get(const std::vector<std::string>& label_values) const {
  absl::MutexLock lock(&mu_);
  auto it = values_.find(label_values);
  return it == values_.end() ? 0 : it->second;
}

void HistogramFamily::Observe(const std::vector<std::string>& label_values, double value) {
  absl::MutexLock lock(&mu_);
  Series& s = series_[label_values];
  if (s.counts.empty()) s.counts.assign(bounds_.size(), 0);
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (value <= bounds_[i]) {
      ++s.counts[i];
      break;
    }
  }
  ++s.count;
  s.sum += value;
}

CounterFamily& MetricsRegistry::Counter(std::string name, std::string help,
                                        std::vector<std::string> labels) {
  auto f = std::make_unique<Family>();
  f->name = std::move(name);
  f->help = std::move(help);
  f->type = "counter";
  f->counter = std::make_unique<CounterFamily>();
  f->counter->label_names_ = std::move(labels);
  CounterFamily& ref = *f->counter;
  absl::MutexLock lock(&mu_);
  families_.push_back(std::move(f));
  return ref;
}

HistogramFamily& MetricsRegistry::Histogram(std::string name, std::string help,
                                            std::vector<std::string> labels,
                                            std::vector<double> bounds) {
  auto f = std::make_unique<Family>();
  f->name = std::move(name);
  f->help = std::move(help);
  f->type = "histogram";
  f->histogram = std::make_unique<HistogramFamily>();
  f->histogram->label_names_ = std::move(labels);
  f->histogram->bounds_ = std::move(bounds);
  HistogramFamily& ref = *f->histogram;
  absl::MutexLock lock(&mu_);
  families_.push_back(std::move(f));
  return ref;
}

void MetricsRegistry::Gauge(std::string name, std::string help,
                            std::function<std::vector<GaugeSample>()> fn) {
  auto f = std::make_unique<Family>();
  f->name = std::move(name);
  f->help = std::move(help);
  f->type = "gauge";
  f->gauge = std::move(fn);
  absl::MutexLock lock(&mu_);
  families_.push_back(std::move(f));
}

void MetricsRegistry::CounterFunc(std::string name, std::string help, std::function<double()> fn) {
  CounterSamplesFunc(std::move(name), std::move(help),
                     [fn = std::move(fn)] { return std::vector<GaugeSample>{{{}, fn()}}; });
}

void MetricsRegistry::CounterSamplesFunc(std::string name, std::string help,
                                         std::function<std::vector<GaugeSample>()> fn) {
  auto f = std::make_unique<Family>();
  f->name = std::move(name);
  f->help = std::move(help);
  f->type = "counter";
  f->gauge = std::move(fn);
  absl::MutexLock lock(&mu_);
  families_.push_back(std::move(f));
}

std::string MetricsRegistry::Render() const {
  absl::MutexLock lock(&mu_);
  std::string out;
  for (const auto& f : families_) {
    StrAppend(&out, "# HELP ", f->name, " ", EscapeHelp(f->help), "\n# TYPE ", f->name, " ",
              f->type, "\n");
    if (f->counter) {
      absl::MutexLock l(&f->counter->mu_);
      for (const auto& [values, v] : f->counter->values_) {
        StrAppend(&out, FormatSeries(f->name, Zip(f->counter->label_names_, values)), " ",
                  FormatValue(v), "\n");
      }
    } else if (f->histogram) {
      const HistogramFamily& h = *f->histogram;
      absl::MutexLock l(&h.mu_);
      for (const auto& [values, s] : h.series_) {
        Labels labels = Zip(h.label_names_, values);
        uint64_t cumulative = 0;
        for (size_t i = 0; i < h.bounds_.size(); ++i) {
          cumulative += s.counts[i];
          Labels with_le = labels;
          with_le.emplace_back("le", FormatValue(h.bounds_[i]));
          StrAppend(&out, FormatSeries(f->name + "_bucket", with_le), " ", cumulative, "\n");
        }
        Labels inf = labels;
        inf.emplace_back("le", "+Inf");
        StrAppend(&out, FormatSeries(f->name + "_bucket", inf), " ", s.count, "\n");
        StrAppend(&out, FormatSeries(f->name + "_sum", labels), " ", FormatValue(s.sum), "\n");
        StrAppend(&out, FormatSeries(f->name + "_count", labels), " ", s.count, "\n");
      }
    } else if (f->gauge) {
      for (const GaugeSample& s : f->gauge()) {
        StrAppend(&out, FormatSeries(f->name, s.labels), " ", FormatValue(s.value), "\n");
      }
    }
  }
  return out;
}

std::vector<std::string> MetricsRegistry::SeriesNames() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& f : families_) {
    if (f->histogram) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) out.push_back(f->name + suffix);
    } else {
      out.push_back(f->name);
    }
  }
  return out;
}

std::string_view BuildVersion() { return cmd::Version(); }

bool FitsSomeNode(const Pod& pod, const std::vector<NodeInfo>& nodes) {
  for (const NodeInfo& node : nodes) {
    bool fits = true;
    for (const auto& [name, amount] : pod.requests.Entries()) {
      if (amount > node.allocatable().Get(name)) {
        fits = false;
        break;
      }
    }
    if (fits) return true;
  }
  return false;
}

namespace {

std::vector<const Pod*> Pointers(const std::vector<PodRef>& pods) {
  std::vector<const Pod*> out;
  out.reserve(pods.size());
  for (const PodRef& p : pods) out.push_back(p.get());
  return out;
}

}  // namespace

ClusterReport ReportCluster(Scheduler& s) {
  Snapshot snapshot;
  s.cache().UpdateSnapshot(snapshot);
  std::shared_ptr<const QueueDirectory> directory = s.Queues();
  std::vector<PodRef> pending;
  if (directory != nullptr && !directory->queues().empty()) pending = s.PendingPods();
  return tessel::ReportCluster(snapshot, {.queues = directory.get(), .pending = Pointers(pending)});
}

std::vector<queue_quota::QueueQuota*> DecayingQueueQuotas(const Scheduler& scheduler) {
  std::vector<queue_quota::QueueQuota*> out;
  for (const std::string& profile : scheduler.ProfileNames()) {
    const Framework* fw = scheduler.FrameworkFor(profile);
    auto* plugin = fw != nullptr
                       ? dynamic_cast<queue_quota::QueueQuota*>(fw->FindPlugin(queue_quota::QueueQuota::kName))
                       : nullptr;
    if (plugin != nullptr && plugin->decays_usage()) out.push_back(plugin);
  }
  return out;
}

std::map<std::string, DecayedUsageRecord> DecayedUsageRecords(const Scheduler& scheduler) {
  std::map<std::string, DecayedUsageRecord> out;
  const std::vector<queue_quota::QueueQuota*> decaying = DecayingQueueQuotas(scheduler);
  if (decaying.empty()) return out;
  const std::optional<absl::Time> at = decaying.front()->DecayedAt();
  if (!at.has_value()) return out;
  for (auto& [queue, usage] : decaying.front()->DecayedUsage()) out[queue] = DecayedUsageRecord{usage, *at};
  return out;
}

std::vector<QueueReport> ComputeQueueReports(Scheduler& s, std::vector<CohortReport>* cohorts) {
  std::shared_ptr<const QueueDirectory> directory = s.Queues();
  if (directory == nullptr || directory->queues().empty()) return {};
  Snapshot snapshot;
  s.cache().UpdateSnapshot(snapshot);
  return ReportQueueUsage(snapshot, *directory, Pointers(s.PendingPods()), cohorts);
}

namespace {

// A resource amount in the unit people read: GPUs and CPUs whole (not milli), bytes, pods.
double InUnits(std::string_view resource, int64_t amount) {
  return IsMilliResource(resource) ? static_cast<double>(amount) / 1000.0
                                   : static_cast<double>(amount);
}

// Milli-GPU as GPUs.
double InGpus(int64_t milli) { return static_cast<double>(milli) / 1000.0; }

// One sample per resource of `nominal` or `amounts` (every resource of the nominal quota, even
// at 0, so a queue's series always exist), labelled `labels` and the resource.
void AppendPerResource(const Labels& labels, const Resources& nominal,
                       const Resources& amounts, std::vector<GaugeSample>& out) {
  std::map<std::string, int64_t> by_name;
  for (const auto& [name, amount] : nominal.Entries()) by_name[name] = 0;
  for (const auto& [name, amount] : amounts.Entries()) by_name[name] = amount;
  for (const auto& [name, amount] : by_name) {
    GaugeSample sample{labels, InUnits(name, amount)};
    sample.labels.emplace_back("resource", name);
    out.push_back(std::move(sample));
  }
}

std::vector<GaugeSample> PerResource(const std::vector<QueueReport>& reports,
                                     const Resources QueueReport::*field) {
  std::vector<GaugeSample> out;
  for (const QueueReport& r : reports) {
    AppendPerResource({{"queue", r.name}, {"cohort", r.cohort}}, r.nominal, r.*field, out);
  }
  return out;
}

// The same per flavor of each flavored queue (docs/flavors.md), labelled with the flavor too.
std::vector<GaugeSample> PerFlavorResource(const std::vector<QueueReport>& reports,
                                           const Resources FlavorReport::*field) {
  std::vector<GaugeSample> out;
  for (const QueueReport& r : reports) {
    for (const FlavorReport& f : r.flavors) {
      AppendPerResource({{"queue", r.name}, {"cohort", r.cohort}, {"flavor", f.name}}, f.nominal, f.*field, out);
    }
  }
  return out;
}

// The cohorts of the tree (docs/quota.md), labelled with the cohort and its path from the root
// ("org/research"), so a dashboard can sum or filter a subtree.
std::vector<GaugeSample> PerCohortResource(const std::vector<CohortReport>& cohorts,
                                           const Resources CohortReport::*field) {
  std::vector<GaugeSample> out;
  for (const CohortReport& c : cohorts) {
    AppendPerResource({{"cohort", c.name}, {"path", StrJoin(c.path, "/")}}, c.subtree, c.*field, out);
  }
  return out;
}

std::vector<GaugeSample> PerQueue(const std::vector<QueueReport>& reports,
                                  int64_t QueueReport::*field) {
  std::vector<GaugeSample> out;
  for (const QueueReport& r : reports) {
    out.push_back({{{"queue", r.name}, {"cohort", r.cohort}}, static_cast<double>(r.*field)});
  }
  return out;
}

// A preemption victim's reason (LowerPriority, or the victim policy's) as an eviction reason:
// quota's reclaim and fair-share evictions are "reclaim", the others "priority".
std::string_view EvictionReason(std::string_view victim_reason) {
  if (victim_reason == "Consolidation") return "move";
  return victim_reason == "reclaim" || victim_reason == "fair-share" ? "reclaim" : "priority";
}

// Seconds from 1 s to a day: how long pods wait for GPUs.
const std::vector<double> kWaitBuckets = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400};

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i, start *= factor) out.push_back(start);
  return out;
}

}  // namespace

void SchedulerMetrics::ClusterGauge(MetricsRegistry* registry, std::string name, std::string help,
                                    std::function<std::vector<GaugeSample>()> fn) {
  registry->Gauge(std::move(name), std::move(help), [this, fn = std::move(fn)] {
    return Leading() ? fn() : std::vector<GaugeSample>{};
  });
}

SchedulerMetrics::SchedulerMetrics(MetricsRegistry* registry, Scheduler* scheduler,
                                   GpuFragmentationFn fragmentation, LeadingFn leading)
    : scheduler_(scheduler), fragmentation_(std::move(fragmentation)), leading_(std::move(leading)) {
  attempts_ = &registry->Counter("scheduler_schedule_attempts_total",
                                 "Number of attempts to schedule pods, by the result. "
                                 "'unschedulable' means a pod could not be scheduled, while "
                                 "'error' means an internal scheduler problem.",
                                 {"result", "profile"});
  attempt_duration_ = &registry->Histogram(
      "scheduler_scheduling_attempt_duration_seconds",
      "Scheduling attempt latency in seconds (scheduling algorithm + binding)", {"result", "profile"},
      {0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096,
       8.192, 16.384});
  preemption_victims_ = &registry->Histogram(
      "scheduler_preemption_victims",
      "Number of selected preemption victims, per preemption, by why they were eligible "
      "('LowerPriority', or the reason a victim policy such as quota reclaim gave)",
      {"reason"}, {1, 2, 4, 8, 16, 32, 64});
  preemption_attempts_ = &registry->Counter("scheduler_preemption_attempts_total",
                                            "Preemptions that evicted pods", {});
  ClusterGauge(registry, "scheduler_pending_pods",
               "Number of pending pods, by the queue type. 'active' means number of pods in "
               "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means "
               "number of pods in unschedulablePods.",
               [this] {
                 QueueStats s = scheduler_->queue().Stats();
                 return std::vector<GaugeSample>{
                     {{{"queue", "active"}}, static_cast<double>(s.active)},
                     {{{"queue", "backoff"}}, static_cast<double>(s.backoff)},
                     {{{"queue", "unschedulable"}}, static_cast<double>(s.unschedulable)}};
               });
  // The GPU and queue gauges share one cluster report per scrape, taken by the first of them
  // (none while not leading: the others then have no samples either, even if this replica
  // became the leader in the middle of the scrape).
  auto report = std::make_shared<std::optional<ClusterReport>>();
  registry->Gauge("tessel_gpu_allocatable", "Allocatable GPUs in the cluster, in physical-GPU equivalents",
                  [this, report] {
                    report->reset();
                    if (!Leading()) return std::vector<GaugeSample>{};
                    *report = ReportCluster(*scheduler_);
                    return std::vector<GaugeSample>{{{}, InGpus((*report)->gpus.capacity_milli)}};
                  });
  // A gauge read from this scrape's report, and one per Queue (Per*(queues, field)).
  auto from_report = [report](auto fn) {
    return [report, fn] { return report->has_value() ? fn(**report) : std::vector<GaugeSample>{}; };
  };
  auto per_queue = [from_report](auto per, auto field) {
    return from_report([per, field](const ClusterReport& r) { return per(r.queues, field); });
  };
  ClusterGauge(registry, "tessel_gpu_allocated",
               "GPUs requested by pods placed on nodes, in physical-GPU equivalents",
               from_report([](const ClusterReport& r) {
                 return std::vector<GaugeSample>{{{}, InGpus(r.gpus.allocated_milli)}};
               }));
  ClusterGauge(registry, "tessel_dra_devices",
               "Devices of Dynamic Resource Allocation by driver: published in ResourceSlices (each pool's "
               "newest generation) and allocated to ResourceClaims (a shared device once, admin access not)",
               [this] {
                 std::vector<GaugeSample> out;
                 std::shared_ptr<const ClusterObjects> objects = scheduler_->Objects();
                 if (objects == nullptr) return out;
                 for (const auto& [driver, count] : ReportDraDevices(*objects)) {
                   out.push_back({{{"driver", driver}, {"state", "published"}}, static_cast<double>(count.published)});
                   out.push_back({{{"driver", driver}, {"state", "allocated"}}, static_cast<double>(count.allocated)});
                 }
                 return out;
               });
  ClusterGauge(registry, "tessel_gpu_fragmentation",
               "Idle GPUs that the pods running in the cluster could not use where they sit (FGD's "
               "fragmentation, weighted by the running pods' mix), in physical-GPU equivalents",
               from_report([this](const ClusterReport& r) {
                 std::optional<double> f;
                 if (fragmentation_) f = fragmentation_(scheduler_->cache());
                 return std::vector<GaugeSample>{{{}, f.value_or(InGpus(r.gpus.fragmented_milli))}};
               }));
  // Team queues (docs/quota.md), then per flavor of a flavored queue (docs/flavors.md; the
  // queue's own gauges hold the sums over its flavors), then its pods.
  for (const ResourceFieldGauge<QueueReport>& g : std::initializer_list<ResourceFieldGauge<QueueReport>>{
           {"tessel_queue_nominal_quota",
            "Nominal quota of each Queue, by resource (GPUs in physical-GPU equivalents)", &QueueReport::nominal},
           {"tessel_queue_usage",
            "What the pods of each Queue placed on nodes request, by resource (GPUs in physical-GPU equivalents)",
            &QueueReport::usage},
           {"tessel_queue_borrowed",
            "How far each Queue's usage is above its nominal quota (borrowed from its cohort), by resource",
            &QueueReport::borrowed},
           {"tessel_queue_lent", "What the cohort borrows of each Queue's unused nominal quota, by resource",
            &QueueReport::lent}}) {
    ClusterGauge(registry, g.name, g.help, per_queue(PerResource, g.field));
  }
  ClusterGauge(registry, "tessel_queue_decayed_usage",
               "Each Queue's usage decayed with the QueueQuota half-life usageHalfLifeSeconds, by resource "
               "(GPUs in physical-GPU equivalents; no samples while decay is off)",
               from_report([this](const ClusterReport& r) {
                 std::vector<GaugeSample> out;
                 const std::map<std::string, DecayedUsageRecord> decayed = DecayedUsageRecords(*scheduler_);
                 if (decayed.empty()) return out;
                 for (const QueueReport& q : r.queues) {
                   auto it = decayed.find(q.name);
                   AppendPerResource({{"queue", q.name}, {"cohort", q.cohort}}, q.nominal,
                                     it != decayed.end() ? it->second.decayed : Resources{}, out);
                 }
                 return out;
               }));
  for (const ResourceFieldGauge<FlavorReport>& g : std::initializer_list<ResourceFieldGauge<FlavorReport>>{
           {"tessel_queue_flavor_nominal_quota",
            "Nominal quota of each flavor of a flavored Queue, by resource (GPUs in physical-GPU equivalents)",
            &FlavorReport::nominal},
           {"tessel_queue_flavor_usage",
            "What the pods of a flavored Queue on each flavor's nodes request, by resource", &FlavorReport::usage},
           {"tessel_queue_flavor_borrowed",
            "How far a flavored Queue's usage of each flavor is above its nominal quota there, by resource",
            &FlavorReport::borrowed},
           {"tessel_queue_flavor_lent",
            "What the cohort borrows of a flavored Queue's unused nominal quota of each flavor, by resource",
            &FlavorReport::lent}}) {
    ClusterGauge(registry, g.name, g.help, per_queue(PerFlavorResource, g.field));
  }
  for (const ResourceFieldGauge<CohortReport>& g : std::initializer_list<ResourceFieldGauge<CohortReport>>{
           {"tessel_cohort_subtree_quota",
            "Quota of each cohort's subtree: its own and what its children lend it, by resource", &CohortReport::subtree},
           {"tessel_cohort_usage", "What the queues below each cohort use, by resource", &CohortReport::usage},
           {"tessel_cohort_borrowed", "How far each cohort's subtree is above its quota (borrowed from its parent), by resource",
            &CohortReport::borrowed}}) {
    ClusterGauge(registry, g.name, g.help, from_report([field = g.field](const ClusterReport& r) {
                   return PerCohortResource(r.cohorts, field);
                 }));
  }
  ClusterGauge(registry, "tessel_cohort_decayed_usage",
               "The decayed usage of the queues below each cohort (tessel_queue_decayed_usage summed), by "
               "resource (no samples while decay is off)",
               from_report([this](const ClusterReport& r) {
                 std::vector<GaugeSample> out;
                 const std::map<std::string, DecayedUsageRecord> decayed = DecayedUsageRecords(*scheduler_);
                 if (decayed.empty()) return out;
                 for (const CohortReport& c : r.cohorts) {
                   AppendPerResource({{"cohort", c.name}, {"path", StrJoin(c.path, "/")}}, c.subtree,
                                     DecayedUsageBelow(decayed, r.cohorts, r.queues, c.name).decayed, out);
                 }
                 return out;
               }));
  ClusterGauge(registry, "tessel_cohort_weighted_share",
               "Each cohort's weighted dominant share among its siblings (1 = it borrows all its parent lends)",
               from_report([](const ClusterReport& r) {
                 std::vector<GaugeSample> out;
                 for (const CohortReport& c : r.cohorts) {
                   out.push_back({{{"cohort", c.name}, {"path", StrJoin(c.path, "/")}},
                                  static_cast<double>(c.weighted_share_milli) / 1000.0});
                 }
                 return out;
               }));
  ClusterGauge(registry, "tessel_queue_pending_pods",
               "Pods of each Queue waiting to be scheduled (gang members included)",
               per_queue(PerQueue, &QueueReport::pending_pods));
  ClusterGauge(registry, "tessel_queue_admitted_pods", "Pods of each Queue on nodes (bound or being bound)",
               per_queue(PerQueue, &QueueReport::admitted_pods));
  ClusterGauge(
      registry, "tessel_pending_pods",
      "Pods waiting to be scheduled, by Queue ('' for none) and whether some node's allocatable "
      "could hold them ('after_change': they wait for room; 'never': no node of this cluster "
      "is big enough)",
      [this] {
        std::vector<NodeInfo> nodes;
        for (const std::string& name : scheduler_->cache().NodeNames()) {
          if (std::optional<NodeInfo> info = scheduler_->cache().GetNodeInfo(name)) {
            nodes.push_back(*std::move(info));
          }
        }
        std::shared_ptr<const QueueDirectory> directory = scheduler_->Queues();
        std::map<std::vector<std::string>, int64_t> counts;
        for (const PodRef& pod : scheduler_->PendingPods()) {
          const Queue* q = directory ? directory->QueueFor(*pod).queue : nullptr;
          counts[{q ? q->name() : "", q ? q->cohort : "",
                  FitsSomeNode(*pod, nodes) ? "after_change" : "never"}]++;
        }
        std::vector<GaugeSample> out;
        for (const auto& [labels, n] : counts) {
          out.push_back({{{"queue", labels[0]}, {"cohort", labels[1]}, {"fit", labels[2]}},
                         static_cast<double>(n)});
        }
        return out;
      });
  ClusterGauge(registry, "scheduler_unschedulable_pods",
               "The number of unschedulable pods broken down by plugin name. A pod will "
               "increment the gauge for all plugins that caused it to not schedule and so "
               "this metric have meaning only when broken down by plugin.",
               [this] {
                 const std::vector<std::string> parked = scheduler_->queue().UnschedulableKeys();
                 StringSet keys(parked.begin(), parked.end());
                 std::map<std::pair<std::string, std::string>, int64_t> counts;
                 absl::MutexLock lock(&mu_);
                 std::erase_if(rejected_by_, [&](const auto& kv) { return !keys.contains(kv.first); });
                 for (const auto& [key, plugins] : rejected_by_) {
                   // plugins[0] is the profile (see PodRejected).
                   for (size_t i = 1; i < plugins.size(); ++i) ++counts[{plugins[i], plugins[0]}];
                 }
                 std::vector<GaugeSample> out;
                 for (const auto& [k, n] : counts) {
                   out.push_back({{{"plugin", k.first}, {"profile", k.second}}, static_cast<double>(n)});
                 }
                 return out;
               });
  sli_duration_ = &registry->Histogram(
      "scheduler_pod_scheduling_sli_duration_seconds",
      "E2e latency for a pod being scheduled, from the start of its first scheduling attempt "
      "to its bind, over all its attempts",
      {"attempts"}, ExponentialBuckets(0.01, 2, 20));
  creation_to_bind_ = &registry->Histogram(
      "tessel_pod_scheduling_duration_seconds",
      "Time from a pod's creation to its bind, by Queue ('' for none) and priority",
      {"queue", "cohort", "priority"}, kWaitBuckets);
  evictions_ = &registry->Counter(
      "tessel_queue_evictions_total",
      "Pods evicted by the scheduler, by the victim's Queue ('' for none) and why: 'priority' "
      "(preempted by a more important pod), 'reclaim' (quota reclaimed by its cohort), 'gang' "
      "(a gang rolled back)",
      {"queue", "cohort", "reason"});
  // Reservations against starvation (docs/defrag.md), per profile.
  ClusterGauge(registry, "tessel_reservations", "Nodes reserved for pods that waited too long, by profile",
               [this] {
                 std::vector<GaugeSample> out;
                 for (const auto& [profile, f] : ReservationFiguresByProfile(*scheduler_)) {
                   out.push_back({{{"profile", profile}}, static_cast<double>(f.active)});
                 }
                 return out;
               });
  registry->CounterSamplesFunc("tessel_reservations_made_total", "Reservations made, by profile", [this] {
                                 std::vector<GaugeSample> out;
                                 for (const auto& [profile, f] : ReservationFiguresByProfile(*scheduler_)) {
                                   out.push_back({{{"profile", profile}}, static_cast<double>(f.made)});
                                 }
                                 return out;
                               });
  registry->CounterSamplesFunc(
      "tessel_reservations_released_total",
      "Reservations ended, by profile and why: 'Placed' (the pod was placed), 'NoFit' (the node "
      "can no longer take it), 'Expired' (the pod stopped failing: deleted, nominated, or over quota)",
      [this] {
        std::vector<GaugeSample> out;
        for (const auto& [profile, f] : ReservationFiguresByProfile(*scheduler_)) {
          for (const auto& [reason, n] : f.released) {
            out.push_back({{{"profile", profile}, {"reason", reason}}, static_cast<double>(n)});
          }
        }
        return out;
      });
  registry->Gauge("tessel_build_info", "The build of this tessel-scheduler (always 1)", [] {
    return std::vector<GaugeSample>{
        {{{"version", std::string(BuildVersion())}, {"compiler", __VERSION__}}, 1}};
  });
}

std::pair<std::string, std::string> SchedulerMetrics::QueueLabels(const Pod& pod) const {
  std::shared_ptr<const QueueDirectory> directory = scheduler_->Queues();
  const Queue* q = directory ? directory->QueueFor(pod).queue : nullptr;
  if (q == nullptr) return {"", ""};
  return {q->name(), q->cohort};
}

void SchedulerMetrics::CountEviction(const Pod& pod, std::string_view reason) {
  auto [queue, cohort] = QueueLabels(pod);
  evictions_->Inc({queue, cohort, std::string(reason)});
}

void SchedulerMetrics::PodRejected(const Pod& pod, const std::vector<std::string>& plugins) {
  std::vector<std::string> entry{pod.scheduler_name};
  for (const std::string& p : plugins) {
    if (!p.empty() && std::find(entry.begin() + 1, entry.end(), p) == entry.end()) entry.push_back(p);
  }
  absl::MutexLock lock(&mu_);
  rejected_by_[pod.Key()] = std::move(entry);
}

void SchedulerMetrics::GangMemberEvicted(const Pod& pod) { CountEviction(pod, "gang"); }

void SchedulerMetrics::AttemptFinished(const Pod& pod, AttemptResult result,
                                       absl::Duration latency) {
  if (result == AttemptResult::kScheduled) {
    // A node was chosen; the attempt ends with the binding cycle.
    const absl::Time now = scheduler_->clock().Now();
    absl::MutexLock lock(&mu_);
    if (binding_since_.size() > 100000) {
      std::erase_if(binding_since_, [&](const auto& kv) { return now - kv.second > absl::Hours(1); });
    }
    binding_since_[pod.Key()] = now - latency;
    Attempts& a = attempts_by_pod_[pod.Key()];
    if (a.count++ == 0) a.first = now - latency;
    return;
  }
  {
    const absl::Time now = scheduler_->clock().Now();
    absl::MutexLock lock(&mu_);
    if (attempts_by_pod_.size() > 100000) {  // pods deleted while pending
      std::erase_if(attempts_by_pod_, [&](const auto& kv) { return now - kv.second.first > absl::Hours(24); });
    }
    Attempts& a = attempts_by_pod_[pod.Key()];
    if (a.count++ == 0) a.first = now - latency;
  }
  std::vector<std::string> labels{std::string(AttemptResultName(result)), pod.scheduler_name};
  attempts_->Inc(labels);
  attempt_duration_->Observe(labels, absl::ToDoubleSeconds(latency));
}

void SchedulerMetrics::BindingEnded(const Pod& pod, AttemptResult result) {
  absl::Time since;
  {
    absl::MutexLock lock(&mu_);
    auto it = binding_since_.find(pod.Key());
    if (it == binding_since_.end()) return;
    since = it->second;
    binding_since_.erase(it);
  }
  std::vector<std::string> labels{std::string(AttemptResultName(result)), pod.scheduler_name};
  attempts_->Inc(labels);
  attempt_duration_->Observe(labels, absl::ToDoubleSeconds(scheduler_->clock().Now() - since));
}

void SchedulerMetrics::PodScheduled(const Pod& pod, const std::string&) {
  BindingEnded(pod, AttemptResult::kScheduled);
  const absl::Time now = scheduler_->clock().Now();
  std::optional<Attempts> attempts;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = attempts_by_pod_.find(pod.Key()); it != attempts_by_pod_.end()) {
      attempts = it->second;
      attempts_by_pod_.erase(it);
    }
    rejected_by_.erase(pod.Key());
  }
  if (attempts.has_value()) {
    sli_duration_->Observe({StrCat(attempts->count)}, absl::ToDoubleSeconds(now - attempts->first));
  }
  auto [queue, cohort] = QueueLabels(pod);
  creation_to_bind_->Observe({queue, cohort, StrCat(pod.PriorityValue())},
                             absl::ToDoubleSeconds(now - pod.meta.creation_timestamp));
}

void SchedulerMetrics::PodUnschedulable(const Pod& pod, FailureKind kind, const std::string&) {
  // A failure of the binding cycle (or a Permit rejection) ends the attempt that chose a node.
  if (kind == FailureKind::kBindFailed || kind == FailureKind::kUnschedulable ||
      kind == FailureKind::kQuotaExceeded || kind == FailureKind::kWaitingForProvisioning) {
    BindingEnded(pod, kind == FailureKind::kBindFailed ? AttemptResult::kError : AttemptResult::kUnschedulable);
  }
}

void SchedulerMetrics::PodsPreempted(const Pod&, const std::string&,
                                     const std::vector<PreemptionVictim>& victims) {
  if (victims.empty()) return;
  preemption_attempts_->Inc({});
  std::map<std::string, int64_t> by_reason;
  for (const PreemptionVictim& v : victims) {
    ++by_reason[v.reason];
    CountEviction(*v.pod, EvictionReason(v.reason));
  }
  for (const auto& [reason, n] : by_reason) {
    preemption_victims_->Observe({reason}, static_cast<double>(n));
  }
}

}  // namespace tessel::server
