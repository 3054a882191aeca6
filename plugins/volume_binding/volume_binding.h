// VolumeBinding (PreFilter, Filter, Reserve, PreBind), as kube-scheduler's plugin of that name:
//   - PreFilter reads the pod's claims from the cycle's view of the cluster objects. A missing
//     claim ('persistentvolumeclaim "x" not found'), a claim being deleted, an unbound claim whose
//     class binds Immediately ("pod has unbound immediate PersistentVolumeClaims") or names an
//     unknown class reject the pod before any node is looked at. A pod without claims: Skip.
//   - Filter: a bound claim's PV must exist and its nodeAffinity hold on the node. Each unbound
//     WaitForFirstConsumer claim needs, on the node, a matching available PV (class, volume
//     mode, access modes, capacity, selector, nodeAffinity; the smallest, a PV pre-bound to the
//     claim first; one PV per claim) or else dynamic provisioning: a class with a provisioner
//     (not kubernetes.io/no-provisioner) whose allowedTopologies (none: every node) match the
//     node. A claim that already names a selected node allows only that node.
//   - Reserve assumes the plan for the chosen node in the cluster-object store (the PV's
//     claimRef, the claim's selected-node annotation), so the next cycle does not hand the same
//     PV to another claim; Unreserve puts the objects back.
//   - PreBind makes the writes: the PV's spec.claimRef for a static match, the annotation
//     volume.kubernetes.io/selected-node on claims to provision. Then, like kube-scheduler, it
//     waits until every claim is bound (the PV controller or provisioner binds them) and the
//     provisioned PV's nodeAffinity holds on the node, for at most bindTimeoutSeconds (600 by
//     default, kube-scheduler's). The wait blocks a binder thread, never the scheduling thread;
//     bindTimeoutSeconds: 0 binds the pod right after the writes (the kubelet then waits).
//     A timeout, a write refused, or an annotation removed meanwhile fails the binding cycle:
//     the pod is unreserved and retried.
// Rejections are UnschedulableAndUnresolvable (preemption cannot help). Results depend on the
// storage objects, not only on the pod and the node, so the plugin is not node-local: the
// decision cache evaluates every node for a pod with claims (pods without claims skip it).
#pragma once

#include "absl/time/time.h"
#include "scheduler/framework/registry.h"

namespace tessel::volume_binding {

inline constexpr std::string_view kReasonBindConflict =
    "node(s) didn't find available persistent volumes to bind";
inline constexpr std::string_view kReasonNodeConflict = "node(s) had volume node affinity conflict";
inline constexpr std::string_view kReasonPVNotExist =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
inline constexpr std::string_view kReasonUnboundImmediate =
    "pod has unbound immediate PersistentVolumeClaims";

// What binding the pod's unbound claims on one node takes.
struct BindingPlan {
  std::vector<std::pair<PersistentVolumeClaim, PersistentVolume>> static_bindings;
  std::vector<PersistentVolumeClaim> provisions;
};

// The pod's claims as PreFilter found them, and the view they were read from.
struct PodClaims {
  std::shared_ptr<const ClusterObjects> objects;
  std::vector<PersistentVolumeClaim> bound;
  std::vector<PersistentVolumeClaim> to_bind;  // unbound, WaitForFirstConsumer
};

// The claims' plan on `node`, or the reason the node does not do.
absl::StatusOr<BindingPlan> PlanFor(const PodClaims& claims, const Node& node);

struct VolumeBindingArgs {
  absl::Duration bind_timeout = absl::Seconds(600);  // bindTimeoutSeconds, 0..86400
};

class VolumeBinding final : public PreFilterPlugin, public FilterPlugin, public ReservePlugin,
                            public PreBindPlugin {
 public:
  static constexpr std::string_view kName = "VolumeBinding";
  using Args = VolumeBindingArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<VolumeBinding>> New(Args args, Handle& handle);
  VolumeBinding(Args args, Handle& handle) : args_(args), handle_(handle) {}
  std::string_view Name() const override { return kName; }
  // Claims, volumes and classes coming or changing; nodes coming or relabelled (topology).
  uint32_t EventsToRegister() const override { return kStorageChange | kNodeAdd | kNodeUpdate; }
  Status PreFilter(CycleState& state, const Pod& pod) override;
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  Status Reserve(CycleState& state, const Pod& pod, const std::string& node) override;
  void Unreserve(CycleState& state, const Pod& pod, const std::string& node) override;
  Status PreBind(CycleState& state, const Pod& pod, const std::string& node) override;

 private:
  Args args_;
  Handle& handle_;
};

}  // namespace tessel::volume_binding
