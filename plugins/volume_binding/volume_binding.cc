#include "plugins/volume_binding/volume_binding.h"

#include <algorithm>

#include "scheduler/framework/plugin_util.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"

namespace tessel::volume_binding {
namespace {

constexpr std::string_view kPlanKey = "VolumeBinding/Plan";

// What Reserve assumed, for Unreserve and PreBind.
struct Reserved {
  BindingPlan plan;
  std::vector<PersistentVolumeClaim> claims_before;
  std::vector<PersistentVolume> volumes_before;
};

// The PV for a claim on this node: one pre-bound to the claim first, else the smallest that can
// serve it (ties by name), skipping the ones already taken by the pod's other claims.
const PersistentVolume* FindVolume(const ClusterObjects& objects, const PersistentVolumeClaim& claim,
                                   const Node& node, const StringSet& taken) {
  const PersistentVolume* best = nullptr;
  for (const auto& [name, volume] : objects.volumes()) {
    if (taken.contains(name) || !VolumeCanServe(volume, claim) ||
        !VolumeNodeAffinityMatches(volume, node)) {
      continue;
    }
    if (volume.claim_ref.has_value()) return &volume;  // pre-bound to this very claim
    if (best == nullptr || volume.capacity_bytes < best->capacity_bytes) best = &volume;
  }
  return best;
}

bool CanProvision(const ClusterObjects& objects, const PersistentVolumeClaim& claim, const Node& node) {
  const StorageClass* sc = objects.Class(claim.storage_class);
  if (sc == nullptr || sc->provisioner.empty() || sc->provisioner == kNoProvisioner) return false;
  return MatchesTopology(sc->allowed_topologies, node);
}

}  // namespace

absl::StatusOr<BindingPlan> PlanFor(const PodClaims& claims, const Node& node) {
  BindingPlan plan;
  StringSet taken;
  for (const PersistentVolumeClaim& claim : claims.to_bind) {
    const std::string selected = claim.selected_node();
    if (!selected.empty()) {
      // Chosen before (by an earlier attempt or another pod sharing the claim): only that node.
      if (selected != node.name()) return absl::FailedPreconditionError(std::string(kReasonBindConflict));
      plan.provisions.push_back(claim);
      continue;
    }
    if (const PersistentVolume* volume = FindVolume(*claims.objects, claim, node, taken)) {
      taken.insert(volume->name());
      plan.static_bindings.emplace_back(claim, *volume);
      continue;
    }
    if (!CanProvision(*claims.objects, claim, node)) {
      return absl::FailedPreconditionError(std::string(kReasonBindConflict));
    }
    plan.provisions.push_back(claim);
  }
  return plan;
}

absl::StatusOr<VolumeBindingArgs> VolumeBinding::ParseArgs(const YAML::Node& yaml) {
  ArgsReader reader = ArgsReader::Of(kName, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"bindTimeoutSeconds"}));
  ASSIGN_OR_RETURN(const int64_t timeout, reader.Int("bindTimeoutSeconds", 600, 0, 86400));
  return Args{.bind_timeout = absl::Seconds(timeout)};
}

absl::StatusOr<std::unique_ptr<VolumeBinding>> VolumeBinding::New(Args args, Handle& handle) {
  return std::make_unique<VolumeBinding>(args, handle);
}

Status VolumeBinding::PreFilter(CycleState& state, const Pod& pod) {
  if (!UsesClaims(pod)) return Status::Skip();
  PodClaims claims{.objects = handle_.Objects()};
  if (claims.objects == nullptr) {
    return Status::Unresolvable("the scheduler has no PersistentVolumeClaims to read");
  }
  absl::StatusOr<std::vector<const PersistentVolumeClaim*>> found = claims.objects->ClaimsOf(pod);
  if (!found.ok()) return Status::Unresolvable(std::string(found.status().message()));
  bool unbound_immediate = false;
  for (const PersistentVolumeClaim* claim : *found) {
    if (claim->bound()) {
      claims.bound.push_back(*claim);
      continue;
    }
    const StorageClass* sc = claim->storage_class.empty() ? nullptr : claims.objects->Class(claim->storage_class);
    if (!claim->storage_class.empty() && sc == nullptr) {
      return Status::Unresolvable(
          StrCat("storageclass.storage.k8s.io \"", claim->storage_class, "\" not found"));
    }
    if (sc == nullptr || sc->binding_mode == VolumeBindingMode::kImmediate) {
      unbound_immediate = true;  // the PV controller binds it; nothing to choose here
      continue;
    }
    claims.to_bind.push_back(*claim);
  }
  if (unbound_immediate) return Status::Unresolvable(std::string(kReasonUnboundImmediate));
  state.WriteValue(kName, std::move(claims));
  return Status::Ok();
}

