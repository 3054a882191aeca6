// Per-device GPU accounting for one node: which physical GPUs a node has (from NVIDIA GPU
// feature discovery labels), what each pod asks for (whole GPUs, a fraction of one GPU,
// time-slicing replicas, MIG slices), and which devices each pod holds.
//
// Every physical GPU is a device of 1000 milli-GPU, and every number here is an exact integer:
//   - a whole-GPU request takes whole free devices (1000 milli each);
//   - a fractional request (annotation tessel.io/gpu-milli: 1..999 with nvidia.com/gpu: 1)
//     takes that many milli on one device;
//   - on a time-sliced or MPS node with R replicas per GPU, each replica is a slot of a device,
//     and each GPU a pod asks for is one slot (nvidia.com/gpu there *is* a replica, as the
//     NVIDIA device plugin advertises it); u used slots count as floor(u * 1000 / R) milli, so
//     R slots are exactly 1000;
//   - MIG slices nvidia.com/mig-<N>g.<M>gb count N/7 of a GPU, for metrics only (the device
//     plugin hands them out as ordinary extended resources).
// Invariant, for every device after every operation: AllocatedMilli(i) + FreeMilli(i) == 1000.
// A pod that fits on no device (bound elsewhere to an overcommitted node, or a nominated pod
// added to a copy of the node) is counted as unplaced; a demand fits only where the devices
// have room for it and the free total still covers it after what is unplaced (the per-device
// analogue of kube-scheduler's sum of requests).
//
//   GpuDevices gpus(ReadGpuInventory(node));
//   GpuDemand d = DemandOn(ReadGpuRequest(pod), gpus.inventory());
//   if (auto choice = gpus.DefaultChoice(d)) gpus.Add(pod_ptr, d, *choice);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/api/device_list.h"
#include "scheduler/api/objects.h"

namespace tessel::gpu {

inline constexpr int64_t kMilliPerGpu = 1000;
// MIG slices are measured in sevenths of a GPU (a 1g slice is 1/7 of an A100/H100).
inline constexpr int64_t kMigSlicesPerGpu = 7;

// Pod annotations.
inline constexpr std::string_view kGpuMilliAnnotation = "tessel.io/gpu-milli";
inline constexpr std::string_view kGpuSharingAnnotation = "tessel.io/gpu-sharing";
inline constexpr std::string_view kGpuSharingAllowed = "allowed";  // values of kGpuSharingAnnotation
inline constexpr std::string_view kGpuSharingNever = "never";
inline constexpr std::string_view kGpuMemoryAnnotation = "tessel.io/gpu-memory";
// NVIDIA GPU feature discovery node labels.
inline constexpr std::string_view kGpuCountLabel = "nvidia.com/gpu.count";
inline constexpr std::string_view kGpuReplicasLabel = "nvidia.com/gpu.replicas";
inline constexpr std::string_view kGpuSharingStrategyLabel = "nvidia.com/gpu.sharing-strategy";
inline constexpr std::string_view kGpuProductLabel = "nvidia.com/gpu.product";
inline constexpr std::string_view kGpuMemoryLabel = "nvidia.com/gpu.memory";  // MiB

enum class SharingStrategy { kNone, kTimeSlicing, kMps };
std::string_view SharingStrategyName(SharingStrategy s);

// What a node offers, read from its labels and allocatable resources.
struct GpuInventory {
  int32_t count = 0;        // physical GPUs
  int32_t replicas = 1;     // slots per GPU; > 1 only when shared
  SharingStrategy strategy = SharingStrategy::kNone;
  std::string product;      // nvidia.com/gpu.product ("" when unknown)
  int64_t memory_bytes = 0; // per GPU; 0 when unknown
  // The resource replicas are advertised under: nvidia.com/gpu, or nvidia.com/gpu.shared when
  // the device plugin renames them.
  std::string_view replica_resource = "nvidia.com/gpu";
  int64_t mig_sevenths = 0; // allocatable MIG slices, in sevenths of a GPU

