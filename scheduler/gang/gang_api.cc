// Decoding the gang APIs and reading a pod's declared gang (see gang_api.h).
#include "scheduler/gang/gang_api.h"

#include "nlohmann/json.hpp"

#include <charconv>
#include <limits>

#include "scheduler/api/decode.h"
#include "scheduler/util/strings.h"

namespace tessel::gang {

using nlohmann::json;

std::string GangId::Key() const {
  switch (kind) {
    case GangKind::kPodGroup:
      return StrCat("podgroup:", namespace_, "/", name);
    case GangKind::kWorkload:
      return StrCat("workload:", namespace_, "/", name, "/", pod_group, "/", replica_key);
    case GangKind::kSchedulingPodGroup:
      return StrCat("schedulingpodgroup:", namespace_, "/", name);
    case GangKind::kJob:
      return StrCat("job:", namespace_, "/", name);
  }
  return "";
}

std::string GangId::Describe() const {
  switch (kind) {
    case GangKind::kPodGroup:
      return StrCat("PodGroup ", namespace_, "/", name);
    case GangKind::kWorkload:
      return replica_key.empty()
                 ? StrCat("Workload ", namespace_, "/", name, " pod group ", pod_group)
                 : StrCat("Workload ", namespace_, "/", name, " pod group ", pod_group,
                          " (replica ", replica_key, ")");
    case GangKind::kSchedulingPodGroup:
      return StrCat("PodGroup ", namespace_, "/", name, " (scheduling.k8s.io)");
    case GangKind::kJob:
      return StrCat("Job ", namespace_, "/", name);
  }
  return "";
}

std::optional<GangId> DeclaredGang(const Pod& pod) {
  const std::string& ns = pod.meta.namespace_;
  if (auto it = pod.meta.labels.find(kPodGroupLabel);
      it != pod.meta.labels.end() && !it->second.empty()) {
    return GangId{.kind = GangKind::kPodGroup, .namespace_ = ns, .name = it->second};
  }
  if (pod.workload_ref.has_value()) {
    return GangId{.kind = GangKind::kWorkload,
                  .namespace_ = ns,
                  .name = pod.workload_ref->name,
                  .pod_group = pod.workload_ref->pod_group,
                  .replica_key = pod.workload_ref->pod_group_replica_key};
  }
  if (!pod.scheduling_group.empty()) {
    return GangId{.kind = GangKind::kSchedulingPodGroup, .namespace_ = ns,
                  .name = pod.scheduling_group};
  }
  for (const OwnerReference& owner : pod.meta.owner_references) {
    if (owner.controller && owner.kind == "Job" && owner.api_version.rfind("batch/", 0) == 0) {
      return GangId{.kind = GangKind::kJob, .namespace_ = ns, .name = owner.name};
    }
  }
  return std::nullopt;
}

absl::StatusOr<std::optional<int32_t>> MinAvailable(const StringMap& annotations,
                                                    std::string_view object) {
  auto it = annotations.find(kMinAvailableAnnotation);
  if (it == annotations.end()) return std::optional<int32_t>();
  const std::string& text = it->second;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1 ||
      value > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(StrCat(object, ": metadata.annotations.",
                                             kMinAvailableAnnotation, ": \"", text,
                                             "\" is not a positive integer"));
  }
  return std::optional<int32_t>(static_cast<int32_t>(value));
}

