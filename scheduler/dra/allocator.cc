// The DRA allocator's backtracking search, and the reasons it gives when a node does not fit.
#include "scheduler/dra/allocator.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "scheduler/dra/capacity.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"

namespace tessel::dra {

namespace {

// Why a device does or does not suit a request, before anything is allocated.
struct Verdict {
  enum Kind { kOk, kClassSelector, kRequestSelector, kBindingConditions, kCapacity, kTainted };
  Kind kind = kOk;
  int selector = 0;
};

// A request, or one subrequest of a firstAvailable request.
struct Variant {
  const DeviceAsk* ask = nullptr;
  std::string base_name;  // the request's name
  std::string full_name;  // "request" or "request/subrequest", as the result names it
  const DeviceClass* device_class = nullptr;
  std::string owner;  // "claim ns/name, request r/s", for messages
  int needed = 0;
  std::vector<int> all_devices;  // with AllocationMode All: the devices it must take
  std::vector<std::optional<Verdict>> verdicts;  // per candidate, computed on first use
};

struct ConstraintState {
  const DeviceConstraint* spec = nullptr;
  std::vector<const AttributeValue*> values;  // of the devices added so far
  bool AppliesTo(const Variant& v) const {
    if (spec->requests.empty()) return true;
    return std::any_of(spec->requests.begin(), spec->requests.end(), [&](const std::string& name) {
      return name == v.base_name || name == v.full_name;
    });
  }
  const std::string& attribute() const {
    return spec->match_attribute.empty() ? spec->distinct_attribute : spec->match_attribute;
  }
};

struct ClaimWork {
  const ResourceClaim* claim = nullptr;
  bool keep = false;  // already allocated
  std::vector<std::vector<int>> variants;  // per request: indexes into Search::variants_
  std::vector<int> chosen;                 // per request: the variant in use
  std::vector<ConstraintState> constraints;
  std::vector<Pick> picks;
  std::vector<int> pick_variant;  // per pick
};

// What TryTake changed, for Release.
struct Undo {
  bool counters = false;
  std::map<std::string, Amounts, std::less<>> counters_before;
  bool shared = false;
  Amounts shared_before;
  std::vector<int> constraints;  // indexes of the constraints a value was added to
};

bool SameRequirement(const NodeSelectorRequirement& a, const NodeSelectorRequirement& b) {
  return a.key == b.key && a.op == b.op && a.values == b.values;
}

void MergeRequirements(const std::vector<NodeSelectorRequirement>& from,
                       std::vector<NodeSelectorRequirement>& into) {
  for (const NodeSelectorRequirement& r : from) {
    bool present = std::any_of(into.begin(), into.end(),
                               [&](const NodeSelectorRequirement& o) { return SameRequirement(r, o); });
    if (!present) into.push_back(r);
  }
}

std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return StrCat(n, " ", n == 1 ? one : many);
}

// The order in which the search tries a node's candidates. With one allocation wanted (no
// choice: kube-scheduler's first found), the candidates' own order. With several alternatives
// to choose among, the smallest devices first (the largest share of its counter set a device
// consumes; a device consuming no counters is whole): the first alternatives found then include
// those that take the least (a count of devices met by partitions), which the choices prefer,
// and not only the first whole device with every combination of the rest.
std::vector<int> SearchOrder(const NodeDevices& devices, int limit) {
  std::vector<int> order(devices.candidates.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  if (limit <= 1) return order;
  constexpr int64_t kWhole = 1'000'000;
  std::vector<int64_t> share(order.size(), kWhole);
  bool partitions = false;  // none: every device is whole, and the order stays as it is
  for (size_t i = 0; i < order.size(); ++i) {
    const Candidate& c = devices.candidates[i];
    if (c.device->consumes_counters.empty()) continue;
    partitions = true;
    int64_t most = 0;
    for (const CounterConsumption& use : c.device->consumes_counters) {
      auto set = devices.pools[c.pool].counter_sets.find(use.counter_set);
      if (set == devices.pools[c.pool].counter_sets.end()) continue;
      for (const auto& [name, amount] : use.counters) {
        auto there = set->second.find(name);
        if (there == set->second.end() || there->second <= 0) continue;
        most = std::max(most, static_cast<int64_t>(static_cast<__int128>(amount) * kWhole / there->second));
      }
    }
    share[i] = std::min(most, kWhole);
  }
  if (!partitions) return order;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return share[a] < share[b]; });
  return order;
}

