// Prometheus metrics for the live scheduler, in the text exposition format (version 0.0.4).
//
// MetricsRegistry holds counter and histogram families with labels, and gauges computed at
// scrape time by callbacks; Render() writes them all. SchedulerMetrics defines Tessel's
// metrics (names modelled on kube-scheduler's) and is also the SchedulingObserver that counts
// attempts:
//   scheduler_schedule_attempts_total{result,profile}          counter
//   scheduler_scheduling_attempt_duration_seconds{result,profile} histogram
//   scheduler_pending_pods{queue="active|backoff|unschedulable|gated"}  gauge
//   scheduler_preemption_victims                                histogram (RecordPreemption)
//   tessel_gpu_allocatable / tessel_gpu_allocated               gauges, physical-GPU equivalents
//   tessel_gpu_fragmentation                                    gauge 0..1 (see GpuFragmentationFn)
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
#include "scheduler/core/scheduler.h"
#include "scheduler/state/cache.h"

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
  std::string Render() const;

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

// Physical-GPU accounting read from the cache. Time-slicing and MPS replicas count as
// 1/replicas of a GPU (node label nvidia.com/gpu.replicas), so 4 replicas of one GPU are 1 GPU.
struct GpuTotals {
  double allocatable = 0;
  double allocated = 0;
  // Free GPUs on nodes that are partly used, as a fraction of all free GPUs (0 when none free):
  // a simple stand-in until the GPU layer provides a device-level measure.
  double fragmentation = 0;
};
GpuTotals ComputeGpuTotals(const Cache& cache);

// The hook for a better fragmentation measure (the GPU layer sets it); returning nullopt
// falls back to ComputeGpuTotals' estimate.
using GpuFragmentationFn = std::function<std::optional<double>(const Cache&)>;

class SchedulerMetrics final : public SchedulingObserver {
 public:
  SchedulerMetrics(MetricsRegistry* registry, Scheduler* scheduler,
                   GpuFragmentationFn fragmentation = nullptr);

  void PodScheduled(const Pod&, const std::string&) override {}
  void PodUnschedulable(const Pod&, FailureKind, const std::string&) override {}
  void AttemptFinished(const Pod& pod, std::string_view result, absl::Duration latency) override;
  // A preemption evicted `victims` pods (called by the preemption layer).
  void RecordPreemption(int victims);

 private:
  Scheduler* scheduler_;
  GpuFragmentationFn fragmentation_;
  CounterFamily* attempts_;
  HistogramFamily* attempt_duration_;
  HistogramFamily* preemption_victims_;
};

}  // namespace tessel::server