  bool shared() const { return replicas > 1; }
  int64_t capacity_milli() const { return int64_t{count} * kMilliPerGpu; }
  bool operator==(const GpuInventory&) const = default;
};

// GFD labels first; a node without nvidia.com/gpu.count falls back to its allocatable
// nvidia.com/gpu, counted as whole, unshared GPUs.
GpuInventory ReadGpuInventory(const Node& node);

// What a pod asks for, independent of the node.
struct GpuRequest {
  // Devices (kWhole), replicas (kReplicas: nvidia.com/gpu.shared), or one device's share.
  enum class Kind { kNone, kWhole, kFraction, kReplicas };
  // What the pod says about shared (time-sliced, MPS) GPUs: nothing (it takes a replica where
  // the node's nvidia.com/gpu are replicas, but prefers an exclusive GPU), allowed (prefers
  // shared room), or never (stays off shared GPUs).
  enum class Sharing { kUnstated, kAllowed, kNever };
  Kind kind = Kind::kNone;
  int32_t count = 0;          // kWhole: GPUs; kReplicas: replicas; kFraction: 1
  int64_t milli = 0;          // kFraction: milli-GPU on one device (1..999)
  // tessel.io/gpu-sharing: allowed | never; a request for nvidia.com/gpu.shared is allowed.
  Sharing sharing = Sharing::kUnstated;
  int64_t memory_bytes = 0;   // tessel.io/gpu-memory hint; 0 = none
  int64_t mig_sevenths = 0;   // MIG slices requested, in sevenths of a GPU
  std::string error;          // a malformed annotation; the pod is unschedulable until fixed

  bool needs_devices() const { return kind != Kind::kNone; }
  bool opt_in() const { return sharing == Sharing::kAllowed; }
  // GPU-equivalent milli the pod holds on an unshared node (what the FGD paper calls its GPU
  // request: num_gpu * gpu_milli).
  int64_t total_milli() const;
};
GpuRequest ReadGpuRequest(const Pod& pod);

// The GPU room of a node, for the queue's hints by room (a pod leaving a node helps a parked
// pod only where the room holds what it needs), as two scalars beside allocatable - requested:
//   kRoomGpuUnits  what a whole-GPU or replica request can take: on an unshared node the fully
//                  free devices (and no more than the free total less what unplaced pods hold),
//                  on a shared node the free replica slots (less the unplaced ones), x 1000;
//   kRoomGpuMilli  what a fraction can take: the free total less the unplaced on an unshared
//                  node, the free slots x 1000 on a shared one.
// AddGpuNeed asks of them only what every node kind requires of the request (DemandOn): n whole
// GPUs or replicas need n units, a fraction of m milli needs m milli; so a room that does not
// hold the need is a node where GpuShare's Filter rejects the pod.
inline constexpr std::string_view kRoomGpuUnits = "tessel.io/room-gpu-units";
inline constexpr std::string_view kRoomGpuMilli = "tessel.io/room-gpu-milli";
class GpuDevices;
void AddGpuRoom(const GpuDevices& gpus, Resources& room);
void AddGpuNeed(const GpuRequest& request, Resources& need);

// The request as it lands on one node: whole devices, milli on one device, or replica slots.
struct GpuDemand {
  enum class Kind { kNone, kWhole, kMilli, kSlots };
  Kind kind = Kind::kNone;
  int32_t count = 0;   // kWhole: devices; kSlots: slots
  int64_t milli = 0;   // kMilli
  int64_t memory_bytes = 0;
  // Why the pod cannot use this node at all (not an out-of-capacity reason), e.g. the pod
  // opted out of sharing. Empty when eligible.
  std::string_view ineligible;
};
GpuDemand DemandOn(const GpuRequest& request, const GpuInventory& inventory);
// The physical-GPU milli the request holds on a node with this inventory: whole GPUs 1000
// each, a fraction its milli, a replica slot 1000 / replicas (floor). What quotas charge.
int64_t HeldGpuMilli(const GpuRequest& request, const GpuInventory& inventory);

class GpuDevices {
 public:
  GpuDevices() = default;
  explicit GpuDevices(GpuInventory inventory) { SetInventory(std::move(inventory)); }

  // Replaces the inventory and drops every allocation (NodeInfo re-adds its pods).
  void SetInventory(GpuInventory inventory);
  const GpuInventory& inventory() const { return inventory_; }
  int32_t count() const { return inventory_.count; }

  int64_t CapacityMilli(int32_t device) const { return device < count() ? kMilliPerGpu : 0; }
  int64_t AllocatedMilli(int32_t device) const { return devices_[device].used_milli; }
  int64_t FreeMilli(int32_t device) const { return kMilliPerGpu - devices_[device].used_milli; }
  int32_t FreeSlots(int32_t device) const { return inventory_.replicas - devices_[device].slots; }
  int32_t UsedSlots(int32_t device) const { return devices_[device].slots; }
  int64_t DeclaredMemory(int32_t device) const { return devices_[device].memory; }
  int32_t PodsOn(int32_t device) const { return devices_[device].pods; }