class Search {
 public:
  Search(const AllocationInput& input, const AllocatorOptions& options, int limit)
      : in_(input), options_(options), limit_(std::max(limit, 1)), order_(SearchOrder(input.devices, limit_)) {}

  // The alternatives found (maybe none: then reason() says why), or an error.
  absl::StatusOr<std::vector<Alternative>> Run();
  const std::string& reason() const { return reason_; }

 private:
  const Candidate& candidate(int c) const { return in_.devices.candidates[c]; }
  std::string ClaimName(const ClaimWork& w) const { return StrCat("claim ", ClaimKey(*w.claim)); }

  // Setup: variants, classes, constraints. False with reason_ set when a claim cannot fit.
  absl::StatusOr<bool> Prepare();
  absl::StatusOr<Verdict> Judge(Variant& v, int c);
  absl::StatusOr<Verdict> Judged(Variant& v, int c) {
    if (!v.verdicts[c].has_value()) {
      ASSIGN_OR_RETURN(Verdict verdict, Judge(v, c));
      v.verdicts[c] = verdict;
    }
    return *v.verdicts[c];
  }

  bool Done() const { return static_cast<int>(found_.size()) >= limit_ || exhausted_ || !error_.ok(); }
  void Step(int claim, int request, int device, int start);
  void StepVariant(int claim, int request, int variant, int device, int start);
  std::optional<Undo> TryTake(int claim, int variant, int c);
  void Release(int claim, int c, const Undo& undo);
  bool ConstraintAccepts(const ConstraintState& state, const AttributeValue* value) const;
  void Record();
  AllocationResult Result(const ClaimWork& w) const;

  std::string ExplainFailure();
  std::string ExplainVariant(Variant& v, bool* satisfiable);

  const AllocationInput& in_;
  const AllocatorOptions& options_;
  const int limit_;
  const std::vector<int> order_;  // the candidates in the order the search tries them
  std::vector<Variant> variants_;
  std::vector<ClaimWork> claims_;
  // Per candidate: held whole by an allocated claim; picks now holding it (non-admin, not
  // shared); claims holding it now (any pick); shares (allocated and now); capacity shares consume.
  std::vector<bool> held_;
  std::vector<int> exclusive_;
  std::vector<std::vector<int>> holders_;
  std::vector<int> shares_;
  std::vector<Amounts> shared_used_;
  std::vector<std::map<std::string, Amounts, std::less<>>> counters_left_;  // per pool
  std::vector<Alternative> found_;
  int64_t steps_ = 0;
  bool exhausted_ = false;
  absl::Status error_;
  std::string reason_;
};