namespace {

// An int32 count at `path`, >= `min`; unset when absent.
std::optional<int32_t> Count(FieldDecoder& d, const json& parent, std::string_view key,
                             std::string_view path, int64_t min) {
  if (!parent.is_object() || !parent.contains(key) || parent[std::string(key)].is_null()) {
    return std::nullopt;
  }
  const int64_t v = d.Int(parent, key, path);
  if (v < min || v > std::numeric_limits<int32_t>::max()) {
    d.Fail(path, StrCat("must be an integer of at least ", min, ", got ", v));
    return std::nullopt;
  }
  return static_cast<int32_t>(v);
}

void CheckApiVersion(FieldDecoder& d, const json& object, std::string_view want) {
  const std::string got = d.String(object, "apiVersion", "apiVersion");
  if (!got.empty() && got != want) {
    d.Fail("apiVersion", StrCat("expected ", want, ", got ", got));
  }
}

// Namespaced metadata: a gang object without a namespace lives in "default".
ObjectMeta NamespacedMeta(FieldDecoder& d, const json& object) {
  ObjectMeta meta = d.Meta(object);
  if (meta.namespace_.empty()) meta.namespace_ = "default";
  return meta;
}

// The object's spec, or an empty one when absent (the caller names what is missing in it).
const json& SpecOf(FieldDecoder& d, const json& object) {
  static const json kEmpty = json::object();
  const json* spec = d.Object(object, "spec", "spec");
  return spec != nullptr ? *spec : kEmpty;
}

// A scheduling policy object ({basic: {}} or {gang: {minCount: N}}): the gang's minCount, or
// unset for basic. Exactly one of the two must be given.
std::optional<int32_t> DecodePolicy(FieldDecoder& d, const json& policy, std::string_view path) {
  const json* basic = d.Object(policy, "basic", StrCat(path, ".basic"));
  const json* gang = d.Object(policy, "gang", StrCat(path, ".gang"));
  if ((basic == nullptr) == (gang == nullptr)) {
    d.Fail(path, "exactly one of basic and gang must be set");
    return std::nullopt;
  }
  if (gang == nullptr) return std::nullopt;
  const std::string min_path = StrCat(path, ".gang.minCount");
  std::optional<int32_t> min = Count(d, *gang, "minCount", min_path, 1);
  if (!min.has_value() && d.ok()) d.Fail(min_path, "missing");
  return min;
}

}  // namespace

absl::StatusOr<PodGroup> DecodePodGroup(const json& object) {
  FieldDecoder d(DescribeObject(object));
  CheckApiVersion(d, object, kPodGroupApiVersion);
  PodGroup pg;
  pg.meta = NamespacedMeta(d, object);
  const json* spec = &SpecOf(d, object);
  pg.min_member = Count(d, *spec, "minMember", "spec.minMember", 0).value_or(0);
  pg.schedule_timeout_seconds =
      Count(d, *spec, "scheduleTimeoutSeconds", "spec.scheduleTimeoutSeconds", 0);
  pg.min_resources = d.ResourceMap(*spec, "minResources", "spec.minResources");
  if (const json* status = d.Object(object, "status", "status")) {
    pg.status.phase = d.String(*status, "phase", "status.phase");
    pg.status.scheduled = Count(d, *status, "scheduled", "status.scheduled", 0).value_or(0);
    pg.status.running = Count(d, *status, "running", "status.running", 0).value_or(0);
    pg.status.succeeded = Count(d, *status, "succeeded", "status.succeeded", 0).value_or(0);
    pg.status.failed = Count(d, *status, "failed", "status.failed", 0).value_or(0);
  }
  if (!d.ok()) return d.status();
  return pg;
}

absl::StatusOr<Workload> DecodeWorkload(const json& object) {
  FieldDecoder d(DescribeObject(object));
  CheckApiVersion(d, object, kWorkloadApiVersion);
  Workload w;
  w.meta = NamespacedMeta(d, object);
  const json* spec = &SpecOf(d, object);
  const json* groups = d.Array(*spec, "podGroups", "spec.podGroups");
  if (groups == nullptr && d.ok()) d.Fail("spec.podGroups", "missing");
  if (groups != nullptr) {
    for (size_t i = 0; i < groups->size(); ++i) {
      const std::string p = d.ItemPath("spec.podGroups", i);
      const json& g = (*groups)[i];
      WorkloadPodGroup group;
      group.name = d.String(g, "name", StrCat(p, ".name"));
      if (group.name.empty()) d.Fail(StrCat(p, ".name"), "missing");
      for (const WorkloadPodGroup& other : w.pod_groups) {
        if (other.name == group.name && !group.name.empty()) {
          d.Fail(StrCat(p, ".name"), StrCat("duplicate pod group \"", group.name, "\""));
        }
      }
      const json* policy = d.Object(g, "policy", StrCat(p, ".policy"));
      if (policy == nullptr) {
        d.Fail(StrCat(p, ".policy"), "missing");
      } else {
        group.gang_min_count = DecodePolicy(d, *policy, StrCat(p, ".policy"));
      }
      w.pod_groups.push_back(std::move(group));
    }
  }
  if (!d.ok()) return d.status();
  return w;
}

