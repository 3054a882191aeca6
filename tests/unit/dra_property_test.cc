// A seeded property test of the DRA allocator over small random nodes: random devices (with
// attributes, taints, shared counters, shared capacity with or without a request policy, a second
// pool for all nodes or for a rack), random
// held devices, and random claims (ExactCount and All, firstAvailable, selectors, tolerations, admin access,
// capacity requests, matchAttribute / distinctAttribute). Every allocation the allocator returns
// (the first fit, every enumerated alternative, and KeepWholeDevices' choice) is checked by a
// checker written here, independently of the allocator; and a brute-force search over all
// device choices decides whether an allocation exists, which the allocator must then find.
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "scheduler/dra/capacity.h"
#include "unit/dra_fixtures.h"

namespace tessel::dra {
namespace dra_property_test {

using namespace testing;  // NOLINT: the fixtures

struct Instance {
  DraWorld world;
  std::vector<ResourceClaim> claims;
};

int Pick(std::mt19937& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
bool Chance(std::mt19937& rng, int percent) { return Pick(rng, 1, 100) <= percent; }

const std::vector<int64_t> kValidValues = {2'000, 4'000, 8'000};

Instance Generate(uint32_t seed) {
  std::mt19937 rng(seed);
  Instance in;
  DraWorld& w = in.world;
  w.classes["any"] = Class("any");
  w.classes["a"] = Class("a", {"gpu.example.com/model=A"});
  w.classes["b"] = Class("b", {"gpu.example.com/model=B"});
  ResourceSlice counters = SliceOn("", "node-1", {}, 1, 2, "node-1-counters");
  counters.node_selection = {};
  counters.shared_counters = {{.name = "s0", .counters = {{"units", Pick(rng, 4, 8) * 1000}}},
                              {.name = "s1", .counters = {{"units", Pick(rng, 4, 8) * 1000}}}};
  ResourceSlice local = SliceOn("node-1", "node-1", {}, 1, 2, "node-1-devices");
  // The second pool is for all nodes, or for the nodes of a rack (this one's, or another).
  w.node = NodeNamed("node-1", {{"rack", "r1"}});
  ResourceSlice everywhere = SliceOn("", "network", {});
  if (Chance(rng, 50)) {
    everywhere.node_selection.all_nodes = true;
  } else {
    NodeSelectorTerm term;
    term.match_expressions.push_back({.key = "rack", .op = NodeSelectorRequirement::Operator::kIn,
                                      .values = {Chance(rng, 70) ? "r1" : "r2"}});
    everywhere.node_selection.node_selector = std::vector<NodeSelectorTerm>{term};
  }
  const int devices = Pick(rng, 2, 5);
  for (int d = 0; d < devices; ++d) {
    Device dev = Gpu(StrCat("dev-", d), {{"model", std::string(Chance(rng, 50) ? "A" : "B")},
                                         {"numa", int64_t{Pick(rng, 0, 1)}}});
    if (Chance(rng, 20)) dev.taints.push_back({.key = "t", .value = "v", .effect = Chance(rng, 50) ? "NoSchedule" : "NoExecute"});
    if (Chance(rng, 10)) dev.taints.push_back({.key = "info", .effect = "None"});
    const bool on_network = Chance(rng, 25);
    if (!on_network && Chance(rng, 40)) {
      dev = Consuming(dev, Chance(rng, 50) ? "s0" : "s1", {{"units", Pick(rng, 2, 6) * 1000}});
    }
    if (Chance(rng, 30)) {
      dev.allow_multiple_allocations = true;
      std::optional<CapacityRequestPolicy> policy;
      if (Chance(rng, 50)) policy = CapacityRequestPolicy{.default_amount = 2'000, .valid_values = kValidValues};
      dev = WithCapacity(dev, "mem", Pick(rng, 4, 8) * 1000, policy);
    }
    (on_network ? everywhere : local).devices.push_back(std::move(dev));
  }
  w.slices.push_back(counters);
  w.slices.push_back(local);
  if (!everywhere.devices.empty()) w.slices.push_back(everywhere);
  // Held devices and shares.
  for (const ResourceSlice& s : w.slices) {
    for (const Device& d : s.devices) {
      DeviceId id{s.driver, s.pool, d.name};
      if (d.allow_multiple_allocations) {
        if (Chance(rng, 30)) w.held.shared[id] = {{"mem", Pick(rng, 1, 4) * 1000}};
      } else if (Chance(rng, 20)) {
        w.held.exclusive.insert(id);
      }
    }
  }
  static const std::vector<std::string> kClasses = {"any", "a", "b"};
  auto random_ask = [&] {
    DeviceAsk ask{.device_class_name = kClasses[Pick(rng, 0, 2)], .count = Pick(rng, 1, 2)};
    if (Chance(rng, 20)) ask.selectors.push_back(StrCat("gpu.example.com/numa=", Pick(rng, 0, 1)));
    if (Chance(rng, 30)) ask.tolerations.push_back({.key = "t", .op = DeviceToleration::Operator::kExists});
    ask.admin_access = Chance(rng, 10);
    if (Chance(rng, 30)) ask.capacity_requests["mem"] = Pick(rng, 1, 6) * 1000;
    if (Chance(rng, 12)) {
      ask.mode = AllocationMode::kAll;
      ask.count = 0;
    }
    return ask;
  };
  const int claims = Pick(rng, 1, 2);
  int requests_left = 3;
  for (int c = 0; c < claims && requests_left > 0; ++c) {
    std::vector<DeviceRequest> requests;
    const int n = std::min(Pick(rng, 1, 2), requests_left);
    requests_left -= n;
    for (int r = 0; r < n; ++r) {
      const std::string name = StrCat("r", r);
      if (Chance(rng, 25)) {
        requests.push_back(FirstAvailable(name, {{.name = "x", .ask = random_ask()}, {.name = "y", .ask = random_ask()}}));
      } else {
        requests.push_back(Exactly(name, random_ask()));
      }
    }
    std::vector<DeviceConstraint> constraints;
    if (Chance(rng, 30)) constraints.push_back({.match_attribute = "gpu.example.com/numa"});
    if (Chance(rng, 20)) constraints.push_back({.distinct_attribute = "gpu.example.com/model"});
    in.claims.push_back(Claim(StrCat("c", c), std::move(requests), std::move(constraints)));
  }
  return in;
}

// The instance in one line per object, for failure messages.
std::string Describe(const Instance& in) {
  std::string out;
  for (const ResourceSlice& s : in.world.slices) {
    for (const CounterSet& set : s.shared_counters) StrAppend(&out, "counter set ", set.name, " ", set.counters.at("units"), "\n");
    for (const Device& d : s.devices) {
      StrAppend(&out, s.pool, "/", d.name, " model=", AttributeText(d.attributes.at("gpu.example.com").at("model")),
                " numa=", AttributeText(d.attributes.at("gpu.example.com").at("numa")));
      for (const DeviceTaint& t : d.taints) StrAppend(&out, " taint ", t.key, ":", t.effect);
      for (const CounterConsumption& c : d.consumes_counters) StrAppend(&out, " consumes ", c.counter_set, " ", c.counters.at("units"));
      if (d.allow_multiple_allocations) StrAppend(&out, " shared mem=", d.capacity.at("mem").value, d.capacity.at("mem").request_policy ? " (valid values)" : "");
      if (in.world.held.exclusive.contains({s.driver, s.pool, d.name})) StrAppend(&out, " HELD");
      if (auto it = in.world.held.shared.find({s.driver, s.pool, d.name}); it != in.world.held.shared.end()) {
        StrAppend(&out, " SHARES mem=", it->second.at("mem"));
      }
      StrAppend(&out, "\n");
    }
  }
  for (const ResourceClaim& c : in.claims) {
    StrAppend(&out, "claim ", c.meta.name, ":");
    for (const DeviceRequest& r : c.spec.requests) {
      auto ask = [&](const std::string& name, const DeviceAsk& a) {
        StrAppend(&out, " [", name, " class=", a.device_class_name, " count=", a.count, " sel=", StrJoin(a.selectors, ","),
                  a.tolerations.empty() ? "" : " tolerates", a.admin_access ? " admin" : "");
        for (const auto& [k, v] : a.capacity_requests) StrAppend(&out, " ", k, "=", v);
        StrAppend(&out, "]");
      };
      if (r.exactly) ask(r.name, *r.exactly);
      for (const DeviceSubRequest& sub : r.first_available) ask(StrCat(r.name, "/", sub.name), sub.ask);
    }
    for (const DeviceConstraint& con : c.spec.constraints) StrAppend(&out, " match=", con.match_attribute, " distinct=", con.distinct_attribute);
    StrAppend(&out, "\n");
  }
  return out;
}

// --- The independent checker ---------------------------------------------------------------

struct KnownDevice {
  const ResourceSlice* slice;
  const Device* device;
};

std::map<DeviceId, KnownDevice> DevicesOfNode(const DraWorld& w) {
  std::map<DeviceId, KnownDevice> out;
  for (const ResourceSlice& s : w.slices) {
    const auto& selector = s.node_selection.node_selector;
    const bool usable = s.node_selection.all_nodes || s.node_selection.node_name == w.node.name() ||
                        (selector && selector->at(0).match_expressions.at(0).values.at(0) == w.node.meta.labels.at("rack"));
    if (!usable) continue;
    for (const Device& d : s.devices) out[{s.driver, s.pool, d.name}] = {&s, &d};
  }
  return out;
}

// What a share consumes of capacity `name`, by the rules of the API's documentation.
int64_t Expected(const DeviceCapacity& cap, const Amounts& requests, const std::string& name, bool* refused) {
  auto it = requests.find(name);
  const auto& policy = cap.request_policy;
  if (it == requests.end()) return policy && policy->default_amount ? *policy->default_amount : cap.value;
  if (!policy || policy->valid_values.empty()) return it->second;
  for (int64_t v : policy->valid_values) {
    if (v >= it->second) return v;
  }
  *refused = true;
  return 0;
}

bool Selected(DraWorld& w, const DeviceAsk& ask, const DeviceId& id, const Device& d) {
  const DeviceView view = ViewOf(d, id.driver);
  for (const std::string& sel : w.classes.at(ask.device_class_name).selectors) {
    if (!*w.matcher.Matches(sel, view)) return false;
  }
  for (const std::string& sel : ask.selectors) {
    if (!*w.matcher.Matches(sel, view)) return false;
  }
  return true;
}

// The devices "All" takes: every device on the node its selectors select, which has the capacity
// asked (in use or tainted, they still count, and then the request cannot be met).
std::set<DeviceId> AllOf(DraWorld& w, const DeviceAsk& ask) {
  std::set<DeviceId> out;
  for (const auto& [id, known] : DevicesOfNode(w)) {
    const Device& d = *known.device;
    if (!Selected(w, ask, id, d)) continue;
    bool fits = true;
    for (const auto& [name, amount] : ask.capacity_requests) fits = fits && d.capacity.contains(name);
    for (const auto& [name, cap] : d.capacity) {
      bool refused = false;
      const int64_t amount = Expected(cap, ask.capacity_requests, name, &refused);
      fits = fits && !refused && amount <= cap.value;
    }
    if (fits) out.insert(id);
  }
  return out;
}

const DeviceAsk* AskOf(const ResourceClaim& claim, const std::string& result_request, std::string* base) {
  for (const DeviceRequest& r : claim.spec.requests) {
    if (r.exactly && result_request == r.name) {
      *base = r.name;
      return &*r.exactly;
    }
    for (const DeviceSubRequest& s : r.first_available) {
      if (result_request == StrCat(r.name, "/", s.name)) {
        *base = r.name;
        return &s.ask;
      }
    }
  }
  return nullptr;
}

// "" when the allocations are valid for the claims on the node, else what is wrong.
std::string Check(DraWorld& w, const std::vector<ResourceClaim>& claims, const std::vector<AllocationResult>& allocations) {
  if (allocations.size() != claims.size()) return "one allocation per claim";
  const std::map<DeviceId, KnownDevice> devices = DevicesOfNode(w);
  std::map<DeviceId, int> exclusive_users;
  std::map<DeviceId, Amounts> shared_use = w.held.shared;
  std::set<DeviceId> consuming;  // devices whose counters are consumed
  std::set<DeviceId> admin_taken;
  for (const DeviceId& id : w.held.exclusive) {
    exclusive_users[id] = 1;
    consuming.insert(id);
  }
  for (const auto& [id, amounts] : w.held.shared) consuming.insert(id);
  for (size_t c = 0; c < claims.size(); ++c) {
    const ResourceClaim& claim = claims[c];
    const AllocationResult& a = allocations[c];
    if (a.devices.size() > static_cast<size_t>(kMaxDevicesPerClaim)) return "too many devices";
    std::map<std::string, std::set<std::string>> variants_used;  // request -> result names
    std::map<std::string, int> per_result_name;
    std::map<DeviceId, int> in_claim;
    for (const DeviceResult& r : a.devices) {
      std::string base;
      const DeviceAsk* ask = AskOf(claim, r.request, &base);
      if (ask == nullptr) return StrCat("unknown request ", r.request);
      variants_used[base].insert(r.request);
      ++per_result_name[r.request];
      auto known = devices.find(r.device);
      if (known == devices.end()) return StrCat("device not on the node: ", FormatDeviceId(r.device));
      const Device& d = *known->second.device;
      if (!Selected(w, *ask, r.device, d)) return StrCat("a selector fails on ", d.name);
      for (const DeviceTaint& t : d.taints) {
        const bool blocking = t.effect == "NoSchedule" || t.effect == "NoExecute";
        const bool tolerated = std::any_of(ask->tolerations.begin(), ask->tolerations.end(), [&](const DeviceToleration& tol) {
          return tol.op == DeviceToleration::Operator::kExists && (tol.key.empty() || tol.key == t.key);
        });
        if (blocking && !tolerated) return StrCat("untolerated taint on ", d.name);
      }
      // Even with admin access, the device must have the capacity asked, as the policy rounds it.
      for (const auto& [name, amount] : ask->capacity_requests) {
        if (!d.capacity.contains(name)) return StrCat(d.name, " lacks capacity ", name);
      }
      Amounts want;
      for (const auto& [name, cap] : d.capacity) {
        bool refused = false;
        want[name] = Expected(cap, ask->capacity_requests, name, &refused);
        if (refused || want[name] > cap.value) return StrCat("the request does not fit capacity ", name, " of ", d.name);
      }
      if (r.admin_access != ask->admin_access) return "admin access flag differs from the request";
      if (!d.allow_multiple_allocations && ++in_claim[r.device] > 1) return StrCat(d.name, " twice in one claim");
      // As kube-scheduler does it: a device that an earlier claim of the pod took with admin
      // access is in use for the claims after it (the other way round it is not).
      if (!d.allow_multiple_allocations) {
        if (!ask->admin_access && admin_taken.contains(r.device)) return StrCat(d.name, " taken after admin access");
        if (ask->admin_access) admin_taken.insert(r.device);
      }
      if (ask->admin_access) continue;
      consuming.insert(r.device);
      if (d.allow_multiple_allocations) {
        if (r.consumed_capacity != want) return StrCat("consumed capacity on ", d.name, " is not as the policy says");
        AddAmounts(shared_use[r.device], want);
      } else if (++exclusive_users[r.device] > 1) {
        return StrCat(d.name, " over-allocated");
      }
    }
    // Counts: each request has one variant, with its count.
    for (const DeviceRequest& r : claim.spec.requests) {
      if (variants_used[r.name].size() != 1) return StrCat("request ", r.name, " has ", variants_used[r.name].size(), " variants");
      std::string base;
      const std::string& used = *variants_used[r.name].begin();
      const DeviceAsk& ask = *AskOf(claim, used, &base);
      if (ask.mode == AllocationMode::kAll) {
        std::set<DeviceId> taken;
        for (const DeviceResult& result : a.devices) {
          if (result.request == used) taken.insert(result.device);
        }
        if (taken.empty() || taken != AllOf(w, ask)) return StrCat("request ", used, " did not take all devices");
      } else if (per_result_name[used] != ask.count) {
        return StrCat("request ", used, " has the wrong count");
      }
    }
    // Constraints (over all requests in these instances).
    for (const DeviceConstraint& con : claim.spec.constraints) {
      const std::string& attr = con.match_attribute.empty() ? con.distinct_attribute : con.match_attribute;
      std::vector<std::string> values;
      for (const DeviceResult& r : a.devices) {
        const AttributeValue* v = LookupAttribute(*devices.at(r.device).device, r.device.driver, attr);
        if (v == nullptr) return StrCat("constraint attribute missing on ", r.device.device);
        values.push_back(AttributeText(*v));
      }
      std::set<std::string> distinct(values.begin(), values.end());
      if (!con.match_attribute.empty() && distinct.size() > 1) return StrCat("matchAttribute ", attr, " broken");
      if (!con.distinct_attribute.empty() && distinct.size() != values.size()) return StrCat("distinctAttribute ", attr, " broken");
    }
  }
  for (const auto& [id, used] : shared_use) {
    if (!devices.contains(id)) continue;  // held elsewhere, not usable from this node
    for (const auto& [name, amount] : used) {
      if (amount > devices.at(id).device->capacity.at(name).value) return StrCat("shared capacity exceeded on ", id.device);
    }
  }
  for (const auto& [id, users] : exclusive_users) {
    if (users > 0 && devices.contains(id) && shared_use.contains(id)) return "a device both exclusive and shared";
  }
  // Counters: what every consuming device takes from its set (each device once). A counter the
  // held devices already overdraw stays so; one that a new device draws on must stay within.
  std::map<std::string, int64_t> taken;
  std::set<std::string> drawn_anew;
  for (const DeviceId& id : consuming) {
    auto known = devices.find(id);
    if (known == devices.end()) continue;
    for (const CounterConsumption& use : known->second.device->consumes_counters) {
      for (const auto& [name, amount] : use.counters) {
        taken[use.counter_set + "/" + name] += amount;
        if (!w.held.Holds(id)) drawn_anew.insert(use.counter_set + "/" + name);
      }
    }
  }
  for (const ResourceSlice& s : w.slices) {
    for (const CounterSet& set : s.shared_counters) {
      for (const auto& [name, value] : set.counters) {
        const std::string key = set.name + "/" + name;
        if (drawn_anew.contains(key) && taken[key] > value) return StrCat("counter ", key, " exceeded");
      }
    }
  }
  return "";
}

// --- Brute force ---------------------------------------------------------------------------

// Every way to give each request one variant and `count` distinct devices; true if one is valid.
bool BruteForce(DraWorld& w, const std::vector<ResourceClaim>& claims) {
  const std::map<DeviceId, KnownDevice> devices = DevicesOfNode(w);
  std::vector<DeviceId> ids;
  for (const auto& [id, known] : devices) ids.push_back(id);
  struct Slot {
    size_t claim;
    const DeviceRequest* request;
  };
  std::vector<Slot> slots;
  for (size_t c = 0; c < claims.size(); ++c) {
    for (const DeviceRequest& r : claims[c].spec.requests) slots.push_back({c, &r});
  }
  std::vector<AllocationResult> allocations(claims.size());
  std::function<bool(size_t)> fill = [&](size_t slot) -> bool {
    if (slot == slots.size()) return Check(w, claims, allocations).empty();
    const DeviceRequest& r = *slots[slot].request;
    AllocationResult& a = allocations[slots[slot].claim];
    std::vector<std::pair<std::string, const DeviceAsk*>> variants;
    if (r.exactly) variants.emplace_back(r.name, &*r.exactly);
    for (const DeviceSubRequest& s : r.first_available) variants.emplace_back(StrCat(r.name, "/", s.name), &s.ask);
    for (const auto& [name, ask] : variants) {
      std::vector<bool> chosen(ids.size(), false);
      if (ask->mode == AllocationMode::kAll) {
        const std::set<DeviceId> all = AllOf(w, *ask);
        for (size_t i = 0; i < ids.size(); ++i) chosen[i] = all.contains(ids[i]);
      } else {
        const int count = static_cast<int>(ask->count);
        if (count > static_cast<int>(ids.size())) continue;
        std::fill(chosen.end() - count, chosen.end(), true);
      }
      do {
        const size_t before = a.devices.size();
        bool refused = false;
        for (size_t i = 0; i < ids.size(); ++i) {
          if (!chosen[i]) continue;
          const Device& d = *devices.at(ids[i]).device;
          DeviceResult result{.request = name, .device = ids[i], .admin_access = ask->admin_access};
          if (d.allow_multiple_allocations && !ask->admin_access) {
            for (const auto& [cap_name, cap] : d.capacity) {
              result.consumed_capacity[cap_name] = Expected(cap, ask->capacity_requests, cap_name, &refused);
            }
          }
          a.devices.push_back(std::move(result));
        }
        const bool ok = !refused && fill(slot + 1);
        a.devices.resize(before);
        if (ok) return true;
      } while (ask->mode != AllocationMode::kAll && std::next_permutation(chosen.begin(), chosen.end()));
    }
    return false;
  };
  return fill(0);
}

TEST_CASE("property: every allocation is valid, and one is found whenever one exists", "[dra]") {
  int fitted = 0, refused = 0;
  for (uint32_t seed = 1; seed <= 600; ++seed) {
    Instance in = Generate(seed);
    DraWorld& w = in.world;
    std::vector<const ResourceClaim*> claims;
    for (const ResourceClaim& c : in.claims) claims.push_back(&c);
    INFO("seed " << seed << "\n" << Describe(in));
    absl::StatusOr<AllocationOutcome> out = w.Run(claims);
    REQUIRE(out.ok());
    const bool exists = BruteForce(w, in.claims);
    INFO("allocator: " << (out->fits() ? "fits" : out->reason));
    if (out->fits()) {
      ++fitted;
      INFO("first fit: " << Check(w, in.claims, out->allocations));
      CHECK(Check(w, in.claims, out->allocations).empty());
    } else {
      ++refused;
      CHECK_FALSE(out->reason.empty());
    }
    CHECK(out->fits() == exists);

    absl::StatusOr<std::vector<Alternative>> all = EnumerateAllocations(w.Input(claims), w.Options(), 20);
    REQUIRE(all.ok());
    CHECK(all->empty() == !exists);
    std::set<std::vector<std::string>> distinct;
    for (const Alternative& alt : *all) {
      std::vector<std::string> names;
      for (const AllocationResult& a : alt.allocations) {
        for (const DeviceResult& r : a.devices) names.push_back(StrCat(r.request, "=", FormatDeviceId(r.device)));
      }
      distinct.insert(names);
      INFO("alternative: " << StrJoin(names, " "));
      CHECK(Check(w, in.claims, alt.allocations).empty());
    }
    CHECK(distinct.size() == all->size());

    KeepWholeDevices keep;
    AllocatorOptions options = w.Options();
    options.choice = &keep;
    options.max_alternatives = 8;
    absl::StatusOr<AllocationOutcome> chosen = w.Run(claims, options);
    REQUIRE(chosen.ok());
    CHECK(chosen->fits() == exists);
    if (chosen->fits()) {
      CHECK(Check(w, in.claims, chosen->allocations).empty());
      // Nothing it compared leaves more whole than what it chose.
      const WholeLeft kept = MeasureWholeLeft(w.devices, w.held, chosen->picks);
      for (size_t i = 0; i < std::min<size_t>(all->size(), 8); ++i) {
        CHECK_FALSE(MeasureWholeLeft(w.devices, w.held, (*all)[i].picks) > kept);
      }
    }
  }
  // The generator makes both kinds of instance.
  CHECK(fitted > 50);
  CHECK(refused > 20);
}

}  // namespace dra_property_test
}  // namespace tessel::dra