absl::StatusOr<bool> Search::Prepare() {
  const size_t n = in_.devices.candidates.size();
  held_.assign(n, false);
  exclusive_.assign(n, 0);
  holders_.assign(n, {});
  shares_.assign(n, 0);
  shared_used_.assign(n, {});
  for (size_t c = 0; c < n; ++c) {
    const DeviceId& id = in_.devices.candidates[c].id;
    held_[c] = in_.allocated.exclusive.contains(id);
    if (auto it = in_.allocated.shared.find(id); it != in_.allocated.shared.end()) {
      shares_[c] = 1;
      shared_used_[c] = it->second;
    }
  }
  // Counters left in each pool after the devices allocated claims hold (wherever they are used).
  for (const Pool& pool : in_.devices.pools) {
    std::map<std::string, Amounts, std::less<>> left = pool.counter_sets;
    for (const PoolDevice& d : pool.all_devices) {
      if (!in_.allocated.Holds(d.id)) continue;
      for (const CounterConsumption& use : d.device->consumes_counters) {
        if (auto set = left.find(use.counter_set); set != left.end()) SubtractAmounts(set->second, use.counters);
      }
    }
    counters_left_.push_back(std::move(left));
  }

  for (const ResourceClaim* claim : in_.claims) {
    ClaimWork w{.claim = claim, .keep = claim->allocation.has_value()};
    if (w.keep) {
      if (!claim->allocation->AvailableOn(in_.node)) {
        reason_ = StrCat(ClaimName(w), " is allocated to devices that node ", in_.node.name(),
                         " cannot use");
        return false;
      }
      claims_.push_back(std::move(w));
      continue;
    }
    for (const DeviceRequest& request : claim->spec.requests) {
      std::vector<std::pair<std::string, const DeviceAsk*>> asks;
      if (request.exactly.has_value()) {
        asks.emplace_back(request.name, &*request.exactly);
      } else {
        for (const DeviceSubRequest& sub : request.first_available) {
          asks.emplace_back(StrCat(request.name, "/", sub.name), &sub.ask);
        }
      }
      std::vector<int> indexes;
      for (auto& [full_name, ask] : asks) {
        auto cls = in_.classes.find(ask->device_class_name);
        if (cls == in_.classes.end()) {
          reason_ = StrCat(ClaimName(w), ", request ", full_name, ": device class \"",
                           ask->device_class_name, "\" does not exist");
          return false;
        }
        Variant v{.ask = ask, .base_name = request.name, .full_name = full_name,
                  .device_class = &cls->second,
                  .owner = StrCat(ClaimName(w), ", request ", full_name)};
        v.verdicts.assign(n, std::nullopt);
        if (ask->count > kMaxDevicesPerClaim) {
          reason_ = StrCat(v.owner, ": asks for ", ask->count, " devices, more than the ",
                           kMaxDevicesPerClaim, " a claim can hold");
          return false;
        }
        v.needed = static_cast<int>(ask->count);
        indexes.push_back(static_cast<int>(variants_.size()));
        variants_.push_back(std::move(v));
      }
      w.variants.push_back(std::move(indexes));
    }
    w.chosen.assign(w.variants.size(), -1);
    for (const DeviceConstraint& c : claim->spec.constraints) w.constraints.push_back({.spec = &c});
    claims_.push_back(std::move(w));
  }

  // "All" means every matching device on the node, so each pool must be there in full.
  for (Variant& v : variants_) {
    if (v.ask->mode != AllocationMode::kAll) continue;
    for (const Pool& pool : in_.devices.pools) {
      if (!pool.usable()) {
        reason_ = StrCat(v.owner, ": asks for all devices, but resource pool ", pool.Describe(),
                         pool.incomplete ? " is being updated" : " is invalid: ", pool.invalid_reason);
        return false;
      }
    }
    for (int c = 0; c < static_cast<int>(in_.devices.candidates.size()); ++c) {
      ASSIGN_OR_RETURN(Verdict verdict, Judged(v, c));
      if (verdict.kind == Verdict::kOk || verdict.kind == Verdict::kTainted) v.all_devices.push_back(c);
    }
    v.needed = static_cast<int>(v.all_devices.size());
    if (v.needed > kMaxDevicesPerClaim) {
      reason_ = StrCat(v.owner, ": asks for all devices, and the ", v.needed, " that match are more than the ",
                       kMaxDevicesPerClaim, " a claim can hold");
      return false;
    }
  }
  return true;
}

