// Builders of pods, nodes and resource lists, shared by the tests and the benches (tessel_testing;
// nothing in the product includes this floor). Compact for table-driven tests:
//   Res("cpu:2,memory:4Gi,nvidia.com/gpu:1")
//   PodBuilder("train-0").Requests("cpu:1,nvidia.com/gpu:2").Priority(100).Build()
//   NodeBuilder("gpu-0").Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8,pods:110").Build()
// and exact for the benches' synthetic GPU nodes, field by field:
//   NodeBuilder("node-00042").Cpu(96000).Memory(int64_t{384} << 30).MaxPods(110)
//       .Gpus(8).GpuCount(8).GpuProduct("NVIDIA-A100-SXM4-80GB").CapacityIsAllocatable().Build()
// GPU nodes: Gpus(n) offers n whole GPUs (allocatable nvidia.com/gpu); TimeSliced(n, r) offers
// n GPUs of r replicas each, labelled as NVIDIA's GPU feature discovery labels a time-sliced
// node. Fractions and shares are the pods' (annotations, see PodBuilder::Annotation).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "absl/strings/str_split.h"
#include "scheduler/api/objects.h"
#include "scheduler/api/resources.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/util/strings.h"

namespace tessel::testing {

inline Resources Res(std::string_view spec) {
  Resources r;
  if (spec.empty()) return r;
  for (absl::string_view item : absl::StrSplit(std::string(spec), ',')) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits(':', 1));
    auto v = ParseResourceQuantity(kv.first, kv.second);
    if (!v.ok()) throw std::runtime_error(std::string(v.status().message()));
    r.Set(kv.first, *v);
  }
  return r;
}

class PodBuilder {
 public:
  explicit PodBuilder(std::string name, std::string ns = "default") {
    pod_.meta.name = std::move(name);
    pod_.meta.namespace_ = std::move(ns);
    pod_.scheduler_name = "tessel";
  }
  PodBuilder& Requests(std::string_view spec) {
    pod_.containers.push_back(Container{.name = "main", .requests = Res(spec)});
    return *this;
  }
  PodBuilder& Priority(int32_t p) {
    pod_.priority = p;
    return *this;
  }
  PodBuilder& Created(int64_t unix_seconds) {
    pod_.meta.creation_timestamp = absl::FromUnixSeconds(unix_seconds);
    return *this;
  }
  PodBuilder& Node(std::string node) {
    pod_.node_name = std::move(node);
    return *this;
  }
  PodBuilder& Selector(std::string key, std::string value) {
    pod_.node_selector[key] = value;
    return *this;
  }
  PodBuilder& Tolerate(Toleration t) {
    pod_.tolerations.push_back(std::move(t));
    return *this;
  }
  PodBuilder& Scheduler(std::string name) {
    pod_.scheduler_name = std::move(name);
    return *this;
  }
  PodBuilder& Annotation(std::string key, std::string value) {
    pod_.meta.annotations[std::move(key)] = std::move(value);
    return *this;
  }
  PodBuilder& Label(std::string key, std::string value) {
    pod_.meta.labels[std::move(key)] = std::move(value);
    return *this;
  }
  Pod& mutable_pod() { return pod_; }
  Pod Build() const {
    Pod p = pod_;
    p.requests = *ComputePodRequests(p);
    return p;
  }

 private:
  Pod pod_;
};

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name) {
    node_.meta.name = std::move(name);
    node_.ready = ConditionStatus::kTrue;
    node_.allocatable = Res("cpu:32,memory:128Gi,pods:110");
  }
  NodeBuilder& Allocatable(std::string_view spec) {
    node_.allocatable = Res(spec);
    if (node_.allocatable.pods == 0) node_.allocatable.pods = 110;
    return *this;
  }
  // One allocatable quantity at a time (exact integers, no parsing).
  NodeBuilder& Cpu(int64_t milli) {
    node_.allocatable.milli_cpu = milli;
    return *this;
  }
  NodeBuilder& Memory(int64_t bytes) {
    node_.allocatable.memory = bytes;
    return *this;
  }
  NodeBuilder& MaxPods(int64_t pods) {
    node_.allocatable.pods = pods;
    return *this;
  }
  // status.capacity equal to status.allocatable as it stands when built (else capacity is empty).
  NodeBuilder& CapacityIsAllocatable() {
    capacity_is_allocatable_ = true;
    return *this;
  }
  NodeBuilder& Uid(std::string uid) {
    node_.meta.uid = std::move(uid);
    return *this;
  }

  // GPUs. `count` whole GPUs: allocatable nvidia.com/gpu = count.
  NodeBuilder& Gpus(int64_t count) {
    node_.allocatable.Set(kNvidiaGpu, count * gpu::kMilliPerGpu);
    return *this;
  }
  // GPU feature discovery's labels: nvidia.com/gpu.count and nvidia.com/gpu.product.
  NodeBuilder& GpuCount(int64_t count) { return Label(std::string(gpu::kGpuCountLabel), StrCat(count)); }
  NodeBuilder& GpuProduct(std::string model) { return Label(std::string(gpu::kGpuProductLabel), std::move(model)); }
  // `count` GPUs of `replicas` time-sliced slots each: allocatable nvidia.com/gpu = count x
  // replicas, labelled nvidia.com/gpu.count, and (replicas > 1) nvidia.com/gpu.replicas and
  // nvidia.com/gpu.sharing-strategy=time-slicing. replicas 1 is an unshared GFD node.
  NodeBuilder& TimeSliced(int64_t count, int64_t replicas) {
    Gpus(count * replicas);
    GpuCount(count);
    if (replicas > 1) {
      Label(std::string(gpu::kGpuReplicasLabel), StrCat(replicas));
      Label(std::string(gpu::kGpuSharingStrategyLabel), "time-slicing");
    }
    return *this;
  }
  NodeBuilder& Label(std::string key, std::string value) {
    node_.meta.labels[key] = value;
    return *this;
  }
  NodeBuilder& Taint(std::string key, std::string value, TaintEffect effect = TaintEffect::kNoSchedule) {
    node_.taints.push_back({std::move(key), std::move(value), effect});
    return *this;
  }
  // status.allocatable "attachable-volumes-csi-<driver>: count".
  NodeBuilder& AttachLimit(std::string driver, int64_t count) {
    node_.attach_limits[std::move(driver)] = count;
    return *this;
  }
  NodeBuilder& Unschedulable() {
    node_.unschedulable = true;
    return *this;
  }
  NodeBuilder& Ready(ConditionStatus s) {
    node_.ready = s;
    return *this;
  }
  Node Build() const {
    Node n = node_;
    if (capacity_is_allocatable_) n.capacity = n.allocatable;
    return n;
  }

 private:
  Node node_;
  bool capacity_is_allocatable_ = false;
};

}  // namespace tessel::testing
