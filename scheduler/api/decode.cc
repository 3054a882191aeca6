// JSON -> objects. Every field access goes through FieldDecoder so type errors carry a path.
#include "scheduler/api/decode.h"

#include <algorithm>

#include "scheduler/util/strings.h"
#include "absl/time/time.h"
#include "scheduler/api/device_list.h"
#include "scheduler/api/quantity.h"
#include "scheduler/api/storage.h"

namespace tessel {

using nlohmann::json;

namespace {

std::string_view TypeName(const json& j) { return j.type_name(); }

std::string Path(std::string_view base, std::string_view key) {
  return base.empty() ? std::string(key) : StrCat(base, ".", key);
}

}  // namespace

const json* FieldDecoder::Child(const json& parent, std::string_view key) {
  if (!parent.is_object()) return nullptr;
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return nullptr;
  return &*it;
}

void FieldDecoder::Fail(std::string_view path, std::string_view why) {
  if (error_.empty()) error_ = StrCat(path, ": ", why);
}

absl::Status FieldDecoder::status() const {
  if (error_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(StrCat(object_, ": ", error_));
}

std::string FieldDecoder::String(const json& parent, std::string_view key, std::string_view path,
                                 std::string fallback) {
  const json* v = Child(parent, key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) {
    Fail(path, StrCat("expected a string, got ", TypeName(*v)));
    return fallback;
  }
  return v->get<std::string>();
}

std::optional<std::string> FieldDecoder::NameItem(const json& item, std::string_view path, std::string_view what) {
  if (!item.is_string() || item.get_ref<const std::string&>().empty()) {
    Fail(path, StrCat("expected ", what));
    return std::nullopt;
  }
  return item.get<std::string>();
}

int64_t FieldDecoder::Int(const json& parent, std::string_view key, std::string_view path,
                          int64_t fallback) {
  const json* v = Child(parent, key);
  if (v == nullptr) return fallback;
  if (!v->is_number_integer()) {
    Fail(path, StrCat("expected an integer, got ", v->dump()));
    return fallback;
  }
  return v->get<int64_t>();
}

bool FieldDecoder::Bool(const json& parent, std::string_view key, std::string_view path,
                        bool fallback) {
  const json* v = Child(parent, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) {
    Fail(path, StrCat("expected true or false, got ", v->dump()));
    return fallback;
  }
  return v->get<bool>();
}

const json* FieldDecoder::Object(const json& parent, std::string_view key, std::string_view path) {
  const json* v = Child(parent, key);
  if (v != nullptr && !v->is_object()) {
    Fail(path, StrCat("expected an object, got ", TypeName(*v)));
    return nullptr;
  }
  return v;
}

const json* FieldDecoder::Array(const json& parent, std::string_view key, std::string_view path) {
  const json* v = Child(parent, key);
  if (v != nullptr && !v->is_array()) {
    Fail(path, StrCat("expected a list, got ", TypeName(*v)));
    return nullptr;
  }
  return v;
}

StringMap FieldDecoder::StringMapField(const json& parent, std::string_view key,
                                       std::string_view path) {
  StringMap out;
  const json* m = Object(parent, key, path);
  if (m == nullptr) return out;
  for (const auto& [k, v] : m->items()) {
    if (!v.is_string()) {
      Fail(Path(path, k), StrCat("expected a string, got ", TypeName(v)));
      continue;
    }
    out.emplace(k, v.get<std::string>());
  }
  return out;
}

Resources FieldDecoder::ResourceMap(const json& parent, std::string_view key,
                                    std::string_view path, bool allow_negative) {
  Resources out;
  const json* m = Object(parent, key, path);
  if (m == nullptr) return out;
  for (const auto& [name, v] : m->items()) {
    std::string field = Path(path, name);
    absl::StatusOr<int64_t> amount = absl::InvalidArgumentError("");
    if (v.is_string()) {
      amount = ParseResourceQuantity(name, v.get<std::string>());
    } else if (v.is_number_integer()) {
      // Kubernetes prints quantities as strings, but hand-written JSON may hold plain numbers.
      amount = ParseResourceQuantity(name, std::to_string(v.get<int64_t>()));
    } else {
      Fail(field, StrCat("expected a quantity string, got ", v.dump()));
      if (saturate_quantities_) out.Set(name, kUnreadableQuantity);
      continue;
    }
    if (!amount.ok()) {
      Fail(field, ToStd(amount.status().message()));
      if (saturate_quantities_) out.Set(name, kUnreadableQuantity);
      continue;
    }
    if (*amount < 0 && !allow_negative) {
      Fail(field, StrCat("negative quantity \"", v.is_string() ? v.get<std::string>() : v.dump(),
                               "\" is not allowed"));
      continue;
    }
    out.Set(name, *amount);
  }
  return out;
}

absl::Time FieldDecoder::Timestamp(const json& parent, std::string_view key,
                                   std::string_view path) {
  std::string text = String(parent, key, path);
  if (text.empty()) return absl::UnixEpoch();
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, text, &t, &err)) {
    Fail(path, StrCat("timestamp \"", text, "\" is not RFC 3339: ", err));
    return absl::UnixEpoch();
  }
  return t;
}

ObjectMeta FieldDecoder::Meta(const json& object) {
  ObjectMeta meta;
  const json* m = Object(object, "metadata", "metadata");
  if (m == nullptr) {
    Fail("metadata", "missing");
    return meta;
  }
  meta.name = String(*m, "name", "metadata.name");
  if (meta.name.empty()) Fail("metadata.name", "missing");
  meta.namespace_ = String(*m, "namespace", "metadata.namespace");
  meta.uid = String(*m, "uid", "metadata.uid");
  meta.resource_version = String(*m, "resourceVersion", "metadata.resourceVersion");
  meta.labels = StringMapField(*m, "labels", "metadata.labels");
  meta.annotations = StringMapField(*m, "annotations", "metadata.annotations");
  meta.creation_timestamp = Timestamp(*m, "creationTimestamp", "metadata.creationTimestamp");
  if (m->contains("deletionTimestamp") && !(*m)["deletionTimestamp"].is_null()) {
    meta.deletion_timestamp = Timestamp(*m, "deletionTimestamp", "metadata.deletionTimestamp");
  }
  meta.owner_references = List<OwnerReference>(
      *m, "ownerReferences", "metadata.ownerReferences", [&](const json& r, const std::string& p) {
        return OwnerReference{
            .api_version = String(r, "apiVersion", Path(p, "apiVersion")),
            .kind = String(r, "kind", Path(p, "kind")),
            .name = String(r, "name", Path(p, "name")),
            .uid = String(r, "uid", Path(p, "uid")),
            .controller = Bool(r, "controller", Path(p, "controller")),
        };
      });
  return meta;
}