absl::StatusOr<Verdict> Search::Judge(Variant& v, int c) {
  const Candidate& cand = candidate(c);
  const DeviceView view = ViewOf(*cand.device, cand.id.driver);
  auto check = [&](const std::vector<std::string>& selectors, Verdict::Kind kind,
                   std::string_view whose) -> absl::StatusOr<std::optional<Verdict>> {
    for (size_t i = 0; i < selectors.size(); ++i) {
      absl::StatusOr<bool> match = options_.matcher->Matches(selectors[i], view);
      if (!match.ok()) {
        return absl::Status(match.status().code(),
                            StrCat(whose, ": selector #", i, " (", selectors[i], ") on device ",
                                   FormatDeviceId(cand.id), ": ", match.status().message()));
      }
      if (!*match) return Verdict{.kind = kind, .selector = static_cast<int>(i)};
    }
    return std::optional<Verdict>();
  };
  ASSIGN_OR_RETURN(std::optional<Verdict> by_class,
                   check(v.device_class->selectors, Verdict::kClassSelector,
                         StrCat("DeviceClass ", v.device_class->meta.name)));
  if (by_class.has_value()) return *by_class;
  ASSIGN_OR_RETURN(std::optional<Verdict> by_request,
                   check(v.ask->selectors, Verdict::kRequestSelector, v.owner));
  if (by_request.has_value()) return *by_request;
  // Devices that wait for binding conditions need a binding flow Tessel does not have yet.
  if (!cand.device->binding_conditions.empty()) return Verdict{.kind = Verdict::kBindingConditions};
  std::optional<Amounts> consumed = ConsumedCapacity(*cand.device, v.ask->capacity_requests);
  if (!consumed.has_value() || !FitsCapacity(*cand.device, *consumed, {})) {
    return Verdict{.kind = Verdict::kCapacity};
  }
  for (const DeviceTaint& taint : cand.device->taints) {
    if (TaintBlocks(taint, v.ask->tolerations)) return Verdict{.kind = Verdict::kTainted};
  }
  return Verdict{};
}

bool Search::ConstraintAccepts(const ConstraintState& state, const AttributeValue* value) const {
  if (value == nullptr) return false;
  if (!state.spec->match_attribute.empty()) {
    return state.values.empty() || *state.values.front() == *value;
  }
  return std::none_of(state.values.begin(), state.values.end(),
                      [&](const AttributeValue* other) { return *other == *value; });
}

std::optional<Undo> Search::TryTake(int claim, int variant, int c) {
  ++steps_;
  if (steps_ > options_.max_steps) {
    exhausted_ = true;
    return std::nullopt;
  }
  ClaimWork& w = claims_[claim];
  const Variant& v = variants_[variant];
  const Candidate& cand = candidate(c);
  const Device& device = *cand.device;
  const bool admin = v.ask->admin_access;
  const bool multi = device.allow_multiple_allocations;
  if (static_cast<int>(w.picks.size()) >= kMaxDevicesPerClaim) return std::nullopt;
  const bool held_by_claim = std::find(holders_[c].begin(), holders_[c].end(), claim) != holders_[c].end();
  if (admin) {
    if (!multi && held_by_claim) return std::nullopt;
  } else {
    if (held_[c]) return std::nullopt;
    if (!multi && (!holders_[c].empty() || shares_[c] > 0)) return std::nullopt;
  }
  for (const DeviceTaint& taint : device.taints) {
    if (TaintBlocks(taint, v.ask->tolerations)) return std::nullopt;
  }
  Undo undo;
  Amounts consumed;
  if (!admin) {
    if (!device.consumes_counters.empty() && !(multi && shares_[c] > 0)) {
      auto& left = counters_left_[cand.pool];
      undo.counters = true;
      undo.counters_before = left;
      bool enough = true;
      for (const CounterConsumption& use : device.consumes_counters) {
        Amounts& set = left[use.counter_set];
        SubtractAmounts(set, use.counters);
        for (const auto& [name, amount] : use.counters) {
          if (set[name] < 0) enough = false;
        }
      }
      if (!enough) {
        left = std::move(undo.counters_before);
        return std::nullopt;
      }
    }
    std::optional<Amounts> take = ConsumedCapacity(device, v.ask->capacity_requests);
    if (!take.has_value() || (multi && !FitsCapacity(device, *take, shared_used_[c]))) {
      if (undo.counters) counters_left_[cand.pool] = std::move(undo.counters_before);
      return std::nullopt;
    }
    if (multi) consumed = std::move(*take);
  }
  for (size_t k = 0; k < w.constraints.size(); ++k) {
    ConstraintState& state = w.constraints[k];
    if (!state.AppliesTo(v)) continue;
    const AttributeValue* value = LookupAttribute(device, cand.id.driver, state.attribute());
    if (!ConstraintAccepts(state, value)) {
      for (int added : undo.constraints) w.constraints[added].values.pop_back();
      if (undo.counters) counters_left_[cand.pool] = std::move(undo.counters_before);
      return std::nullopt;
    }
    state.values.push_back(value);
    undo.constraints.push_back(static_cast<int>(k));
  }
  if (!admin && multi) {
    undo.shared = true;
    undo.shared_before = shared_used_[c];
    AddAmounts(shared_used_[c], consumed);
    ++shares_[c];
  }
  if (!admin && !multi) ++exclusive_[c];
  holders_[c].push_back(claim);
  w.picks.push_back({.candidate = c, .claim = claim, .admin_access = admin, .shared = !admin && multi,
                     .consumed_capacity = std::move(consumed)});
  w.pick_variant.push_back(variant);
  return undo;
}

