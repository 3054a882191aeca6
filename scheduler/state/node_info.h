// What the scheduler knows about one node: the Node object, the pods that hold resources on it,
// and their summed requests. The cache owns the live copy; each scheduling cycle reads a
// snapshot copy, so plugins never see a node change under them.
//
// Invariant (checked by tests after every operation): requested() + Free() == allocatable.
// GPUs are also accounted per device (gpus(), see gpu_devices.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/api/objects.h"
#include "scheduler/gpu/gpu_devices.h"

namespace tessel {

using PodRef = std::shared_ptr<const Pod>;
using NodeRef = std::shared_ptr<const Node>;

class NodeInfo {
 public:
  NodeInfo() = default;
  explicit NodeInfo(NodeRef node) { SetNode(std::move(node)); }

  // Null for a node the cache knows only through pods bound to it ("ghost" node).
  const Node* node() const { return node_.get(); }
  const NodeRef& node_ref() const { return node_; }
  const std::string& name() const { return name_.empty() && node_ ? node_->name() : name_; }
  const std::vector<PodRef>& pods() const { return pods_; }

  const Resources& allocatable() const;
  // Sum of the requests of every pod on the node.
  const Resources& requested() const { return requested_; }
  // allocatable - requested, element-wise (negative only if the node shrank under its pods).
  Resources Free() const;
  // Free().milli_cpu, without building the whole Resources (GPU policies and measures read it
  // for every node).
  int64_t FreeMilliCpu() const { return allocatable().milli_cpu - requested_.milli_cpu; }
  // Free(), and the GPU room of the devices (gpu::AddGpuRoom): what the queue's room hints and
  // reservations compare a pod's need with.
  Resources Room() const;
  // Per-device GPU accounting of the pods on the node.
  const gpu::GpuDevices& gpus() const { return gpus_; }
  // Pods here with any pod (anti-)affinity term, and with a required anti-affinity term: the
  // snapshot sums them so that InterPodAffinity skips its walk over every pod when none has any.
  int32_t pods_with_affinity() const { return pods_with_affinity_; }
  int32_t pods_with_required_anti_affinity() const { return pods_with_required_anti_affinity_; }

  // Monotonic stamp from the cache; a snapshot copies nodes whose generation moved.
  int64_t generation() const { return generation_; }
  void set_generation(int64_t g) { generation_ = g; }

  void SetNode(NodeRef node);
  void set_name(std::string name) { name_ = std::move(name); }
  void AddPod(PodRef pod);
  // Removes the pod with this namespace/name; false if it was not here.
  bool RemovePod(std::string_view key);
  const Pod* FindPod(std::string_view key) const;

 private:
  NodeRef node_;
  std::string name_;
  std::vector<PodRef> pods_;
  Resources requested_;
  gpu::GpuDevices gpus_;
  int32_t pods_with_affinity_ = 0;
  int32_t pods_with_required_anti_affinity_ = 0;
  int64_t generation_ = 0;
};

}  // namespace tessel