bool IsSchedulingPodGroupApiVersion(std::string_view api_version) {
  for (std::string_view v : kSchedulingPodGroupVersions) {
    if (api_version == v) return true;
  }
  return false;
}

namespace {

// A union of empty objects ({single: {}} or {all: {}}); exactly one may be set.
SchedulingPodGroup::DisruptionMode DecodeDisruptionMode(FieldDecoder& d, const json& spec) {
  using Mode = SchedulingPodGroup::DisruptionMode;
  const json* mode = d.Object(spec, "disruptionMode", "spec.disruptionMode");
  if (mode == nullptr) return Mode::kUnset;
  const bool single = d.Object(*mode, "single", "spec.disruptionMode.single") != nullptr;
  const bool all = d.Object(*mode, "all", "spec.disruptionMode.all") != nullptr;
  if (single == all) {
    d.Fail("spec.disruptionMode", "exactly one of single and all must be set");
    return Mode::kUnset;
  }
  return all ? Mode::kAll : Mode::kSingle;
}

// spec.schedulingConstraints.topology: at most one key (the API's own limit in 1.37).
std::string DecodeTopologyKey(FieldDecoder& d, const json& spec) {
  const json* constraints = d.Object(spec, "schedulingConstraints", "spec.schedulingConstraints");
  if (constraints == nullptr) return "";
  const json* topology = d.Array(*constraints, "topology", "spec.schedulingConstraints.topology");
  if (topology == nullptr || topology->empty()) return "";
  if (topology->size() > 1) {
    d.Fail("spec.schedulingConstraints.topology",
           StrCat("at most one topology constraint is supported, got ", topology->size()));
    return "";
  }
  std::string key = d.String((*topology)[0], "key", "spec.schedulingConstraints.topology[0].key");
  if (key.empty() && d.ok()) d.Fail("spec.schedulingConstraints.topology[0].key", "missing");
  return key;
}

// PodGroupInitiallyScheduled in status.conditions is True.
bool InitiallyScheduled(FieldDecoder& d, const json& object) {
  const json* status = d.Object(object, "status", "status");
  if (status == nullptr) return false;
  const json* conditions = d.Array(*status, "conditions", "status.conditions");
  if (conditions == nullptr) return false;
  for (size_t i = 0; i < conditions->size(); ++i) {
    const std::string p = d.ItemPath("status.conditions", i);
    if (d.String((*conditions)[i], "type", StrCat(p, ".type")) == kInitiallyScheduledCondition) {
      return d.String((*conditions)[i], "status", StrCat(p, ".status")) == "True";
    }
  }
  return false;
}

}  // namespace

json SchedulingPodGroupStatusRead(const json& status) {
  if (!status.is_object()) return status;
  json read = json::object();
  if (auto claims = status.find("resourceClaimStatuses"); claims != status.end()) {
    read["resourceClaimStatuses"] = *claims;
  }
  if (auto conditions = status.find("conditions"); conditions != status.end()) {
    if (!conditions->is_array()) {
      read["conditions"] = *conditions;
      return read;
    }
    for (const json& c : *conditions) {
      auto type = c.is_object() ? c.find("type") : c.end();
      if (!c.is_object() || (type != c.end() && !type->is_string())) {
        read["conditions"] = *conditions;  // the decoder fails on it, up to the one it reads
        break;
      }
      if (type != c.end() && *type == kInitiallyScheduledCondition) {
        read["initiallyScheduled"] = c.contains("status") ? c["status"] : json();
        break;  // the decoder reads the first
      }
    }
  }
  return read;
}