void Search::Release(int claim, int c, const Undo& undo) {
  ClaimWork& w = claims_[claim];
  const Pick& pick = w.picks.back();
  if (!pick.admin_access && !pick.shared) --exclusive_[c];
  if (undo.shared) {
    shared_used_[c] = undo.shared_before;
    --shares_[c];
  }
  for (int k : undo.constraints) w.constraints[k].values.pop_back();
  if (undo.counters) counters_left_[candidate(c).pool] = undo.counters_before;
  holders_[c].pop_back();
  w.picks.pop_back();
  w.pick_variant.pop_back();
}

void Search::Step(int claim, int request, int device, int start) {
  if (Done()) return;
  if (claim == static_cast<int>(claims_.size())) {
    Record();
    return;
  }
  ClaimWork& w = claims_[claim];
  if (w.keep || request == static_cast<int>(w.variants.size())) {
    Step(claim + 1, 0, 0, 0);
    return;
  }
  if (w.chosen[request] >= 0) {
    StepVariant(claim, request, w.chosen[request], device, start);
    return;
  }
  // firstAvailable: the first subrequest that leads to a complete allocation wins; later ones
  // are tried only when it leads to none.
  for (int variant : w.variants[request]) {
    const size_t before = found_.size();
    w.chosen[request] = variant;
    StepVariant(claim, request, variant, 0, 0);
    w.chosen[request] = -1;
    if (Done() || found_.size() > before) return;
  }
}

void Search::StepVariant(int claim, int request, int variant, int device, int start) {
  Variant& v = variants_[variant];
  if (v.ask->mode == AllocationMode::kAll && v.all_devices.empty()) return;
  if (device == v.needed) {
    Step(claim, request + 1, 0, 0);
    return;
  }
  if (v.needed - device > kMaxDevicesPerClaim - static_cast<int>(claims_[claim].picks.size())) return;
  if (v.ask->mode == AllocationMode::kAll) {
    const int c = v.all_devices[device];
    if (std::optional<Undo> undo = TryTake(claim, variant, c)) {
      Step(claim, request, device + 1, 0);
      Release(claim, c, *undo);
    }
    return;
  }
  const int n = static_cast<int>(order_.size());
  for (int k = start; k < n && !Done(); ++k) {
    const int c = order_[k];
    absl::StatusOr<Verdict> verdict = Judged(v, c);
    if (!verdict.ok()) {
      error_ = verdict.status();
      return;
    }
    if (verdict->kind != Verdict::kOk) continue;
    if (std::optional<Undo> undo = TryTake(claim, variant, c)) {
      Step(claim, request, device + 1, k + 1);
      Release(claim, c, *undo);
    }
  }
}