Status VolumeBinding::Filter(const CycleState& state, const Pod&, const NodeInfo& info) const {
  const PodClaims* claims = state.ReadValue<PodClaims>(kName);
  if (claims == nullptr || info.node() == nullptr) return Status::Ok();
  const Node& node = *info.node();
  for (const PersistentVolumeClaim& claim : claims->bound) {
    const PersistentVolume* volume = claims->objects->Volume(claim.volume_name);
    if (volume == nullptr) return Status::Unresolvable(std::string(kReasonPVNotExist));
    if (!VolumeNodeAffinityMatches(*volume, node)) {
      return Status::Unresolvable(std::string(kReasonNodeConflict));
    }
  }
  if (claims->to_bind.empty()) return Status::Ok();
  absl::StatusOr<BindingPlan> plan = PlanFor(*claims, node);
  if (!plan.ok()) return Status::Unresolvable(std::string(plan.status().message()));
  return Status::Ok();
}

Status VolumeBinding::Reserve(CycleState& state, const Pod&, const std::string& node_name) {
  const PodClaims* claims = state.ReadValue<PodClaims>(kName);
  if (claims == nullptr || claims->to_bind.empty()) return Status::Ok();
  const NodeInfo* info = handle_.snapshot().Get(node_name);
  if (info == nullptr || info->node() == nullptr) {
    return Status::Error(StrCat("node \"", node_name, "\" is not in the snapshot"));
  }
  absl::StatusOr<BindingPlan> plan = PlanFor(*claims, *info->node());
  if (!plan.ok()) return Status::Unresolvable(std::string(plan.status().message()));
  ClusterObjectStore* store = handle_.ObjectStore();
  Reserved reserved{.plan = *plan};
  for (const auto& [claim, volume] : plan->static_bindings) {
    reserved.volumes_before.push_back(volume);
    PersistentVolume assumed = volume;
    assumed.claim_ref = ClaimReference{
        .namespace_ = claim.meta.namespace_, .name = claim.meta.name, .uid = claim.meta.uid};
    store->Assume(std::move(assumed));
  }
  for (const PersistentVolumeClaim& claim : plan->provisions) {
    if (claim.selected_node() == node_name) continue;  // nothing to change
    reserved.claims_before.push_back(claim);
    PersistentVolumeClaim assumed = claim;
    assumed.meta.annotations[std::string(kSelectedNodeAnnotation)] = node_name;
    store->Assume(std::move(assumed));
  }
  state.WriteValue(kPlanKey, std::move(reserved));
  return Status::Ok();
}

void VolumeBinding::Unreserve(CycleState& state, const Pod&, const std::string&) {
  const Reserved* reserved = state.ReadValue<Reserved>(kPlanKey);
  if (reserved == nullptr) return;
  ClusterObjectStore* store = handle_.ObjectStore();
  for (const PersistentVolume& volume : reserved->volumes_before) store->Restore(volume);
  for (const PersistentVolumeClaim& claim : reserved->claims_before) store->Restore(claim);
}

