// Prometheus metrics for the live scheduler, in the text exposition format (version 0.0.4).
//
// MetricsRegistry holds counter and histogram families with labels, and gauges computed at
// scrape time by callbacks; Render() writes them all. SchedulerMetrics defines Tessel's
// metrics (names modelled on kube-scheduler's) and is also the SchedulingObserver that counts
// attempts:
//   scheduler_schedule_attempts_total{result,profile}          counter
//   scheduler_scheduling_attempt_duration_seconds{result,profile} histogram
//   scheduler_pending_pods{queue="active|backoff|unschedulable|gated"}  gauge
//   scheduler_preemption_victims{reason}                        histogram, victims per preemption
//   scheduler_preemption_attempts_total                         counter
//   tessel_gpu_allocatable / tessel_gpu_allocated               gauges, physical-GPU equivalents
//   tessel_gpu_fragmentation                                    gauge, physical-GPU equivalents (FGD)
//   scheduler_pod_scheduling_sli_duration_seconds{attempts}     histogram, first attempt to bind
//   scheduler_unschedulable_pods{plugin,profile}                gauge, parked pods by rejecting plugin
//   tessel_queue_nominal_quota / _usage / _borrowed / _lent{queue,cohort,resource}
//   tessel_queue_flavor_nominal_quota / _usage / _borrowed / _lent{queue,cohort,flavor,resource}
//   tessel_queue_pending_pods / tessel_queue_admitted_pods{queue,cohort}  gauges, per team Queue
//   tessel_pending_pods{queue,cohort,fit="after_change|never"}  gauge: could it ever fit here
//   tessel_pod_scheduling_duration_seconds{queue,cohort,priority}  histogram, creation to bind
//   tessel_queue_evictions_total{queue,cohort,reason="priority|reclaim|gang"}  counter
//   tessel_reservations{profile}                                gauge, nodes reserved (plugins/reservation)
//   tessel_reservations_made_total{profile}, tessel_reservations_released_total{profile,reason}  counters
//   tessel_build_info{version,compiler}                         gauge, 1
// docs/metrics.md explains each one.
//
//   MetricsRegistry registry;
//   SchedulerMetrics metrics(&registry, &scheduler);
//   std::string text = registry.Render();
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "plugins/queue_quota/queue_quota.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/quota/quota_usage.h"
#include "scheduler/report/cluster_report.h"
#include "scheduler/state/cache.h"
#include "scheduler/util/strings.h"

namespace tessel::server {

using Labels = std::vector<std::pair<std::string, std::string>>;

// `name{k="v",...}` with values escaped as the format requires.
std::string FormatSeries(std::string_view name, const Labels& labels);
// Numbers as Prometheus prints them: integers without a fraction, +Inf, NaN.
std::string FormatValue(double value);

class CounterFamily {
 public:
  void Inc(const std::vector<std::string>& label_values, double by = 1);
  double Get(const std::vector<std::string>& label_values) const;

 private:
  friend class MetricsRegistry;
  std::vector<std::string> label_names_;
  mutable absl::Mutex mu_;
  std::map<std::vector<std::string>, double> values_ ABSL_GUARDED_BY(mu_);
};

class HistogramFamily {
 public:
  void Observe(const std::vector<std::string>& label_values, double value);

 private:
  friend class MetricsRegistry;
  struct Series {
    std::vector<uint64_t> counts;  // per bucket, not cumulative
    uint64_t count = 0;
    double sum = 0;
  };
  std::vector<std::string> label_names_;
  std::vector<double> bounds_;
  mutable absl::Mutex mu_;
  std::map<std::vector<std::string>, Series> series_ ABSL_GUARDED_BY(mu_);
};

struct GaugeSample {
  Labels labels;
  double value = 0;
};

class MetricsRegistry {
 public:
  CounterFamily& Counter(std::string name, std::string help, std::vector<std::string> labels);
  HistogramFamily& Histogram(std::string name, std::string help, std::vector<std::string> labels,
                             std::vector<double> bounds);
  // A gauge whose samples are computed at every scrape.
  void Gauge(std::string name, std::string help, std::function<std::vector<GaugeSample>()> fn);
  // A counter kept elsewhere (a monotonic number read at every scrape).
  void CounterFunc(std::string name, std::string help, std::function<double()> fn);
  // Labelled counters kept elsewhere, read at every scrape.
  void CounterSamplesFunc(std::string name, std::string help,
                          std::function<std::vector<GaugeSample>()> fn);
  std::string Render() const;
  // Every series name a scrape may contain: counters and gauges by their name, histograms as
  // NAME_bucket, NAME_sum and NAME_count (what dashboards may query).
  std::vector<std::string> SeriesNames() const;