AllocationResult Search::Result(const ClaimWork& w) const {
  AllocationResult out;
  bool local = false;
  NodeSelectorTerm merged;
  for (size_t i = 0; i < w.picks.size(); ++i) {
    const Pick& pick = w.picks[i];
    const Variant& v = variants_[w.pick_variant[i]];
    const Candidate& cand = candidate(pick.candidate);
    out.devices.push_back({.request = v.full_name,
                           .device = cand.id,
                           .admin_access = pick.admin_access,
                           .tolerations = v.ask->tolerations,
                           .consumed_capacity = pick.consumed_capacity,
                           .binding_conditions = cand.device->binding_conditions});
    const NodeSelection& sel = *cand.selection;
    if (!sel.node_name.empty() || cand.device->binds_to_node) {
      local = true;
    } else if (sel.node_selector.has_value()) {
      if (sel.node_selector->size() == 1) {
        MergeRequirements(sel.node_selector->front().match_expressions, merged.match_expressions);
        MergeRequirements(sel.node_selector->front().match_fields, merged.match_fields);
      } else {
        local = true;  // several terms do not merge into one: bind to this node
      }
    }
  }
  if (local) {
    NodeSelectorTerm term;
    term.match_fields.push_back({.key = "metadata.name",
                                 .op = NodeSelectorRequirement::Operator::kIn,
                                 .values = {in_.node.name()}});
    out.node_selector = std::vector<NodeSelectorTerm>{std::move(term)};
  } else if (!merged.match_expressions.empty() || !merged.match_fields.empty()) {
    out.node_selector = std::vector<NodeSelectorTerm>{std::move(merged)};
  }

  // Configuration: the classes' (per class, for the requests that used it), then the claim's
  // entries that apply to an allocated request. A list naming every request becomes "all".
  std::vector<std::string> names;  // per request: the name its result carries
  std::map<std::string, size_t> class_config_start;
  for (size_t r = 0; r < w.chosen.size(); ++r) {
    const Variant& v = variants_[w.chosen[r]];
    names.push_back(v.full_name);
    const std::string& class_name = v.device_class->meta.name;
    if (auto it = class_config_start.find(class_name); it != class_config_start.end()) {
      for (size_t i = it->second; i < it->second + v.device_class->config.size(); ++i) {
        out.config[i].config.requests.push_back(v.full_name);
      }
      continue;
    }
    class_config_start[class_name] = out.config.size();
    for (const DeviceConfig& config : v.device_class->config) {
      AllocatedConfig c{.source = ConfigSource::kFromClass, .config = config};
      c.config.requests = {v.full_name};
      out.config.push_back(std::move(c));
    }
  }
  auto names_request = [&](const std::vector<std::string>& list, size_t r) {
    const std::string& base = w.claim->spec.requests[r].name;
    return std::find(list.begin(), list.end(), base) != list.end() ||
           std::find(list.begin(), list.end(), names[r]) != list.end();
  };
  for (const DeviceConfig& config : w.claim->spec.config) {
    bool applies = config.requests.empty();
    for (size_t r = 0; r < names.size() && !applies; ++r) applies = names_request(config.requests, r);
    if (applies) out.config.push_back({.source = ConfigSource::kFromClaim, .config = config});
  }
  for (AllocatedConfig& c : out.config) {
    if (c.config.requests.empty()) continue;
    bool all = true;
    for (size_t r = 0; r < names.size() && all; ++r) all = names_request(c.config.requests, r);
    if (all) c.config.requests.clear();
  }
  return out;
}

void Search::Record() {
  Alternative alt;
  for (const ClaimWork& w : claims_) {
    if (w.keep) {
      alt.allocations.push_back(*w.claim->allocation);
      continue;
    }
    alt.allocations.push_back(Result(w));
    alt.picks.insert(alt.picks.end(), w.picks.begin(), w.picks.end());
  }
  found_.push_back(std::move(alt));
}