absl::StatusOr<SchedulingPodGroup> DecodeSchedulingPodGroup(const json& object) {
  FieldDecoder d(DescribeObject(object));
  SchedulingPodGroup pg;
  pg.api_version = d.String(object, "apiVersion", "apiVersion");
  if (!pg.api_version.empty() && !IsSchedulingPodGroupApiVersion(pg.api_version)) {
    d.Fail("apiVersion", StrCat("expected one of ", StrJoin(kSchedulingPodGroupVersions, ", "), ", got ",
                                pg.api_version));
  }
  pg.meta = NamespacedMeta(d, object);
  const json* spec = &SpecOf(d, object);
  const json* policy = d.Object(*spec, "schedulingPolicy", "spec.schedulingPolicy");
  if (policy == nullptr) {
    if (d.ok()) d.Fail("spec.schedulingPolicy", "missing");
  } else {
    pg.gang_min_count = DecodePolicy(d, *policy, "spec.schedulingPolicy");
  }
  pg.topology_key = DecodeTopologyKey(d, *spec);
  pg.disruption_mode = DecodeDisruptionMode(d, *spec);
  pg.priority_class_name = d.String(*spec, "priorityClassName", "spec.priorityClassName");
  if (spec->contains("priority") && !(*spec)["priority"].is_null()) {
    const int64_t p = d.Int(*spec, "priority", "spec.priority");
    if (p < std::numeric_limits<int32_t>::min() || p > std::numeric_limits<int32_t>::max()) {
      d.Fail("spec.priority", "out of the int32 range");
    } else {
      pg.priority = static_cast<int32_t>(p);
    }
  }
  if (const std::string policy_name = d.String(*spec, "preemptionPolicy", "spec.preemptionPolicy");
      policy_name == "Never") {
    pg.preemption_policy = PreemptionPolicy::kNever;
  } else if (policy_name == "PreemptLowerPriority") {
    pg.preemption_policy = PreemptionPolicy::kPreemptLowerPriority;
  } else if (!policy_name.empty()) {
    d.Fail("spec.preemptionPolicy",
           StrCat("unknown preemption policy \"", policy_name, "\" (want PreemptLowerPriority or Never)"));
  }
  pg.resource_claims = d.List<PodGroupResourceClaim>(
      *spec, "resourceClaims", "spec.resourceClaims", [&](const json& c, const std::string& p) {
        PodGroupResourceClaim ref;
        ref.name = d.String(c, "name", StrCat(p, ".name"));
        if (ref.name.empty() && d.ok()) d.Fail(StrCat(p, ".name"), "missing");
        ref.resource_claim_name = d.String(c, "resourceClaimName", StrCat(p, ".resourceClaimName"));
        ref.resource_claim_template_name =
            d.String(c, "resourceClaimTemplateName", StrCat(p, ".resourceClaimTemplateName"));
        if (d.ok() && ref.resource_claim_name.empty() == ref.resource_claim_template_name.empty()) {
          d.Fail(p, "exactly one of resourceClaimName and resourceClaimTemplateName must be set");
        }
        return ref;
      });
  if (const json* status = d.Object(object, "status", "status")) {
    d.ForEach(*status, "resourceClaimStatuses", "status.resourceClaimStatuses", [&](const json& c, const std::string& p) {
      std::string name = d.String(c, "name", StrCat(p, ".name"));
      pg.generated_claims[std::move(name)] = d.String(c, "resourceClaimName", StrCat(p, ".resourceClaimName"));
    });
  }
  pg.parent_composite_pod_group =
      d.String(*spec, "parentCompositePodGroupName", "spec.parentCompositePodGroupName");
  if (const json* ref = d.Object(*spec, "workloadRef", "spec.workloadRef")) {
    pg.workload_name = d.String(*ref, "workloadName", "spec.workloadRef.workloadName");
    pg.template_name = d.String(*ref, "templateName", "spec.workloadRef.templateName");
  }
  pg.initially_scheduled = InitiallyScheduled(d, object);
  if (!d.ok()) return d.status();
  return pg;
}

std::vector<std::string> Unsupported(const SchedulingPodGroup& pg) {
  std::vector<std::string> out;
  if (!pg.parent_composite_pod_group.empty()) {
    out.push_back(StrCat("spec.parentCompositePodGroupName: Tessel does not read CompositePodGroups; the "
                         "PodGroup is placed as a gang of its own, without CompositePodGroup ",
                         pg.parent_composite_pod_group, "'s minGroupCount"));
  }
  return out;
}

absl::StatusOr<JobInfo> DecodeJob(const json& object) {
  FieldDecoder d(DescribeObject(object));
  JobInfo job;
  job.meta = NamespacedMeta(d, object);
  if (!d.ok()) return d.status();
  auto min = MinAvailable(job.meta.annotations, DescribeObject(object));
  if (!min.ok()) return min.status();
  job.min_available = *min;
  return job;
}

}  // namespace tessel::gang