 private:
  struct Family {
    std::string name, help, type;
    std::unique_ptr<CounterFamily> counter;
    std::unique_ptr<HistogramFamily> histogram;
    std::function<std::vector<GaugeSample>()> gauge;
  };
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Family>> families_ ABSL_GUARDED_BY(mu_);
};

// The live cluster's report (scheduler/report/cluster_report.h): the cache's nodes now, the
// scheduler's team queues and its pending pods; fragmentation against the running pods' mix.
ClusterReport ReportCluster(Scheduler& scheduler);
// Only its queues (the admin API, Queue status), and with `cohorts` its cohort tree.
std::vector<QueueReport> ComputeQueueReports(Scheduler& scheduler, std::vector<CohortReport>* cohorts = nullptr);
// Fairness over time (QueueQuota args.usageHalfLifeSeconds): the QueueQuota plugins that decay
// usage, one per profile that has it on, and every queue's decayed usage as the first of them
// computed it (each sees the same cluster on the same clock). Empty when decay is off.
std::vector<queue_quota::QueueQuota*> DecayingQueueQuotas(const Scheduler& scheduler);
std::map<std::string, DecayedUsageRecord> DecayedUsageRecords(const Scheduler& scheduler);

// Whether a pending pod could ever fit in this cluster: some node's allocatable covers every
// resource it requests (a change, such as pods ending, may then make room); false means it
// never fits here as the nodes are (a bigger node must come).
bool FitsSomeNode(const Pod& pod, const std::vector<NodeInfo>& nodes);

// The version this binary was built as (CMake's project version), for --version and
// tessel_build_info.
std::string_view BuildVersion();

// Replaces the fragmentation measure (e.g. against a configured target workload); returning
// nullopt falls back to the cluster report's measure.
using GpuFragmentationFn = std::function<std::optional<double>(const Cache&)>;

// Whether this replica speaks for the cluster: true while it holds the leader lease (always,
// without leader election).
using LeadingFn = std::function<bool()>;

// An attempt that chose a node is counted, and its duration observed, when its binding cycle
// ends (as kube-scheduler's attempt duration covers binding): "scheduled" once the bind
// succeeded, "error" if it failed. Other attempts are counted when they finish.
//
// The gauges that describe the cluster rather than this process (pending pods, the Queues'
// quota and usage, the GPUs, unschedulable pods, reservations) have samples only while
// `leading` says so: a standby is fed the same pods and would export the same figures, and a
// dashboard that sums over replicas would count them twice (docs/metrics.md, "Leader-only
// gauges"). Their HELP and TYPE are always there. Counters and histograms count what this
// process did, so they sum over replicas as they are.
class SchedulerMetrics final : public SchedulingObserver {
 public:
  SchedulerMetrics(MetricsRegistry* registry, Scheduler* scheduler,
                   GpuFragmentationFn fragmentation = nullptr, LeadingFn leading = nullptr);

  void PodScheduled(const Pod& pod, const std::string& node) override;
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override;
  void AttemptFinished(const Pod& pod, AttemptResult result, absl::Duration latency) override;
  void PodsPreempted(const Pod& preemptor, const std::string& node,
                     const std::vector<PreemptionVictim>& victims) override;
  void PodRejected(const Pod& pod, const std::vector<std::string>& plugins) override;
  void GangMemberEvicted(const Pod& pod) override;

 private:
  // The pod's queue and cohort ("" for none), for labels.
  std::pair<std::string, std::string> QueueLabels(const Pod& pod) const;
  void CountEviction(const Pod& pod, std::string_view reason);
  // Ends an attempt whose binding cycle was running: counts and observes it.
  void BindingEnded(const Pod& pod, AttemptResult result);

  // Registers a gauge of the cluster's state: no samples unless Leading().
  void ClusterGauge(MetricsRegistry* registry, std::string name, std::string help,
                    std::function<std::vector<GaugeSample>()> fn);
  bool Leading() const { return !leading_ || leading_(); }

  Scheduler* scheduler_;
  GpuFragmentationFn fragmentation_;
  LeadingFn leading_;
  absl::Mutex mu_;
  // Pods in their binding cycle -> when their attempt started (a bind whose pod vanished
  // without an outcome is pruned after an hour).
  StringKeyedMap<absl::Time> binding_since_ ABSL_GUARDED_BY(mu_);
  // Pods not bound yet -> when their first attempt started and how many they had.
  struct Attempts {
    absl::Time first;
    int64_t count = 0;
  };
  StringKeyedMap<Attempts> attempts_by_pod_ ABSL_GUARDED_BY(mu_);
  // Parked pods -> the plugins that rejected them (pruned at each scrape).
  StringKeyedMap<std::vector<std::string>> rejected_by_ ABSL_GUARDED_BY(mu_);
  HistogramFamily* sli_duration_;
  HistogramFamily* creation_to_bind_;
  CounterFamily* evictions_;
  CounterFamily* attempts_;
  HistogramFamily* attempt_duration_;
  HistogramFamily* preemption_victims_;
  CounterFamily* preemption_attempts_;
};

}  // namespace tessel::server