std::string Search::ExplainVariant(Variant& v, bool* satisfiable) {
  const int n = static_cast<int>(in_.devices.candidates.size());
  int class_rejects = 0, request_rejects = 0, binding = 0, capacity = 0, tainted = 0;
  int in_use = 0, no_capacity_left = 0, no_counters = 0, free = 0;
  std::map<int, int> class_by_selector, request_by_selector;
  for (int c = 0; c < n; ++c) {
    absl::StatusOr<Verdict> verdict = Judged(v, c);
    if (!verdict.ok()) {
      if (error_.ok()) error_ = verdict.status();
      return "";
    }
    switch (verdict->kind) {
      case Verdict::kClassSelector: ++class_rejects; ++class_by_selector[verdict->selector]; continue;
      case Verdict::kRequestSelector: ++request_rejects; ++request_by_selector[verdict->selector]; continue;
      case Verdict::kBindingConditions: ++binding; continue;
      case Verdict::kCapacity: ++capacity; continue;
      case Verdict::kTainted: ++tainted; continue;
      case Verdict::kOk: break;
    }
    const Candidate& cand = candidate(c);
    const Device& device = *cand.device;
    if (v.ask->admin_access) {
      ++free;
      continue;
    }
    const bool multi = device.allow_multiple_allocations;
    if (held_[c] || (!multi && shares_[c] > 0)) {
      ++in_use;
      continue;
    }
    if (multi) {
      std::optional<Amounts> take = ConsumedCapacity(device, v.ask->capacity_requests);
      if (!take.has_value() || !FitsCapacity(device, *take, shared_used_[c])) {
        ++no_capacity_left;
        continue;
      }
    }
    bool counters_ok = true;
    if (!(multi && shares_[c] > 0)) {
      for (const CounterConsumption& use : device.consumes_counters) {
        const auto& set = counters_left_[cand.pool].at(use.counter_set);
        for (const auto& [name, amount] : use.counters) {
          auto it = set.find(name);
          if (it == set.end() || it->second < amount) counters_ok = false;
        }
      }
    }
    if (!counters_ok) {
      ++no_counters;
      continue;
    }
    ++free;
  }
  const int matching = n - class_rejects - request_rejects - binding - capacity;
  const std::string& class_name = v.device_class->meta.name;
  std::string out;
  if (v.ask->mode == AllocationMode::kAll) {
    *satisfiable = matching > 0 && free == matching;
    out = matching == 0 ? StrCat("asks for all devices of class ", class_name, ", and none matches")
                        : StrCat("asks for all ", Plural(matching, "device", "devices"), " of class ",
                                 class_name, " that match, ", free, " of them free");
  } else {
    *satisfiable = free >= v.needed;
    out = StrCat(Plural(free, "free device", "free devices"), " of class ", class_name, " match, ",
                 v.ask->count, " asked");
  }
  std::vector<std::string> why;
  for (const auto& [i, count] : class_by_selector) {
    why.push_back(StrCat(count, " rejected by the class's selector #", i, " (",
                         v.device_class->selectors[i], ")"));
  }
  for (const auto& [i, count] : request_by_selector) {
    why.push_back(StrCat(count, " rejected by the request's selector #", i, " (", v.ask->selectors[i], ")"));
  }
  if (binding > 0) why.push_back(StrCat(binding, " with binding conditions (not supported yet)"));
  if (capacity > 0) why.push_back(StrCat(capacity, " without the capacity asked"));
  if (tainted > 0) why.push_back(StrCat(tainted, " with a taint the request does not tolerate"));
  if (in_use > 0) why.push_back(StrCat(in_use, " in use"));
  if (no_capacity_left > 0) why.push_back(StrCat(no_capacity_left, " shared with too little capacity left"));
  if (no_counters > 0) why.push_back(StrCat(no_counters, " whose shared counters are used up"));
  if (!why.empty()) StrAppend(&out, " (of ", Plural(n, "device", "devices"), " on node ", in_.node.name(), ": ", StrJoin(why, ", "), ")");
  return out;
}