std::string DescribeObject(const json& object) {
  std::string kind = "object";
  std::string ns, name;
  if (object.is_object()) {
    if (auto k = object.find("kind"); k != object.end() && k->is_string()) kind = *k;
    if (auto m = object.find("metadata"); m != object.end() && m->is_object()) {
      if (auto n = m->find("namespace"); n != m->end() && n->is_string()) ns = *n;
      if (auto n = m->find("name"); n != m->end() && n->is_string()) name = *n;
    }
  }
  if (name.empty()) name = "<unnamed>";
  return ns.empty() ? StrCat(kind, " ", name) : StrCat(kind, " ", ns, "/", name);
}

namespace {

std::optional<TaintEffect> ParseEffect(FieldDecoder& d, const std::string& s, std::string_view path,
                                       bool allow_empty) {
  if (s == "NoSchedule") return TaintEffect::kNoSchedule;
  if (s == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (s == "NoExecute") return TaintEffect::kNoExecute;
  if (!(s.empty() && allow_empty)) {
    d.Fail(path, StrCat("unknown taint effect \"", s,
                              "\" (want NoSchedule, PreferNoSchedule or NoExecute)"));
  }
  return std::nullopt;
}

std::vector<NodeSelectorRequirement> DecodeRequirements(FieldDecoder& d, const json& parent,
                                                        std::string_view key,
                                                        std::string_view path) {
  using Op = NodeSelectorRequirement::Operator;
  return d.List<NodeSelectorRequirement>(parent, key, path, [&](const json& r, const std::string& p) {
    NodeSelectorRequirement req;
    req.key = d.String(r, "key", Path(p, "key"));
    std::string op = d.String(r, "operator", Path(p, "operator"));
    static const std::pair<std::string_view, Op> kOps[] = {
        {"In", Op::kIn}, {"NotIn", Op::kNotIn}, {"Exists", Op::kExists},
        {"DoesNotExist", Op::kDoesNotExist}, {"Gt", Op::kGt}, {"Lt", Op::kLt}};
    bool known = false;
    for (const auto& [name, value] : kOps) {
      if (op == name) {
        req.op = value;
        known = true;
      }
    }
    if (!known) d.Fail(Path(p, "operator"), StrCat("unknown operator \"", op, "\""));
    d.ForEach(r, "values", Path(p, "values"), [&](const json& value, const std::string& value_path) {
      if (!value.is_string()) {
        d.Fail(value_path, "expected a string");
        return;
      }
      req.values.push_back(value.get<std::string>());
    });
    bool needs_values = req.op == Op::kIn || req.op == Op::kNotIn;
    bool needs_one = req.op == Op::kGt || req.op == Op::kLt;
    if (needs_values && req.values.empty()) {
      d.Fail(Path(p, "values"), StrCat("must be non-empty for operator ", op));
    } else if (needs_one && req.values.size() != 1) {
      d.Fail(Path(p, "values"), StrCat("must have exactly one integer for operator ", op));
    } else if (!needs_values && !needs_one && !req.values.empty() && known) {
      d.Fail(Path(p, "values"), StrCat("must be empty for operator ", op));
    }
    return req;
  });
}

// A preferred term's weight (node affinity, pod affinity): 1..100, as the API server checks it,
// judged before it is narrowed to 32 bits.
int32_t DecodePreferenceWeight(FieldDecoder& d, const json& item, std::string_view path) {
  const int64_t weight = d.Int(item, "weight", Path(path, "weight"));
  if (weight < 1 || weight > 100) {
    d.Fail(Path(path, "weight"), StrCat("must be in 1..100, got ", weight));
    return 0;
  }
  return static_cast<int32_t>(weight);
}

NodeSelectorTerm DecodeTerm(FieldDecoder& d, const json& term, std::string_view path) {
  return NodeSelectorTerm{
      .match_expressions = DecodeRequirements(d, term, "matchExpressions",
                                              Path(path, "matchExpressions")),
      .match_fields = DecodeRequirements(d, term, "matchFields", Path(path, "matchFields")),
  };
}


NodeAffinity DecodeNodeAffinity(FieldDecoder& d, const json& spec) {
  NodeAffinity out;
  const json* affinity = d.Object(spec, "affinity", "spec.affinity");
  if (affinity == nullptr) return out;
  const std::string base = "spec.affinity.nodeAffinity";
  const json* na = d.Object(*affinity, "nodeAffinity", base);
  if (na == nullptr) return out;
  const std::string req_path = Path(base, "requiredDuringSchedulingIgnoredDuringExecution");
  out.required = DecodeNodeSelector(d, *na, "requiredDuringSchedulingIgnoredDuringExecution", req_path);
  const std::string pref_path = Path(base, "preferredDuringSchedulingIgnoredDuringExecution");
  out.preferred = d.List<PreferredSchedulingTerm>(
      *na, "preferredDuringSchedulingIgnoredDuringExecution", pref_path,
      [&](const json& item, const std::string& p) {
        PreferredSchedulingTerm term;
        term.weight = DecodePreferenceWeight(d, item, p);
        if (const json* pref = d.Object(item, "preference", Path(p, "preference"))) {
          term.preference = DecodeTerm(d, *pref, Path(p, "preference"));
        }
        return term;
      });
  return out;
}

// --- Pod-to-pod terms: label selectors, podAffinity/podAntiAffinity, topology spread. ---

std::vector<std::string> DecodeStringList(FieldDecoder& d, const json& parent, std::string_view key,
                                          std::string_view path) {
  std::vector<std::string> out;
  d.ForEach(parent, key, path, [&](const json& item, const std::string& p) {
    if (!item.is_string()) {
      d.Fail(p, StrCat("expected a string, got ", TypeName(item)));
      return;
    }
    out.push_back(item.get<std::string>());
  });
  return out;
}

// nullopt when the field is absent or null (a nil selector, which selects nothing).
std::optional<LabelSelector> DecodeLabelSelector(FieldDecoder& d, const json& parent,
                                                 std::string_view key, std::string_view path) {
  const json* sel = d.Object(parent, key, path);
  if (sel == nullptr) return std::nullopt;
  using Op = LabelSelectorRequirement::Operator;
  LabelSelector out;
  out.match_labels = d.StringMapField(*sel, "matchLabels", Path(path, "matchLabels"));
  const std::string exprs_path = Path(path, "matchExpressions");
  out.match_expressions = d.List<LabelSelectorRequirement>(
      *sel, "matchExpressions", exprs_path, [&](const json& r, const std::string& p) {
        LabelSelectorRequirement req;
        req.key = d.String(r, "key", Path(p, "key"));
        if (req.key.empty()) d.Fail(Path(p, "key"), "missing");
        const std::string op = d.String(r, "operator", Path(p, "operator"));
        if (op == "In") {
          req.op = Op::kIn;
        } else if (op == "NotIn") {
          req.op = Op::kNotIn;
        } else if (op == "Exists") {
          req.op = Op::kExists;
        } else if (op == "DoesNotExist") {
          req.op = Op::kDoesNotExist;
        } else {
          d.Fail(Path(p, "operator"),
                 StrCat("unknown operator \"", op, "\" (want In, NotIn, Exists or DoesNotExist)"));
        }
        req.values = DecodeStringList(d, r, "values", Path(p, "values"));
        const bool set_based = req.op == Op::kIn || req.op == Op::kNotIn;
        if (set_based && req.values.empty()) {
          d.Fail(Path(p, "values"), StrCat("must be non-empty for operator ", op));
        } else if (!set_based && !req.values.empty()) {
          d.Fail(Path(p, "values"), StrCat("must be empty for operator ", op));
        }
        return req;
      });
  return out;
}

// matchLabelKeys / mismatchLabelKeys: `key In (value)` / `key NotIn (value)` for each key the
// pod carries, ANDed into the selector (the API server does the same when it admits the pod;
// merging twice adds an identical requirement, which changes nothing).
void MergeLabelKeys(std::optional<LabelSelector>& selector, const std::vector<std::string>& keys,
                    const StringMap& pod_labels, LabelSelectorRequirement::Operator op) {
  if (!selector.has_value()) return;  // a nil selector stays nil: it selects nothing
  for (const std::string& key : keys) {
    auto it = pod_labels.find(key);
    if (it == pod_labels.end()) continue;
    selector->match_expressions.push_back({.key = key, .op = op, .values = {it->second}});
  }
}

PodAffinityTerm DecodePodAffinityTerm(FieldDecoder& d, const json& t, std::string_view path,
                                      const StringMap& pod_labels) {
  using Op = LabelSelectorRequirement::Operator;
  PodAffinityTerm term;
  term.label_selector = DecodeLabelSelector(d, t, "labelSelector", Path(path, "labelSelector"));
  term.namespaces = DecodeStringList(d, t, "namespaces", Path(path, "namespaces"));
  term.namespace_selector =
      DecodeLabelSelector(d, t, "namespaceSelector", Path(path, "namespaceSelector"));
  term.topology_key = d.String(t, "topologyKey", Path(path, "topologyKey"));
  if (term.topology_key.empty()) d.Fail(Path(path, "topologyKey"), "missing");
  term.match_label_keys = DecodeStringList(d, t, "matchLabelKeys", Path(path, "matchLabelKeys"));
  term.mismatch_label_keys =
      DecodeStringList(d, t, "mismatchLabelKeys", Path(path, "mismatchLabelKeys"));
  if (!term.label_selector && (!term.match_label_keys.empty() || !term.mismatch_label_keys.empty())) {
    d.Fail(Path(path, "matchLabelKeys"), "needs labelSelector to be set");
  }
  MergeLabelKeys(term.label_selector, term.match_label_keys, pod_labels, Op::kIn);
  MergeLabelKeys(term.label_selector, term.mismatch_label_keys, pod_labels, Op::kNotIn);
  return term;
}

PodAffinityRules DecodePodAffinityRules(FieldDecoder& d, const json& affinity, std::string_view key,
                                        const StringMap& pod_labels) {
  PodAffinityRules out;
  const std::string base = Path("spec.affinity", key);
  const json* rules = d.Object(affinity, key, base);
  if (rules == nullptr) return out;
  const std::string req_path = Path(base, "requiredDuringSchedulingIgnoredDuringExecution");
  out.required = d.List<PodAffinityTerm>(
      *rules, "requiredDuringSchedulingIgnoredDuringExecution", req_path,
      [&](const json& t, const std::string& p) { return DecodePodAffinityTerm(d, t, p, pod_labels); });
  const std::string pref_path = Path(base, "preferredDuringSchedulingIgnoredDuringExecution");
  out.preferred = d.List<WeightedPodAffinityTerm>(
      *rules, "preferredDuringSchedulingIgnoredDuringExecution", pref_path,
      [&](const json& item, const std::string& p) {
        WeightedPodAffinityTerm w;
        w.weight = DecodePreferenceWeight(d, item, p);
        const std::string term_path = Path(p, "podAffinityTerm");
        if (const json* t = d.Object(item, "podAffinityTerm", term_path)) {
          w.term = DecodePodAffinityTerm(d, *t, term_path, pod_labels);
        } else {
          d.Fail(term_path, "missing");
        }
        return w;
      });
  return out;
}

std::optional<NodeInclusionPolicy> DecodeInclusionPolicy(FieldDecoder& d, const json& c,
                                                         std::string_view key, std::string_view path) {
  const std::string s = d.String(c, key, path);
  if (s.empty()) return std::nullopt;
  if (s == "Honor") return NodeInclusionPolicy::kHonor;
  if (s == "Ignore") return NodeInclusionPolicy::kIgnore;
  d.Fail(path, StrCat("unknown policy \"", s, "\" (want Honor or Ignore)"));
  return std::nullopt;
}

std::vector<TopologySpreadConstraint> DecodeTopologySpread(FieldDecoder& d, const json& spec,
                                                           const StringMap& pod_labels) {
  auto constraint = [&](const json& c, const std::string& p) {
    TopologySpreadConstraint tsc;
    const int64_t skew = d.Int(c, "maxSkew", Path(p, "maxSkew"));
    if (skew < 1 || skew > INT32_MAX) d.Fail(Path(p, "maxSkew"), StrCat("must be at least 1, got ", skew));
    tsc.max_skew = static_cast<int32_t>(skew);
    tsc.topology_key = d.String(c, "topologyKey", Path(p, "topologyKey"));
    if (tsc.topology_key.empty()) d.Fail(Path(p, "topologyKey"), "missing");
    const std::string when = d.String(c, "whenUnsatisfiable", Path(p, "whenUnsatisfiable"));
    if (when == "ScheduleAnyway") {
      tsc.when_unsatisfiable = TopologySpreadConstraint::WhenUnsatisfiable::kScheduleAnyway;
    } else if (when != "DoNotSchedule") {
      d.Fail(Path(p, "whenUnsatisfiable"),
             StrCat("unknown value \"", when, "\" (want DoNotSchedule or ScheduleAnyway)"));
    }
    tsc.label_selector = DecodeLabelSelector(d, c, "labelSelector", Path(p, "labelSelector"));
    if (c.is_object() && c.contains("minDomains") && !c["minDomains"].is_null()) {
      const int64_t min_domains = d.Int(c, "minDomains", Path(p, "minDomains"));
      if (min_domains < 1 || min_domains > INT32_MAX) {
        d.Fail(Path(p, "minDomains"), StrCat("must be at least 1, got ", min_domains));
      } else if (tsc.when_unsatisfiable != TopologySpreadConstraint::WhenUnsatisfiable::kDoNotSchedule) {
        d.Fail(Path(p, "minDomains"), "may only be set with whenUnsatisfiable DoNotSchedule");
      }
      tsc.min_domains = static_cast<int32_t>(min_domains);
    }
    tsc.node_affinity_policy =
        DecodeInclusionPolicy(d, c, "nodeAffinityPolicy", Path(p, "nodeAffinityPolicy"));
    tsc.node_taints_policy = DecodeInclusionPolicy(d, c, "nodeTaintsPolicy", Path(p, "nodeTaintsPolicy"));
    tsc.match_label_keys = DecodeStringList(d, c, "matchLabelKeys", Path(p, "matchLabelKeys"));
    MergeLabelKeys(tsc.label_selector, tsc.match_label_keys, pod_labels,
                   LabelSelectorRequirement::Operator::kIn);
    return tsc;
  };
  return d.List<TopologySpreadConstraint>(spec, "topologySpreadConstraints", "spec.topologySpreadConstraints",
                                          constraint);
}

std::vector<HostPort> DecodeHostPorts(FieldDecoder& d, const json& container, std::string_view path) {
  std::vector<HostPort> out;
  d.ForEach(container, "ports", path, [&](const json& port, const std::string& p) {
    const int64_t host_port = d.Int(port, "hostPort", Path(p, "hostPort"));
    if (host_port < 0 || host_port > 65535) {
      d.Fail(Path(p, "hostPort"), StrCat("must be in 0..65535, got ", host_port));
    }
    const std::string protocol = d.String(port, "protocol", Path(p, "protocol"), "TCP");
    if (protocol != "TCP" && protocol != "UDP" && protocol != "SCTP") {
      d.Fail(Path(p, "protocol"), StrCat("unknown protocol \"", protocol, "\" (want TCP, UDP or SCTP)"));
    }
    if (host_port <= 0) return;  // not bound on the node
    std::string ip = d.String(port, "hostIP", Path(p, "hostIP"));
    if (ip == "0.0.0.0") ip.clear();
    out.push_back({.host_ip = std::move(ip), .protocol = protocol,
                   .port = static_cast<int32_t>(host_port)});
  });
  return out;
}

std::vector<Container> DecodeContainers(FieldDecoder& d, const json& spec, std::string_view key) {
  return d.List<Container>(spec, key, Path("spec", key), [&](const json& c, const std::string& p) {
    Container container;
    container.name = d.String(c, "name", Path(p, "name"));
    container.restart_always = d.String(c, "restartPolicy", Path(p, "restartPolicy")) == "Always";
    container.host_ports = DecodeHostPorts(d, c, Path(p, "ports"));
    if (const json* res = d.Object(c, "resources", Path(p, "resources"))) {
      container.requests = d.ResourceMap(*res, "requests", Path(p, "resources.requests"));
      // Kubernetes defaults a resource's request to its limit when only the limit is given.
      const json* given = d.Object(*res, "requests", Path(p, "resources.requests"));
      Resources limits = d.ResourceMap(*res, "limits", Path(p, "resources.limits"));
      for (const auto& [name, amount] : limits.Entries()) {
        if (given == nullptr || !given->contains(name)) container.requests.Set(name, amount);
      }
    }
    return container;
  });
}

std::vector<Toleration> DecodeTolerationList(FieldDecoder& d, const json& parent, std::string_view key,
                                             std::string_view path) {
  return d.List<Toleration>(parent, key, path, [&](const json& t, const std::string& p) {
    Toleration tol;
    DecodeTolerationFields(d, t, p, tol);
    tol.effect = ParseEffect(d, d.String(t, "effect", Path(p, "effect")), Path(p, "effect"), true);
    return tol;
  });
}

std::optional<PreemptionPolicy> DecodePreemptionPolicy(FieldDecoder& d, const json& parent,
                                                       std::string_view path) {
  std::string s = d.String(parent, "preemptionPolicy", path);
  if (s.empty()) return std::nullopt;
  if (s == "Never") return PreemptionPolicy::kNever;
  if (s == "PreemptLowerPriority") return PreemptionPolicy::kPreemptLowerPriority;
  d.Fail(path, StrCat("unknown preemption policy \"", s, "\" (want PreemptLowerPriority or Never)"));
  return std::nullopt;
}

// The object's spec, or an empty object when it has none (a spec of the wrong type is recorded).
const json& SpecOrEmpty(FieldDecoder& d, const json& object) {
  static const json kEmpty = json::object();
  const json* spec = d.Object(object, "spec", "spec");
  return spec == nullptr ? kEmpty : *spec;
}

// A claim's or volume's storage class: the beta annotation wins over spec.storageClassName, as
// in kube's GetPersistentVolumeClaimClass and GetPersistentVolumeClass.
std::string DecodeStorageClassName(FieldDecoder& d, const ObjectMeta& meta, const json& spec) {
  auto beta = meta.annotations.find("volume.beta.kubernetes.io/storage-class");
  if (beta != meta.annotations.end()) return beta->second;
  return d.String(spec, "storageClassName", "spec.storageClassName");
}

// spec.volumes: the entries that use a claim (persistentVolumeClaim, generic ephemeral).
std::vector<PodVolume> DecodePodVolumes(FieldDecoder& d, const json& spec) {
  std::vector<PodVolume> out;
  d.ForEach(spec, "volumes", "spec.volumes", [&](const json& v, const std::string& p) {
    PodVolume volume{.name = d.String(v, "name", Path(p, "name"))};
    if (const json* claim = d.Object(v, "persistentVolumeClaim", Path(p, "persistentVolumeClaim"))) {
      volume.claim_name = d.String(*claim, "claimName", Path(p, "persistentVolumeClaim.claimName"));
      if (volume.claim_name.empty()) d.Fail(Path(p, "persistentVolumeClaim.claimName"), "missing");
    } else if (d.Object(v, "ephemeral", Path(p, "ephemeral")) != nullptr) {
      volume.ephemeral = true;
    } else {
      return;  // a volume without a claim (emptyDir, configMap, ...): nothing to schedule
    }
    if (volume.name.empty()) d.Fail(Path(p, "name"), "missing");
    out.push_back(std::move(volume));
  });
  return out;
}

// spec.accessModes as AccessMode bits; an unknown mode names the entry.
uint8_t DecodeAccessModes(FieldDecoder& d, const json& spec, std::string_view path) {
  uint8_t modes = 0;
  const std::vector<std::string> names = DecodeStringList(d, spec, "accessModes", path);
  for (size_t i = 0; i < names.size(); ++i) {
    std::optional<AccessMode> mode = ParseAccessMode(names[i]);
    if (!mode.has_value()) {
      d.Fail(d.ItemPath(path, i), StrCat("unknown access mode \"", names[i],
                                         "\" (want ReadWriteOnce, ReadOnlyMany, ReadWriteMany or ReadWriteOncePod)"));
      continue;
    }
    modes |= *mode;
  }
  return modes;
}

VolumeMode DecodeVolumeMode(FieldDecoder& d, const json& spec, std::string_view path) {
  const std::string mode = d.String(spec, "volumeMode", path, "Filesystem");
  if (mode == "Block") return VolumeMode::kBlock;
  if (mode != "Filesystem") d.Fail(path, StrCat("unknown volume mode \"", mode, "\" (want Filesystem or Block)"));
  return VolumeMode::kFilesystem;
}

// A storage quantity in bytes from a resource map (`storage` key); 0 when absent.
int64_t DecodeStorage(FieldDecoder& d, const json& parent, std::string_view key, std::string_view path) {
  const json* map = d.Object(parent, key, path);
  if (map == nullptr) return 0;
  const std::string field = Path(path, "storage");
  const std::string text = d.String(*map, "storage", field);
  if (text.empty()) return 0;
  absl::StatusOr<int64_t> bytes = ParseValue(text);
  if (!bytes.ok()) {
    d.Fail(field, ToStd(bytes.status().message()));
    return 0;
  }
  if (*bytes < 0) d.Fail(field, StrCat("negative quantity \"", text, "\" is not allowed"));
  return *bytes;
}

// Every field of a pod; errors are recorded in `d` (the first one wins), fields that fail keep
// their defaults. The requests are computed by the caller.
Pod DecodePodFields(FieldDecoder& d, const json& object) {
  Pod pod;
  pod.meta = d.Meta(object);
  if (pod.meta.namespace_.empty()) pod.meta.namespace_ = "default";
  const json* spec = &SpecOrEmpty(d, object);
  pod.scheduler_name = d.String(*spec, "schedulerName", "spec.schedulerName", "default-scheduler");
  pod.node_name = d.String(*spec, "nodeName", "spec.nodeName");
  pod.node_selector = d.StringMapField(*spec, "nodeSelector", "spec.nodeSelector");
  pod.node_affinity = DecodeNodeAffinity(d, *spec);
  pod.tolerations = DecodeTolerationList(d, *spec, "tolerations", "spec.tolerations");
  if (const json* affinity = d.Object(*spec, "affinity", "spec.affinity")) {
    pod.pod_affinity = DecodePodAffinityRules(d, *affinity, "podAffinity", pod.meta.labels);
    pod.pod_anti_affinity = DecodePodAffinityRules(d, *affinity, "podAntiAffinity", pod.meta.labels);
  }
  pod.topology_spread_constraints = DecodeTopologySpread(d, *spec, pod.meta.labels);
  if (spec->contains("priority") && !(*spec)["priority"].is_null()) {
    int64_t p = d.Int(*spec, "priority", "spec.priority");
    if (p < INT32_MIN || p > INT32_MAX) d.Fail("spec.priority", "out of the int32 range");
    pod.priority = static_cast<int32_t>(p);
  }
  pod.priority_class_name = d.String(*spec, "priorityClassName", "spec.priorityClassName");
  pod.preemption_policy = DecodePreemptionPolicy(d, *spec, "spec.preemptionPolicy");
  pod.containers = DecodeContainers(d, *spec, "containers");
  pod.init_containers = DecodeContainers(d, *spec, "initContainers");
  pod.overhead = d.ResourceMap(*spec, "overhead", "spec.overhead");
  pod.volumes = DecodePodVolumes(d, *spec);
  d.ForEach(*spec, "schedulingGates", "spec.schedulingGates", [&](const json& gate, const std::string& p) {
    std::string name = d.String(gate, "name", Path(p, "name"));
    if (name.empty()) {
      d.Fail(Path(p, "name"), "missing");
      return;
    }
    pod.scheduling_gates.push_back(std::move(name));
  });
  if (const json* ref = d.Object(*spec, "workloadRef", "spec.workloadRef")) {
    pod.workload_ref = WorkloadReference{
        .name = d.String(*ref, "name", "spec.workloadRef.name"),
        .pod_group = d.String(*ref, "podGroup", "spec.workloadRef.podGroup"),
        .pod_group_replica_key =
            d.String(*ref, "podGroupReplicaKey", "spec.workloadRef.podGroupReplicaKey")};
    if (pod.workload_ref->name.empty()) d.Fail("spec.workloadRef.name", "missing");
    if (pod.workload_ref->pod_group.empty()) d.Fail("spec.workloadRef.podGroup", "missing");
  }
  pod.resource_claims = d.List<PodResourceClaim>(
      *spec, "resourceClaims", "spec.resourceClaims", [&](const json& c, const std::string& p) {
        PodResourceClaim claim{
            .name = d.String(c, "name", Path(p, "name")),
            .resource_claim_name = d.String(c, "resourceClaimName", Path(p, "resourceClaimName")),
            .resource_claim_template_name =
                d.String(c, "resourceClaimTemplateName", Path(p, "resourceClaimTemplateName"))};
        if (claim.name.empty()) d.Fail(Path(p, "name"), "missing");
        if (claim.resource_claim_name.empty() == claim.resource_claim_template_name.empty()) {
          d.Fail(p, "exactly one of resourceClaimName and resourceClaimTemplateName must be set");
        }
        return claim;
      });
  if (const json* group = d.Object(*spec, "schedulingGroup", "spec.schedulingGroup")) {
    pod.scheduling_group =
        d.String(*group, "podGroupName", "spec.schedulingGroup.podGroupName");
    if (pod.scheduling_group.empty()) d.Fail("spec.schedulingGroup.podGroupName", "missing");
  }
  if (const json* status = d.Object(object, "status", "status")) {
    std::string phase = d.String(*status, "phase", "status.phase", "Pending");
    static const std::pair<std::string_view, PodPhase> kPhases[] = {
        {"Pending", PodPhase::kPending},     {"Running", PodPhase::kRunning},
        {"Succeeded", PodPhase::kSucceeded}, {"Failed", PodPhase::kFailed},
        {"Unknown", PodPhase::kUnknown}};
    bool known = false;
    for (const auto& [name, value] : kPhases) {
      if (phase == name) {
        pod.phase = value;
        known = true;
      }
    }
    if (!known) d.Fail("status.phase", StrCat("unknown phase \"", phase, "\""));
    pod.nominated_node_name = d.String(*status, "nominatedNodeName", "status.nominatedNodeName");
    d.ForEach(*status, "resourceClaimStatuses", "status.resourceClaimStatuses",
              [&](const json& c, const std::string& p) {
                const std::string name = d.String(c, "name", Path(p, "name"));
                if (name.empty()) d.Fail(Path(p, "name"), "missing");
                std::string generated = d.String(c, "resourceClaimName", Path(p, "resourceClaimName"));
                for (PodResourceClaim& claim : pod.resource_claims) {
                  if (claim.name == name) claim.generated_claim_name = generated;
                }
              });
    if (status->contains("startTime") && !(*status)["startTime"].is_null()) {
      pod.start_time = d.Timestamp(*status, "startTime", "status.startTime");
    }
  }
  return pod;
}

// Every amount of `r` at most kUnreadableQuantity.
void CapAmounts(Resources& r) {
  for (const auto& [name, amount] : r.Entries()) {
    if (amount > kUnreadableQuantity) r.Set(name, kUnreadableQuantity);
  }
}

// What a bound pod holds: its requests, each amount at most kUnreadableQuantity (more than any
// node has), so that the sums of a node's pods never overflow. Sums that would pass int64 (two
// containers of "memory: 5E") saturate there instead of failing.
Resources BoundPodCharge(Pod pod) {
  for (auto* list : {&pod.containers, &pod.init_containers}) {
    for (Container& c : *list) CapAmounts(c.requests);
  }
  CapAmounts(pod.overhead);
  absl::StatusOr<Resources> requests = ComputePodRequests(pod);
  Resources out;
  if (requests.ok()) {
    out = *std::move(requests);
  } else {
    // Only thousands of containers each at the cap get here: every resource any of them asks
    // for is held in full.
    for (const auto* list : {&pod.containers, &pod.init_containers}) {
      for (const Container& c : *list) {
        for (const auto& [name, amount] : c.requests.Entries()) out.Set(name, kUnreadableQuantity);
      }
    }
    for (const auto& [name, amount] : pod.overhead.Entries()) out.Set(name, kUnreadableQuantity);
  }
  CapAmounts(out);
  out.pods = 1;
  return out;
}

// What a pod bound to a node holds, when strict decoding failed with `problem`.
absl::StatusOr<Pod> DecodeBoundPodLeniently(const json& object, const absl::Status& problem) {
  FieldDecoder d(DescribeObject(object));
  d.SaturateUnreadableQuantities();
  Pod pod = DecodePodFields(d, object);
  if (pod.meta.name.empty() || pod.node_name.empty()) return problem;
  pod.requests = BoundPodCharge(pod);
  pod.decode_warnings.push_back(
      StrCat(ToStd(problem.message()), " (the pod is bound to ", pod.node_name,
             ": charged as read leniently; a quantity that does not read counts as the node's whole capacity)"));
  ReadGpuDevicesAnnotation(pod);
  return pod;
}

}  // namespace

std::optional<LabelSelector> FieldDecoder::Selector(const json& parent, std::string_view key,
                                                    std::string_view path) {
  return DecodeLabelSelector(*this, parent, key, path);
}

Pod DecodePodIdentity(const json& object) {
  FieldDecoder d(DescribeObject(object));
  Pod pod;
  pod.meta = d.Meta(object);
  if (pod.meta.namespace_.empty()) pod.meta.namespace_ = "default";
  const json* spec = &SpecOrEmpty(d, object);
  pod.scheduler_name = d.String(*spec, "schedulerName", "spec.schedulerName", "default-scheduler");
  pod.node_name = d.String(*spec, "nodeName", "spec.nodeName");
  return pod;
}

absl::StatusOr<Pod> DecodePod(const json& object) {
  FieldDecoder d(DescribeObject(object));
  Pod pod = DecodePodFields(d, object);
  if (d.ok()) {
    absl::StatusOr<Resources> requests = ComputePodRequests(pod);
    if (!requests.ok()) d.Fail("spec.containers", ToStd(requests.status().message()));
    if (requests.ok()) pod.requests = *std::move(requests);
  }
  if (!d.ok()) {
    if (pod.node_name.empty()) return d.status();
    return DecodeBoundPodLeniently(object, d.status());
  }
  if (!pod.node_name.empty()) CapAmounts(pod.requests);
  ReadGpuDevicesAnnotation(pod);
  return pod;
}

std::vector<Taint> DecodeTaints(FieldDecoder& d, const json& parent, std::string_view key,
                                std::string_view path) {
  return d.List<Taint>(parent, key, path, [&](const json& t, const std::string& p) {
    Taint taint{.key = d.String(t, "key", Path(p, "key")), .value = d.String(t, "value", Path(p, "value"))};
    if (taint.key.empty()) d.Fail(Path(p, "key"), "missing");
    if (auto effect = ParseEffect(d, d.String(t, "effect", Path(p, "effect")), Path(p, "effect"), false)) {
      taint.effect = *effect;
    }
    return taint;
  });
}

std::vector<Toleration> DecodeTolerations(FieldDecoder& d, const json& parent, std::string_view key,
                                          std::string_view path) {
  return DecodeTolerationList(d, parent, key, path);
}

namespace {

// Resources where reading "none of it" could put a pod where it does not fit: the ones every
// pod asks for, and the GPUs whose devices are also read from the node's labels.
bool NodeReadsStrictly(std::string_view resource) {
  return resource == kCpu || resource == kMemory || resource == kEphemeralStorage || resource == kPods ||
         resource.starts_with("nvidia.com/");
}

// status.capacity / status.allocatable, read so that one odd entry cannot make a node
// unreadable: an amount beyond int64 saturates (the node offers more than can be counted), and
// an extended resource whose amount does not read counts as none of it (a pod asking for it
// does not fit there), named in `warnings`. A core resource or a GPU that does not read fails.
Resources NodeResourceMap(FieldDecoder& d, const json& status, std::string_view key,
                          std::vector<std::string>& warnings) {
  Resources out;
  const std::string path = Path("status", key);
  const json* m = d.Object(status, key, path);
  if (m == nullptr) return out;
  for (const auto& [name, v] : m->items()) {
    const std::string field = Path(path, name);
    const std::string text = v.is_string() ? v.get<std::string>() : v.is_number_integer() ? v.dump() : "";
    absl::StatusOr<int64_t> amount = absl::InvalidArgumentError(StrCat("expected a quantity string, got ", v.dump()));
    if (!text.empty()) amount = IsMilliResource(name) ? ParseMilliSaturating(text) : ParseValueSaturating(text);
    if (amount.ok() && *amount < 0) {
      amount = absl::InvalidArgumentError(StrCat("negative quantity \"", text, "\" is not allowed"));
    }
    if (amount.ok()) {
      out.Set(name, *amount);
    } else if (NodeReadsStrictly(name)) {
      d.Fail(field, ToStd(amount.status().message()));
    } else {
      warnings.push_back(StrCat(d.object(), ": ", field, ": ", ToStd(amount.status().message()),
                                " (read as none of it: no pod that asks for ", name, " goes there)"));
    }
  }
  return out;
}

}  // namespace

NodeRead ReadNode(const json& object) {
  FieldDecoder d(DescribeObject(object));
  NodeRead out;
  Node node;
  node.meta = d.Meta(object);
  if (const json* spec = d.Object(object, "spec", "spec")) {
    node.unschedulable = d.Bool(*spec, "unschedulable", "spec.unschedulable");
    node.taints = DecodeTaints(d, *spec, "taints", "spec.taints");
  }
  if (const json* status = d.Object(object, "status", "status")) {
    node.capacity = NodeResourceMap(d, *status, "capacity", out.warnings);
    node.allocatable = status->contains("allocatable") && !(*status)["allocatable"].is_null()
                           ? NodeResourceMap(d, *status, "allocatable", out.warnings)
                           : node.capacity;
    if (const json* allocatable = d.Object(*status, "allocatable", "status.allocatable")) {
      for (const auto& [key, value] : allocatable->items()) {
        if (!key.starts_with(kAttachLimitPrefix) || !value.is_string()) continue;
        absl::StatusOr<int64_t> count = ParseValue(value.get<std::string>());
        if (count.ok()) node.attach_limits[key.substr(kAttachLimitPrefix.size())] = *count;
      }
    }
    // A node that reports no pod limit gets the kubelet's default (maxPods 110).
    auto has_pods = [&](const char* key) {
      auto it = status->find(key);
      return it != status->end() && it->is_object() && it->contains("pods");
    };
    if (!has_pods("allocatable") && !has_pods("capacity")) {
      node.allocatable.pods = kDefaultMaxPods;
      node.capacity.pods = kDefaultMaxPods;
    }
    d.ForEach(*status, "conditions", "status.conditions", [&](const json& c, const std::string& p) {
      if (d.String(c, "type", Path(p, "type")) != "Ready") return;
      std::string s = d.String(c, "status", Path(p, "status"));
      node.ready = s == "True"    ? ConditionStatus::kTrue
                   : s == "False" ? ConditionStatus::kFalse
                                  : ConditionStatus::kUnknown;
    });
  }
  if (d.ok()) {
    out.node = std::move(node);
  } else {
    out.node = d.status();
  }
  return out;
}

absl::StatusOr<Node> DecodeNode(const json& object) { return ReadNode(object).node; }

std::string ObjectName(const json& object) {
  if (!object.is_object()) return "";
  auto m = object.find("metadata");
  if (m == object.end() || !m->is_object()) return "";
  auto n = m->find("name");
  return n != m->end() && n->is_string() ? n->get<std::string>() : "";
}

Node FenceUnreadableNode(Node last) {
  last.unschedulable = true;
  const bool tainted = std::any_of(last.taints.begin(), last.taints.end(), [](const Taint& t) {
    return t.key == kUnreadableNodeTaint && t.effect == TaintEffect::kNoSchedule;
  });
  if (!tainted) last.taints.push_back(Taint{.key = std::string(kUnreadableNodeTaint), .effect = TaintEffect::kNoSchedule});
  // No room at all (not even for one pod), so no toleration can let a pod in.
  last.allocatable = Resources{};
  return last;
}

absl::StatusOr<PriorityClass> DecodePriorityClass(const json& object) {
  FieldDecoder d(DescribeObject(object));
  PriorityClass pc;
  pc.meta = d.Meta(object);
  if (!object.contains("value")) d.Fail("value", "missing");
  int64_t value = d.Int(object, "value", "value");
  // User classes stop at 1e9 (HighestUserDefinablePriority); the API server's built-in
  // system-cluster-critical (2e9) and system-node-critical (2e9 + 1000) sit above it.
  const int64_t max = pc.meta.name.rfind("system-", 0) == 0 ? 2000001000 : 1000000000;
  if (value < INT32_MIN || value > max) {
    d.Fail("value", StrCat("must be at most ", max, ", got ", value));
  }
  pc.value = static_cast<int32_t>(value);
  pc.global_default = d.Bool(object, "globalDefault", "globalDefault");
  pc.preemption_policy = DecodePreemptionPolicy(d, object, "preemptionPolicy")
                             .value_or(PreemptionPolicy::kPreemptLowerPriority);
  if (!d.ok()) return d.status();
  return pc;
}

absl::StatusOr<PodDisruptionBudget> DecodePodDisruptionBudget(const json& object) {
  FieldDecoder d(DescribeObject(object));
  PodDisruptionBudget pdb;
  pdb.meta = d.Meta(object);
  if (pdb.meta.namespace_.empty()) pdb.meta.namespace_ = "default";
  if (const json* spec = d.Object(object, "spec", "spec")) {
    pdb.selector = DecodeLabelSelector(d, *spec, "selector", "spec.selector");
  }
  if (const json* status = d.Object(object, "status", "status")) {
    const int64_t allowed = d.Int(*status, "disruptionsAllowed", "status.disruptionsAllowed");
    if (allowed < 0 || allowed > INT32_MAX) {
      d.Fail("status.disruptionsAllowed", StrCat("must be 0..", INT32_MAX, ", got ", allowed));
    }
    pdb.disruptions_allowed = static_cast<int32_t>(allowed);
    if (const json* disrupted = d.Object(*status, "disruptedPods", "status.disruptedPods")) {
      for (const auto& [name, when] : disrupted->items()) pdb.disrupted_pods.push_back(name);
    }
  }
  if (!d.ok()) return d.status();
  return pdb;
}

absl::StatusOr<PersistentVolumeClaim> DecodePersistentVolumeClaim(const json& object) {
  FieldDecoder d(DescribeObject(object));
  PersistentVolumeClaim pvc;
  pvc.meta = d.Meta(object);
  if (pvc.meta.namespace_.empty()) pvc.meta.namespace_ = "default";
  const json* spec = &SpecOrEmpty(d, object);
  pvc.access_modes = DecodeAccessModes(d, *spec, "spec.accessModes");
  pvc.storage_class = DecodeStorageClassName(d, pvc.meta, *spec);
  pvc.volume_name = d.String(*spec, "volumeName", "spec.volumeName");
  if (const json* resources = d.Object(*spec, "resources", "spec.resources")) {
    pvc.request_bytes = DecodeStorage(d, *resources, "requests", "spec.resources.requests");
  }
  pvc.selector = DecodeLabelSelector(d, *spec, "selector", "spec.selector");
  pvc.volume_mode = DecodeVolumeMode(d, *spec, "spec.volumeMode");
  if (const json* status = d.Object(object, "status", "status")) {
    pvc.phase_bound = d.String(*status, "phase", "status.phase") == "Bound";
  }
  if (!d.ok()) return d.status();
  return pvc;
}

absl::StatusOr<PersistentVolume> DecodePersistentVolume(const json& object) {
  FieldDecoder d(DescribeObject(object));
  PersistentVolume pv;
  pv.meta = d.Meta(object);
  const json* spec = &SpecOrEmpty(d, object);
  pv.access_modes = DecodeAccessModes(d, *spec, "spec.accessModes");
  pv.capacity_bytes = DecodeStorage(d, *spec, "capacity", "spec.capacity");
  pv.storage_class = DecodeStorageClassName(d, pv.meta, *spec);
  if (const json* ref = d.Object(*spec, "claimRef", "spec.claimRef")) {
    pv.claim_ref = ClaimReference{
        .namespace_ = d.String(*ref, "namespace", "spec.claimRef.namespace"),
        .name = d.String(*ref, "name", "spec.claimRef.name"),
        .uid = d.String(*ref, "uid", "spec.claimRef.uid")};
    if (pv.claim_ref->name.empty()) d.Fail("spec.claimRef.name", "missing");
    if (pv.claim_ref->namespace_.empty()) pv.claim_ref->namespace_ = "default";
  }
  if (const json* affinity = d.Object(*spec, "nodeAffinity", "spec.nodeAffinity")) {
    pv.node_affinity = DecodeNodeSelector(d, *affinity, "required", "spec.nodeAffinity.required");
  }
  pv.volume_mode = DecodeVolumeMode(d, *spec, "spec.volumeMode");
  if (const json* csi = d.Object(*spec, "csi", "spec.csi")) {
    pv.csi_driver = d.String(*csi, "driver", "spec.csi.driver");
    pv.csi_volume_handle = d.String(*csi, "volumeHandle", "spec.csi.volumeHandle");
    if (pv.csi_driver.empty()) d.Fail("spec.csi.driver", "missing");
    if (pv.csi_volume_handle.empty()) d.Fail("spec.csi.volumeHandle", "missing");
  }
  if (const json* status = d.Object(object, "status", "status")) {
    pv.phase = d.String(*status, "phase", "status.phase");
  }
  if (!d.ok()) return d.status();
  return pv;
}

absl::StatusOr<StorageClass> DecodeStorageClass(const json& object) {
  FieldDecoder d(DescribeObject(object));
  StorageClass sc;
  sc.meta = d.Meta(object);
  sc.provisioner = d.String(object, "provisioner", "provisioner");
  if (sc.provisioner.empty()) d.Fail("provisioner", "missing");
  const std::string mode = d.String(object, "volumeBindingMode", "volumeBindingMode", "Immediate");
  if (mode == "WaitForFirstConsumer") {
    sc.binding_mode = VolumeBindingMode::kWaitForFirstConsumer;
  } else if (mode != "Immediate") {
    d.Fail("volumeBindingMode",
           StrCat("unknown binding mode \"", mode, "\" (want Immediate or WaitForFirstConsumer)"));
  }
  sc.allowed_topologies = d.List<TopologySelectorTerm>(
      object, "allowedTopologies", "allowedTopologies", [&](const json& t, const std::string& p) {
        TopologySelectorTerm term;
        term.match_label_expressions = d.List<TopologySelectorTerm::Requirement>(
            t, "matchLabelExpressions", Path(p, "matchLabelExpressions"), [&](const json& x, const std::string& e) {
              TopologySelectorTerm::Requirement r{.key = d.String(x, "key", Path(e, "key")),
                                                  .values = DecodeStringList(d, x, "values", Path(e, "values"))};
              if (r.key.empty()) d.Fail(Path(e, "key"), "missing");
              if (r.values.empty()) d.Fail(Path(e, "values"), "must be non-empty");
              return r;
            });
        return term;
      });
  if (!d.ok()) return d.status();
  return sc;
}

absl::StatusOr<Namespace> DecodeNamespace(const json& object) {
  FieldDecoder d(DescribeObject(object));
  Namespace ns{.meta = d.Meta(object)};
  if (!d.ok()) return d.status();
  return ns;
}

absl::StatusOr<CSINode> DecodeCSINode(const json& object) {
  FieldDecoder d(DescribeObject(object));
  CSINode node{.meta = d.Meta(object)};
  const json* spec = &SpecOrEmpty(d, object);
  node.drivers = d.List<CSINode::Driver>(*spec, "drivers", "spec.drivers", [&](const json& j, const std::string& p) {
    CSINode::Driver driver{.name = d.String(j, "name", Path(p, "name"))};
    if (driver.name.empty()) d.Fail(Path(p, "name"), "missing");
    if (const json* allocatable = d.Object(j, "allocatable", Path(p, "allocatable"))) {
      const std::string count_path = Path(p, "allocatable.count");
      if (allocatable->contains("count") && !(*allocatable)["count"].is_null()) {
        driver.allocatable_count = d.Int(*allocatable, "count", count_path);
        if (*driver.allocatable_count < 0) d.Fail(count_path, "must not be negative");
      }
    }
    return driver;
  });
  if (!d.ok()) return d.status();
  return node;
}

absl::StatusOr<ObjectList> DecodeList(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("not valid JSON");
  if (!doc.is_object()) return absl::InvalidArgumentError("not a Kubernetes List: top level is not an object");
  auto items = doc.find("items");
  if (items == doc.end() || !items->is_array()) {
    return absl::InvalidArgumentError("not a Kubernetes List: no \"items\" array");
  }
  ObjectList out;
  for (const json& item : *items) {
    std::string kind;
    if (item.is_object() && item.contains("kind") && item["kind"].is_string()) kind = item["kind"];
    auto keep = [&](auto decoded, auto& into) {
      if (decoded.ok()) {
        into.push_back(*std::move(decoded));
      } else {
        out.warnings.push_back(std::string(decoded.status().message()));
      }
    };
    if (kind == "Pod") {
      const size_t decoded_before = out.pods.size();
      keep(DecodePod(item), out.pods);
      if (out.pods.size() > decoded_before) {
        for (const std::string& w : out.pods.back().decode_warnings) out.warnings.push_back(w);
      }
    } else if (kind == "Node") {
      NodeRead node = ReadNode(item);
      for (std::string& w : node.warnings) out.warnings.push_back(std::move(w));
      if (node.node.ok()) {
        out.nodes.push_back(*std::move(node.node));
      } else if (!ObjectName(item).empty()) {
        // Its pods still hold what they hold there; it takes no new pod.
        FieldDecoder identity(DescribeObject(item));
        out.nodes.push_back(FenceUnreadableNode(Node{.meta = identity.Meta(item)}));
        out.warnings.push_back(StrCat(node.node.status().message(), "; the node takes no pods until it reads"));
      } else {
        out.warnings.push_back(std::string(node.node.status().message()));
      }
    } else if (kind == "PriorityClass") {
      keep(DecodePriorityClass(item), out.priority_classes);
    } else if (kind == "PodDisruptionBudget") {
      keep(DecodePodDisruptionBudget(item), out.disruption_budgets);
    } else if (kind == "PersistentVolumeClaim") {
      keep(DecodePersistentVolumeClaim(item), out.claims);
    } else if (kind == "PersistentVolume") {
      keep(DecodePersistentVolume(item), out.volumes);
    } else if (kind == "StorageClass") {
      keep(DecodeStorageClass(item), out.storage_classes);
    } else if (kind == "Namespace") {
      keep(DecodeNamespace(item), out.namespaces);
    } else if (kind == "CSINode") {
      keep(DecodeCSINode(item), out.csi_nodes);
    } else if (kind.empty()) {
      out.warnings.push_back(StrCat(DescribeObject(item), ": kind: missing"));
    } else {
      out.others.push_back(item);
    }
  }
  return out;
}

std::optional<std::vector<NodeSelectorTerm>> DecodeNodeSelector(FieldDecoder& d, const json& parent,
                                                                std::string_view key,
                                                                std::string_view path) {
  const json* selector = d.Object(parent, key, path);
  if (selector == nullptr) return std::nullopt;
  return d.List<NodeSelectorTerm>(*selector, "nodeSelectorTerms", Path(path, "nodeSelectorTerms"),
                                  [&](const json& term, const std::string& p) { return DecodeTerm(d, term, p); });
}

}  // namespace tessel
