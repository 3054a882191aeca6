// Test builders: compact pods, nodes and resource lists for table-driven tests.
//   Res("cpu:2,memory:4Gi,nvidia.com/gpu:1")
//   PodBuilder("train-0").Requests("cpu:1,nvidia.com/gpu:2").Priority(100).Build()
//   NodeBuilder("gpu-0").Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8,pods:110").Build()
#pragma once

#include <string>
#include <string_view>

#include "absl/strings/str_split.h"
#include "scheduler/api/objects.h"
#include "scheduler/api/resources.h"

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
  NodeBuilder& Label(std::string key, std::string value) {
    node_.meta.labels[key] = value;
    return *this;
  }
  NodeBuilder& Taint(std::string key, std::string value, TaintEffect effect) {
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
  Node Build() const { return node_; }

 private:
  Node node_;
};

}  // namespace tessel::testing