  int64_t total_allocated_milli() const { return allocated_milli_; }
  int64_t total_free_milli() const { return inventory_.capacity_milli() - allocated_milli_; }
  int32_t whole_free_devices() const { return whole_free_; }
  // GPU milli held by pods whose devices could not be accounted: the node was overcommitted
  // by pods bound elsewhere (e.g. before Tessel ran), or a nominated pod was added to a copy
  // of the node while its victims still hold its devices. Counted in no device.
  int64_t unplaced_milli() const { return unplaced_milli_; }
  // The same for replica slots (shared nodes): slots asked for by pods that got none.
  int32_t unplaced_slots() const { return unplaced_slots_; }
  int64_t mig_allocated_sevenths() const { return mig_allocated_sevenths_; }

  // Whether the demand fits now (fast path for Filter; no allocation): FitsOnDevices and
  // FitsBesideUnplaced.
  bool Fits(const GpuDemand& demand) const;
  // Whether free devices can take the demand (whole devices, one device's milli, free slots).
  bool FitsOnDevices(const GpuDemand& demand) const;
  // Whether the node's free total, less what unplaced pods hold, covers the demand: free milli
  // for whole GPUs and fractions, free slots for replicas. What kube-scheduler's resource fit
  // checks by summing requests, so a nominated pod's reservation holds even when its devices
  // are still taken.
  bool FitsBesideUnplaced(const GpuDemand& demand) const;
  // The devices a placement takes when nobody chose: whole GPUs the lowest-index free ones; a
  // fraction the best-fit device (least free milli that fits, lowest index on ties); slots
  // least-loaded device first, as the NVIDIA device plugin hands out replicas. nullopt: no fit.
  std::optional<DeviceList> DefaultChoice(const GpuDemand& demand) const;
  // Whether `devices` is a valid placement of `demand` right now.
  bool ValidChoice(const GpuDemand& demand, const DeviceList& devices) const;
  // Whether one device has room for `milli` (and the memory hint).
  bool DeviceFits(int32_t device, int64_t milli, int64_t memory_bytes) const;

  // Accounts the pod on the node: its typed device choice (Pod::gpu_devices) when valid here,
  // else the default choice. Pods without GPU requests are ignored. Never fails: a pod that
  // fits nowhere is counted in unplaced_milli().
  void AddPod(const Pod* pod);
  // Releases what AddPod took; false if the pod held nothing here.
  bool RemovePod(const Pod* pod);
  // The devices a pod holds (empty if none).
  DeviceList DevicesOf(const Pod* pod) const;

  // Pods by kind, for policies that cluster similar pods (GpuClustering): sharing pods
  // (fractions and slots) and whole-GPU pods by their GPU count.
  int32_t sharing_pods() const { return sharing_pods_; }
  int32_t whole_pods(int32_t gpus) const;
  int32_t gpu_pods() const { return gpu_pods_; }

  // A consistency check for tests: every device has allocated + free == capacity and the
  // totals agree with the per-device numbers. Returns a description of the first violation.
  std::string CheckInvariants() const;

 private:
  struct Device {
    int64_t used_milli = 0;
    int32_t slots = 0;
    int64_t memory = 0;
    int32_t pods = 0;
  };
  struct Holding {
    const Pod* pod;
    GpuDemand::Kind kind;
    int64_t milli;           // kMilli
    int64_t memory_bytes;
    int64_t mig_sevenths;
    int32_t whole_count;     // kWhole: GPUs (for the kind counters)
    int64_t unplaced_milli;  // > 0 when the devices could not be accounted
    int32_t unplaced_slots;  // kSlots: the slots of an unplaced pod
    DeviceList devices;
  };

  void Take(const Holding& h, int sign);
  void Recount(int32_t device);

  GpuInventory inventory_;
  std::vector<Device> devices_;
  std::vector<Holding> holdings_;
  int64_t allocated_milli_ = 0;
  int32_t whole_free_ = 0;
  int64_t unplaced_milli_ = 0;
  int32_t unplaced_slots_ = 0;
  int64_t mig_allocated_sevenths_ = 0;
  int32_t sharing_pods_ = 0;
  int32_t gpu_pods_ = 0;
  std::vector<std::pair<int32_t, int32_t>> whole_pods_;  // (gpus, pods)
};

}  // namespace tessel::gpu
