// ProvisioningRequest and PodTemplate objects for a gang, and the request's conditions read back.
#include "scheduler/provisioning/provisioning_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "absl/status/status.h"
#include "scheduler/util/strings.h"

namespace tessel::provisioning {
namespace {

using nlohmann::json;

constexpr size_t kMaxNameLength = 253;

// A string field, "" when absent or not a string (nlohmann's value() would throw).
std::string Str(const json& object, std::string_view key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A condition of status.conditions whose status is "True", if any.
const json* TrueCondition(const json& conditions, std::string_view type) {
  for (const json& c : conditions) {
    if (c.is_object() && Str(c, "type") == type && Str(c, "status") == "True") return &c;
  }
  return nullptr;
}

json Metadata(const RequestSpec& spec, std::string name) {
  json owner = {{"apiVersion", spec.owner.api_version},
                {"kind", spec.owner.kind},
                {"name", spec.owner.name},
                {"uid", spec.owner.uid}};
  return {{"name", std::move(name)},
          {"namespace", spec.namespace_},
          {"labels", {{kManagedByLabel, kManagedByValue}}},
          {"annotations", {{kGangAnnotation, spec.gang_key}}},
          {"ownerReferences", json::array({std::move(owner)})}};
}

json ContainersOf(const json& containers) {
  json out = json::array();
  if (!containers.is_array()) return out;
  for (const json& c : containers) {
    if (!c.is_object()) continue;
    json kept = {{"name", Str(c, "name")}, {"image", Str(c, "image")}};
    if (auto r = c.find("resources"); r != c.end() && r->is_object() && r->contains("requests")) {
      kept["resources"] = {{"requests", (*r)["requests"]}};
      if (r->contains("limits")) kept["resources"]["limits"] = (*r)["limits"];
    }
    out.push_back(std::move(kept));
  }
  return out;
}

json TolerationObject(const Toleration& t) {
  json out = json::object();
  if (!t.key.empty()) out["key"] = t.key;
  out["operator"] = t.op == Toleration::Operator::kExists ? "Exists" : "Equal";
  if (!t.value.empty()) out["value"] = t.value;
  if (t.effect.has_value()) out["effect"] = TaintEffectName(*t.effect);
  if (t.toleration_seconds.has_value()) out["tolerationSeconds"] = *t.toleration_seconds;
  return out;
}

// `spec` (a TemplateSpecOf) held to the flavors' nodes.
void HoldToNodes(json& spec, const FlavorNodes& nodes) {
  if (nodes.empty()) return;
  if (!nodes.node_selector.empty()) {
    json& selector = spec["nodeSelector"];
    if (!selector.is_object()) selector = json::object();
    for (const auto& [k, v] : nodes.node_selector) selector[k] = v;
  }
  if (!nodes.tolerations.empty()) {
    json& tolerations = spec["tolerations"];
    if (!tolerations.is_array()) tolerations = json::array();
    for (const Toleration& t : nodes.tolerations) {
      json object = TolerationObject(t);
      if (std::find(tolerations.begin(), tolerations.end(), object) == tolerations.end()) {
        tolerations.push_back(std::move(object));
      }
    }
  }
}

}  // namespace

std::optional<Marking> MarkingFor(const StringMap& pod_annotations, const StringMap& gang_annotations,
                                  const std::vector<const ResourceFlavor*>& flavors, const Queue* queue) {
  for (const StringMap* annotations : {&pod_annotations, &gang_annotations}) {
    auto it = annotations->find(std::string(kClassAnnotation));
    if (it != annotations->end() && !it->second.empty()) return Marking{.class_name = it->second};
  }
  const std::optional<ProvisioningClass>* from = nullptr;
  for (const ResourceFlavor* flavor : flavors) {
    if (flavor->provisioning.has_value()) {
      from = &flavor->provisioning;
      break;
    }
  }
  if (from == nullptr && queue != nullptr && queue->provisioning.has_value()) from = &queue->provisioning;
  if (from == nullptr) return std::nullopt;
  return Marking{.class_name = (*from)->class_name, .parameters = (*from)->parameters};
}

FlavorNodes FlavorNodesOf(const std::vector<const ResourceFlavor*>& flavors) {
  FlavorNodes out;
  for (const ResourceFlavor* flavor : flavors) {
    out.flavors.push_back(flavor->name());
    for (const auto& [k, v] : flavor->node_labels) out.node_selector[k] = v;
    out.tolerations.insert(out.tolerations.end(), flavor->tolerations.begin(), flavor->tolerations.end());
  }
  return out;
}

std::string RequestName(std::string_view gang_key, int32_t attempt) {
  // "kind:namespace/rest" -> "kind" and "rest".
  std::string_view kind = gang_key, rest;
  if (size_t colon = gang_key.find(':'); colon != std::string_view::npos) {
    kind = gang_key.substr(0, colon);
    rest = gang_key.substr(colon + 1);
    if (size_t slash = rest.find('/'); slash != std::string_view::npos) rest = rest.substr(slash + 1);
  }
  std::string base = StrCat("tessel-", kind, "-", rest);
  for (char& ch : base) {
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.') ch = '-';
  }
  const std::string suffix = StrCat("-", attempt);
  // Room for the suffix and a template index ("-NN").
  const size_t room = kMaxNameLength - suffix.size() - 4;
  if (base.size() > room) base.resize(room);
  while (!base.empty() && !std::isalnum(static_cast<unsigned char>(base.back()))) base.pop_back();
  return base + suffix;
}

std::string TemplateName(std::string_view request_name, size_t index) {
  return StrCat(request_name, "-", index);
}

json TemplateSpecOf(const json& pod) {
  const json spec = pod.is_object() && pod.contains("spec") && pod["spec"].is_object() ? pod["spec"] : json::object();
  json out = {{"containers", ContainersOf(spec.contains("containers") ? spec["containers"] : json::array())}};
  if (json init = ContainersOf(spec.contains("initContainers") ? spec["initContainers"] : json::array()); !init.empty()) {
    out["initContainers"] = std::move(init);
  }
  for (const char* field : {"nodeSelector", "affinity", "tolerations", "priorityClassName", "overhead",
                            "runtimeClassName"}) {
    if (auto it = spec.find(field); it != spec.end() && !it->is_null()) out[field] = *it;
  }
  return out;
}

std::vector<PodSetTemplate> PodSets(const std::vector<json>& pods, const FlavorNodes& nodes) {
  std::vector<PodSetTemplate> sets;
  for (const json& pod : pods) {
    json spec = TemplateSpecOf(pod);
    HoldToNodes(spec, nodes);
    auto same = std::find_if(sets.begin(), sets.end(), [&](const PodSetTemplate& s) { return s.template_spec == spec; });
    if (same != sets.end()) {
      ++same->count;
    } else {
      sets.push_back({.template_spec = std::move(spec), .count = 1});
    }
  }
  return sets;
}

json PodTemplateObject(const RequestSpec& spec, size_t index, const PodSetTemplate& set) {
  return {{"apiVersion", "v1"},
          {"kind", "PodTemplate"},
          {"metadata", Metadata(spec, TemplateName(spec.name, index))},
          {"template", {{"spec", set.template_spec}}}};
}

json RequestObject(const RequestSpec& spec, const std::vector<PodSetTemplate>& sets) {
  json pod_sets = json::array();
  for (size_t i = 0; i < sets.size(); ++i) {
    pod_sets.push_back({{"podTemplateRef", {{"name", TemplateName(spec.name, i)}}}, {"count", sets[i].count}});
  }
  json parameters = json::object();
  for (const auto& [k, v] : spec.marking.parameters) parameters[k] = v;
  json body = {{"podSets", std::move(pod_sets)}, {"provisioningClassName", spec.marking.class_name}};
  if (!parameters.empty()) body["parameters"] = std::move(parameters);
  return {{"apiVersion", kApiVersion}, {"kind", kKind}, {"metadata", Metadata(spec, spec.name)}, {"spec", std::move(body)}};
}

std::string_view PhaseName(RequestPhase phase) {
  switch (phase) {
    case RequestPhase::kPending: return "Pending";
    case RequestPhase::kProvisioned: return "Provisioned";
    case RequestPhase::kFailed: return "Failed";
    case RequestPhase::kCapacityRevoked: return "CapacityRevoked";
    case RequestPhase::kBookingExpired: return "BookingExpired";
  }
  return "Pending";
}

std::string_view GangNamespace(std::string_view gang_key) {
  const size_t colon = gang_key.find(':');
  if (colon == std::string_view::npos) return {};
  const std::string_view rest = gang_key.substr(colon + 1);
  const size_t slash = rest.find('/');
  return slash == std::string_view::npos ? std::string_view() : rest.substr(0, slash);
}

absl::StatusOr<ObservedRequest> DecodeRequest(const json& object) {
  if (!object.is_object()) return absl::InvalidArgumentError("ProvisioningRequest: not an object");
  const json meta = object.contains("metadata") && object["metadata"].is_object() ? object["metadata"] : json::object();
  ObservedRequest r{.namespace_ = Str(meta, "namespace"), .name = Str(meta, "name")};
  const std::string who = StrCat("ProvisioningRequest ", r.namespace_, "/", r.name);
  if (r.name.empty()) return absl::InvalidArgumentError(StrCat(who, ": metadata.name is missing"));
  if (auto a = meta.find("annotations"); a != meta.end() && a->is_object()) {
    if (auto g = a->find(std::string(kGangAnnotation)); g != a->end() && g->is_string()) r.gang_key = *g;
  }
  if (!r.gang_key.empty()) {
    // Only Tessel's own requests stand for a gang: anyone who may create requests in one
    // namespace must not take over (or have Tessel delete) another namespace's.
    const std::string field = StrCat(who, ": metadata.annotations[", kGangAnnotation, "] \"", r.gang_key, "\"");
    if (GangNamespace(r.gang_key) != r.namespace_) {
      return absl::InvalidArgumentError(StrCat(field, " names a gang of namespace \"", GangNamespace(r.gang_key),
                                               "\"; Tessel adopts only requests in their gang's own namespace"));
    }
    const json labels = meta.contains("labels") && meta["labels"].is_object() ? meta["labels"] : json::object();
    if (Str(labels, kManagedByLabel) != kManagedByValue) {
      return absl::InvalidArgumentError(StrCat(field, ": the request is not labelled ", kManagedByLabel, "=",
                                               kManagedByValue, ", so Tessel did not create it"));
    }
    const size_t dash = r.name.rfind('-');
    int32_t attempt = 0;
    const std::string_view digits = dash == std::string::npos ? std::string_view() : std::string_view(r.name).substr(dash + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), attempt);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
        RequestName(r.gang_key, attempt) != r.name) {
      return absl::InvalidArgumentError(
          StrCat(field, ": Tessel names that gang's requests ", RequestName(r.gang_key, 1), ", -2, ..."));
    }
  }
  const json status = object.contains("status") ? object["status"] : json::object();
  if (!status.is_null() && !status.is_object()) return absl::InvalidArgumentError(StrCat(who, ": status is not an object"));
  const json conditions = status.is_object() && status.contains("conditions") ? status["conditions"] : json::array();
  if (!conditions.is_null() && !conditions.is_array()) {
    return absl::InvalidArgumentError(StrCat(who, ": status.conditions is not a list"));
  }
  if (!conditions.is_array()) return r;
  for (const auto& [type, phase] : {std::pair{"CapacityRevoked", RequestPhase::kCapacityRevoked},
                                    std::pair{"BookingExpired", RequestPhase::kBookingExpired},
                                    std::pair{"Failed", RequestPhase::kFailed},
                                    std::pair{"Provisioned", RequestPhase::kProvisioned}}) {
    if (const json* c = TrueCondition(conditions, type)) {
      r.phase = phase;
      r.reason = Str(*c, "reason");
      r.message = Str(*c, "message");
      break;
    }
  }
  return r;
}

}  // namespace tessel::provisioning