std::string Search::ExplainFailure() {
  if (exhausted_) {
    return StrCat("no allocation found for the pod's claims on node ", in_.node.name(), " within ",
                  options_.max_steps, " device trials");
  }
  std::string pool_note;
  for (const Pool& pool : in_.devices.pools) {
    if (pool.incomplete) StrAppend(&pool_note, "; resource pool ", pool.Describe(), " is being updated");
    if (!pool.invalid_reason.empty()) {
      StrAppend(&pool_note, "; resource pool ", pool.Describe(), " is invalid: ", pool.invalid_reason);
    }
  }
  // A request that cannot be met even alone names itself.
  for (const ClaimWork& w : claims_) {
    if (w.keep) continue;
    for (size_t r = 0; r < w.variants.size(); ++r) {
      std::vector<std::string> parts;
      bool any = false;
      for (int index : w.variants[r]) {
        bool satisfiable = false;
        std::string part = ExplainVariant(variants_[index], &satisfiable);
        if (!error_.ok()) return "";
        any = any || satisfiable;
        parts.push_back(w.variants[r].size() > 1 ? StrCat(variants_[index].full_name, ": ", part) : part);
      }
      if (any) continue;
      const std::string& name = w.claim->spec.requests[r].name;
      if (parts.size() == 1) return StrCat(ClaimName(w), ", request ", name, ": ", parts[0], pool_note);
      return StrCat(ClaimName(w), ", request ", name, ": no subrequest can be satisfied: ",
                    StrJoin(parts, "; "), pool_note);
    }
  }
  // Each request fits alone: the claim's constraints, or the requests together, do not.
  for (const ClaimWork& w : claims_) {
    if (w.keep || w.constraints.empty()) continue;
    std::vector<std::string> list;
    for (const ConstraintState& c : w.constraints) {
      std::string requests = c.spec->requests.empty() ? "all requests" : StrJoin(c.spec->requests, ", ");
      list.push_back(c.spec->match_attribute.empty()
                         ? StrCat("distinctAttribute ", c.spec->distinct_attribute, " over ", requests)
                         : StrCat("matchAttribute ", c.spec->match_attribute, " over ", requests));
    }
    return StrCat(ClaimName(w), ": no devices on node ", in_.node.name(),
                  " satisfy the requests and the constraints together (", StrJoin(list, "; "), ")",
                  pool_note);
  }
  return StrCat("the pod's claims cannot all be allocated together on node ", in_.node.name(),
                ": their requests compete for the same devices, capacity or counters", pool_note);
}

absl::StatusOr<std::vector<Alternative>> Search::Run() {
  if (options_.matcher == nullptr) return absl::InvalidArgumentError("DRA allocator: no device matcher");
  ASSIGN_OR_RETURN(bool possible, Prepare());
  if (!possible) return std::vector<Alternative>{};
  Step(0, 0, 0, 0);
  RETURN_IF_ERROR(error_);
  if (found_.empty()) {
    reason_ = ExplainFailure();
    RETURN_IF_ERROR(error_);
  }
  return std::move(found_);
}

}  // namespace

absl::StatusOr<std::vector<Alternative>> EnumerateAllocations(const AllocationInput& input,
                                                              const AllocatorOptions& options, int limit) {
  Search search(input, options, limit);
  return search.Run();
}

absl::StatusOr<AllocationOutcome> Allocate(const AllocationInput& input, const AllocatorOptions& options) {
  const int limit = options.choice == nullptr ? 1 : std::max(options.max_alternatives, 1);
  Search search(input, options, limit);
  ASSIGN_OR_RETURN(std::vector<Alternative> found, search.Run());
  AllocationOutcome out;
  if (found.empty()) {
    out.reason = search.reason();
    return out;
  }
  size_t chosen = options.choice == nullptr ? 0 : options.choice->Choose(input.devices, input.allocated, found);
  out.alternatives = static_cast<int>(found.size());
  Alternative& alt = found[std::min(chosen, found.size() - 1)];
  // Shares get their UIDs now, for the allocation that is kept. A claim's picks and its results
  // are in the same order.
  size_t next_pick = 0;
  for (size_t claim = 0; claim < alt.allocations.size(); ++claim) {
    if (input.claims[claim]->allocation.has_value()) continue;
    for (DeviceResult& result : alt.allocations[claim].devices) {
      if (!alt.picks[next_pick++].shared) continue;
      if (!options.new_share_id) {
        return absl::InvalidArgumentError(
            StrCat("DRA allocator: device ", FormatDeviceId(result.device),
                   " allows multiple allocations, but no share ID generator was given"));
      }
      result.share_id = options.new_share_id();
    }
  }
  out.allocations = std::move(alt.allocations);
  out.picks = std::move(alt.picks);
  return out;
}

}  // namespace tessel::dra