Status VolumeBinding::PreBind(CycleState& state, const Pod& pod, const std::string& node) {
  const Reserved* reserved = state.ReadValue<Reserved>(kPlanKey);
  if (reserved == nullptr) return Status::Ok();
  ClusterApi* api = handle_.api();
  if (api == nullptr) return Status::Error("binding volumes: no cluster to write to");
  const BindingPlan& plan = reserved->plan;
  for (const auto& [claim, volume] : plan.static_bindings) {
    if (absl::Status st = api->SetClaimRef(volume, claim); !st.ok()) {
      return Status::Error(StrCat("binding PersistentVolume ", volume.name(), " to claim ",
                                  claim.Key(), ": ", st.message()));
    }
  }
  for (const PersistentVolumeClaim& claim : plan.provisions) {
    if (claim.selected_node() == node) continue;
    if (absl::Status st = api->AnnotateClaim(claim, kSelectedNodeAnnotation, node); !st.ok()) {
      return Status::Error(StrCat("annotating PersistentVolumeClaim ", claim.Key(), ": ", st.message()));
    }
  }
  if (args_.bind_timeout == absl::ZeroDuration()) return Status::Ok();
  // Wait until the PV controller (static) or the provisioner (dynamic) bound every claim.
  const NodeInfo* info = handle_.snapshot().Get(node);
  // Each claim is bound, still binding, or will never bind here (a terminal problem: the wait
  // stops at the first one, whatever the other claims show).
  enum class ClaimState { kBound, kWaiting, kFailed };
  std::vector<std::pair<const PersistentVolumeClaim*, bool>> claims;  // (claim, provisioned)
  for (const auto& [claim, volume] : plan.static_bindings) claims.emplace_back(&claim, false);
  for (const PersistentVolumeClaim& claim : plan.provisions) claims.emplace_back(&claim, true);
  std::string problem;
  bool failed = false;
  auto all_bound = [&](const ClusterObjects& objects) {
    auto check = [&](const PersistentVolumeClaim& planned, bool provisioned) {
      const PersistentVolumeClaim* now = objects.Claim(planned.meta.namespace_, planned.meta.name);
      if (now == nullptr || (!planned.meta.uid.empty() && now->meta.uid != planned.meta.uid)) {
        problem = StrCat("PersistentVolumeClaim ", planned.Key(), " was deleted");
        return ClaimState::kFailed;
      }
      if (provisioned && now->selected_node() != node) {
        problem = StrCat("the selected-node annotation of PersistentVolumeClaim ", planned.Key(),
                         " was reset");
        return ClaimState::kFailed;
      }
      if (!now->fully_bound()) {
        problem = StrCat("PersistentVolumeClaim ", planned.Key(), " is not bound yet");
        return ClaimState::kWaiting;
      }
      const PersistentVolume* volume = objects.Volume(now->volume_name);
      if (volume == nullptr) {
        problem = StrCat("PersistentVolumeClaim ", planned.Key(), " waits for its PersistentVolume ",
                         now->volume_name);
        return ClaimState::kWaiting;
      }
      if (info != nullptr && info->node() != nullptr && !VolumeNodeAffinityMatches(*volume, *info->node())) {
        problem = StrCat("PersistentVolume ", volume->name(), " of claim ", planned.Key(),
                         " does not allow node ", node);
        return ClaimState::kFailed;
      }
      return ClaimState::kBound;
    };
    std::string waiting;  // the first claim still binding, reported on a timeout
    for (const auto& [claim, provisioned] : claims) {
      const ClaimState st = check(*claim, provisioned);
      if (st == ClaimState::kFailed) {
        failed = true;
        return true;  // stop waiting: it will not bind
      }
      if (st == ClaimState::kWaiting && waiting.empty()) waiting = problem;
    }
    problem = waiting;
    return waiting.empty();
  };
  // The store wakes the wait on every change of its objects; a deletion of the pod itself is
  // not one of them, so the wait also looks at the pod once per kPodRecheck and ends when it is
  // gone (a binder thread is not held for the rest of the timeout).
  constexpr absl::Duration kPodRecheck = absl::Seconds(1);
  ClusterObjectStore* store = handle_.ObjectStore();
  const absl::Time deadline = absl::Now() + args_.bind_timeout;
  while (!store->WaitFor(all_bound, std::min(kPodRecheck, deadline - absl::Now()))) {
    if (handle_.PodEnded(pod)) return Status::Error("binding volumes: the pod was deleted during the wait");
    if (absl::Now() >= deadline) {
      return Status::Error(StrCat("binding volumes: timed out after ",
                                  absl::FormatDuration(args_.bind_timeout), ": ", problem));
    }
  }
  if (failed) return Status::Error(StrCat("binding volumes: ", problem));
  return Status::Ok();
}

}  // namespace tessel::volume_binding
