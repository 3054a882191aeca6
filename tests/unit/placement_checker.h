// An independent checker of a scheduler's placements, for property tests. It reads only what a
// cluster shows (the pods on each node, bound or assumed, the nominations, the gangs' and
// queues' specs as the test wrote them) and re-derives each rule from its Kubernetes definition
// with its own arithmetic; it never calls a plugin, the GPU ledger or the quota tracker. For a
// Queue with resource flavors it checks the flavors of nodes, gangs and quota the same way; for
// queues in a tree of Cohorts, every limit on every path (quota_tree_model.h).
//
//   PlacementChecker checker(world);          // the test's own record of nodes, pods, queues
//   checker.BeforeCycle(view);                // what held before the cycle
//   s->ScheduleOne();
//   for (const std::string& v : checker.AfterCycle(view, evictions)) FAIL(v);
#pragma once

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "quota_tree_model.h"
#include "scheduler/api/objects.h"
#include "scheduler/state/node_info.h"
#include "scheduler/util/strings.h"

namespace tessel::testing {

// What the test generated, in its own terms.
struct CheckedNode {
  std::string name;
  int64_t milli_cpu = 0;
  int64_t gpus = 0;      // whole physical GPUs
  int64_t replicas = 1;  // slots per GPU: > 1 on a time-sliced node (allocatable gpus x replicas)
  std::map<std::string, std::string> labels;
  // Its GPUs are DRA devices (a ResourceSlice, no allocatable nvidia.com/gpu): device gpu-<i>
  // per GPU; when partitionable, also gpu-<i>-half-0 and -1, each taking half of GPU i's counter
  // set gpu-<i> (the whole device all of it).
  bool dra = false;
  bool partitionable = false;
};
struct CheckedPod {
  std::string key;        // namespace/name
  std::string namespace_;
  std::string app;        // label app
  int64_t milli_cpu = 0;
  int64_t gpus = 0;       // nvidia.com/gpu asked for (1 with a fraction)
  int64_t gpu_milli = 0;  // tessel.io/gpu-milli: a fraction of one GPU; 0 for whole GPUs
  bool sharing_never = false;  // tessel.io/gpu-sharing: never
  int32_t priority = 0;
  std::string gang;       // "" for none
  std::string anti_app;   // required anti-affinity, hostname, to pods labelled app=anti_app
  bool spread = false;    // DoNotSchedule, maxSkew 1, hostname, over pods labelled app=app
  bool movable = false;   // annotated tessel.io/movable: "true"
  std::string workload;   // its Job: what comes back when it is evicted ("" for none)
  // Its `gpus` come through its own ResourceClaim (namespace_/claim: exactly `gpus` devices of
  // the class that serves nvidia.com/gpu), not a request: only a DRA node can run it.
  std::string claim;
};
// A flavor of a queue's GPUs (spec.resourceGroups covering nvidia.com/gpu), in the queue's order.
struct CheckedFlavorQuota {
  std::string flavor;
  int64_t nominal_gpus = 0;                 // physical GPUs
  std::optional<int64_t> borrowing_gpus;    // none: no limit but the cohort's
  std::optional<int64_t> lending_gpus;      // in a tree of Cohorts; none: lends all of it
};
struct CheckedQueue {
  std::string name;
  std::string namespace_;
  std::string cohort;
  int64_t nominal_gpus = 0;  // physical GPUs (a flat queue)
  std::vector<CheckedFlavorQuota> flavors;  // a flavored queue: its GPU flavors in order
  bool borrow_next_flavor = false;  // flavorFungibility.whenCanBorrow: TryNextFlavor
  // A flat queue in a tree of Cohorts (CheckedWorld::cohorts): its limits toward its cohort.
  std::optional<int64_t> borrowing_limit_gpus, lending_limit_gpus;
  bool preempt_first = false;       // flavorFungibility.whenCanPreempt: Preempt
  int64_t weight_milli = 1000;      // spec.weight (fair sharing among its siblings), per mille
};
// A PodDisruptionBudget over the pods of one app in one namespace: at most max_unavailable of
// them terminating at once.
struct CheckedBudget {
  std::string namespace_;
  std::string app;
  int32_t max_unavailable = 0;
};
// A Cohort object (spec.parent, its own GPUs and limits toward its parent, flat or per flavor,
// and a weight): with any, the queues' cohorts form a tree and quota is checked on every path
// (per flavor with flavored queues).
struct CheckedCohort {
  std::string name;
  std::string parent;  // "" for a root
  int64_t nominal_gpus = 0;
  std::optional<int64_t> borrowing_limit_gpus, lending_limit_gpus;
  // spec.resourceGroups (instead of the flat quotas): its GPUs per flavor; a flavor not listed
  // is a quota of 0 with no limits.
  std::vector<CheckedFlavorQuota> flavors;
  int64_t weight_milli = 1000;  // spec.weight, per mille
};
struct CheckedWorld {
  std::vector<CheckedCohort> cohorts;
  std::vector<CheckedNode> nodes;
  std::map<std::string, CheckedPod> pods;    // by key
  std::map<std::string, int32_t> gang_min;   // gang -> minMember
  std::vector<CheckedQueue> queues;
  std::map<std::string, std::map<std::string, std::string>> flavors;  // ResourceFlavor -> nodeLabels
  std::vector<CheckedBudget> budgets;
};

// What the cluster shows at one moment.
struct ClusterView {
  std::map<std::string, std::vector<PodRef>> on_node;     // bound or assumed, terminating too
  std::map<std::string, std::vector<PodRef>> nominated;   // node -> pending pods nominated there
  std::map<std::string, std::vector<std::string>> reserved;  // holder (pod key or gang) -> its reserved nodes
  // DRA objects as the API server stores them: ResourceSlices by name, ResourceClaims by
  // namespace/name, and pods' status.extendedResourceClaimStatus by pod key.
  std::map<std::string, nlohmann::json> slices;
  std::map<std::string, nlohmann::json> claims;
  std::map<std::string, nlohmann::json> extended_status;
  std::set<std::string> bound;  // pods the API server shows bound (on_node has assumed ones too)
};

// One eviction the API was asked for: the victim and the preemptor its message names.
struct Eviction {
  std::string victim;
  std::string preemptor;
  std::string node;   // where the victim ran
  bool move = false;  // a move (consolidation) for the preemptor, not a preemption
  bool refused = false;  // a budget refused it (not in AfterCycle's list: only accepted ones)
};

// The anti-thrash rules moves must keep (the Consolidation plugin's args in the test).
struct MoveRules {
  int64_t min_pod_gpus = 0;  // whole GPUs the waiting pod asks for at least
  absl::Duration min_run;
  int max_moves = 1;
  absl::Duration window;
};

class PlacementChecker {
 public:
  explicit PlacementChecker(const CheckedWorld* world) : world_(world) {}

  void BeforeCycle(const ClusterView& view) {
    std::vector<std::string> ignored;
    CheckDra(view, ignored);  // what the pods' claims hold, for the room the checker computes
    before_ = view;
    placed_before_.clear();
    for (const auto& [node, pods] : view.on_node) {
      for (const PodRef& p : pods) placed_before_[p->Key()] = node;
    }
  }

  // Every rule the cycle broke, as readable sentences.
  std::vector<std::string> AfterCycle(const ClusterView& view, const std::vector<Eviction>& evictions) {
    std::vector<std::string> out;
    std::map<std::string, std::string> placed_now;  // key -> node, placed in this cycle
    for (const CheckedNode& n : world_->nodes) {
      auto it = view.on_node.find(n.name);
      if (it == view.on_node.end()) continue;
      CheckNode(n, it->second, out);
      for (const PodRef& p : it->second) {
        if (!placed_before_.contains(p->Key())) placed_now[p->Key()] = n.name;
      }
    }
    CheckDra(view, out);
    CheckNominations(view, placed_now, out);
    if (evictions.empty()) CheckSpread(view, placed_now, out);
    CheckQuota(view, out);
    CheckFlavors(view, out);
    CheckFlavorChoice(view, placed_now, out);
    CheckFlavorOfEvictions(evictions, out);
    CheckRoomMadeOnlyWhenNeeded(evictions, out);
    CheckGangs(view, out);
    CheckEvictions(evictions, out);
    CheckNoBystanders(view, evictions, out);
    CheckRepeatedPreemption(view, placed_now, evictions, out);
    CheckNoQuotaLoop(view, evictions, out);
    return out;
  }

 private:
  const CheckedPod* Spec(const Pod& p) const { return SpecOf(p.Key()); }

  // --- Dynamic Resource Allocation, read from the slices' and claims' JSON as the API server
  // stores them (resource.k8s.io/v1 field names), with the checker's own arithmetic.
  // A quantity the test writes: a whole number, or whole Gi.
  static std::optional<int64_t> Quantity(const nlohmann::json& q) {
    if (!q.is_string()) return std::nullopt;
    std::string text = q.get<std::string>();
    int64_t unit = 1;
    if (text.ends_with("Gi")) text.resize(text.size() - 2), unit = int64_t{1} << 30;
    if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    return std::stoll(text) * unit;
  }
  struct DraDevice {
    std::string node;
    std::map<std::pair<std::string, std::string>, int64_t> consumes;  // (counter set, counter) -> amount
  };
  // The pods a claim is reserved for: (name, uid).
  static std::set<std::pair<std::string, std::string>> ReservedFor(const nlohmann::json& claim) {
    std::set<std::pair<std::string, std::string>> out;
    const nlohmann::json* status = claim.contains("status") ? &claim["status"] : nullptr;
    if (status == nullptr || !status->contains("reservedFor") || !(*status)["reservedFor"].is_array()) return out;
    for (const nlohmann::json& r : (*status)["reservedFor"]) {
      if (r.value("resource", "") == "pods") out.emplace(r.value("name", ""), r.value("uid", ""));
    }
    return out;
  }
  static const nlohmann::json* Results(const nlohmann::json& claim) {
    if (!claim.contains("status") || !claim["status"].is_object()) return nullptr;
    const nlohmann::json& status = claim["status"];
    if (!status.contains("allocation") || status["allocation"].is_null()) return nullptr;
    return &status["allocation"]["devices"]["results"];
  }
  // Every device allocated once (none allows more), the partitionable GPUs' counters within
  // their sets, an allocated claim reserved for pods on the node its devices are on and for no
  // other; every pod on a node with a claim of its own has it allocated with its count of
  // devices of that node and is in its reservedFor; a pod on a DRA node whose GPUs come through
  // a request has status.extendedResourceClaimStatus naming a claim made for it (annotated,
  // owned by it) and allocated likewise; no pod on a device-plugin node has one.
  // Records what each pod's claims hold (dra_held_) for the room computations.
  void CheckDra(const ClusterView& view, std::vector<std::string>& out) {
    std::map<std::string, DraDevice> devices;  // driver/pool/device
    std::map<std::pair<std::string, std::string>, int64_t> capacity;  // (driver/pool/set, counter)
    for (const auto& [name, slice] : view.slices) {
      const nlohmann::json& spec = slice["spec"];
      const std::string pool = StrCat(spec.value("driver", ""), "/", spec["pool"].value("name", ""));
      for (const nlohmann::json& set : spec.value("sharedCounters", nlohmann::json::array())) {
        for (const auto& [counter, value] : set["counters"].items()) {
          capacity[{StrCat(pool, "/", set.value("name", "")), counter}] = Quantity(value["value"]).value_or(0);
        }
      }
      for (const nlohmann::json& d : spec.value("devices", nlohmann::json::array())) {
        DraDevice device{.node = spec.value("nodeName", "")};
        for (const nlohmann::json& c : d.value("consumesCounters", nlohmann::json::array())) {
          for (const auto& [counter, value] : c["counters"].items()) {
            std::optional<int64_t> amount = Quantity(value["value"]);
            if (!amount) out.push_back(StrCat("slice ", name, ": device ", d.value("name", ""), " consumes ", value.dump()));
            device.consumes[{StrCat(pool, "/", c.value("counterSet", "")), counter}] += amount.value_or(0);
          }
        }
        devices[StrCat(pool, "/", d.value("name", ""))] = std::move(device);
      }
    }
    std::map<std::string, std::string> owner_of;  // device -> claim
    std::map<std::pair<std::string, std::string>, int64_t> used;
    std::map<std::string, std::pair<std::string, int64_t>> claim_node;  // claim -> (node, devices)
    std::map<std::pair<std::string, std::string>, std::string> node_of_pod;  // (namespace/name, uid) -> node
    for (const auto& [node, pods] : view.on_node) {
      for (const PodRef& p : pods) node_of_pod[{p->Key(), p->meta.uid}] = node;
    }
    for (const auto& [key, claim] : view.claims) {
      const nlohmann::json* results = Results(claim);
      if (results == nullptr) continue;
      std::set<std::string> nodes;
      int64_t count = 0;
      for (const nlohmann::json& r : *results) {
        const std::string id = StrCat(r.value("driver", ""), "/", r.value("pool", ""), "/", r.value("device", ""));
        ++count;
        auto d = devices.find(id);
        if (d == devices.end()) {
          out.push_back(StrCat("claim ", key, " is allocated device ", id, ", which no ResourceSlice publishes"));
          continue;
        }
        nodes.insert(d->second.node);
        if (auto [it, fresh] = owner_of.emplace(id, key); !fresh) {
          out.push_back(StrCat("device ", id, " is allocated to claims ", it->second, " and ", key));
        }
        for (const auto& [counter, amount] : d->second.consumes) used[counter] += amount;
      }
      if (nodes.size() != 1) {
        out.push_back(StrCat("claim ", key, " is allocated devices of ", nodes.size(), " nodes: ", absl::StrJoin(nodes, ",")));
        continue;
      }
      claim_node[key] = {*nodes.begin(), count};
      const std::string namespace_ = key.substr(0, key.find('/'));
      const auto reserved = ReservedFor(claim);
      if (reserved.empty()) out.push_back(StrCat("claim ", key, " is allocated but reserved for no pod: its devices leak"));
      for (const auto& [name, uid] : reserved) {
        auto it = node_of_pod.find({StrCat(namespace_, "/", name), uid});
        if (it == node_of_pod.end()) {
          out.push_back(StrCat("claim ", key, " is reserved for pod ", namespace_, "/", name, " (uid ", uid,
                               "), which is on no node"));
        } else if (it->second != *nodes.begin()) {
          out.push_back(StrCat("claim ", key, " has devices on ", *nodes.begin(), " but is reserved for ", namespace_, "/",
                               name, ", which runs on ", it->second));
        }
      }
    }
    for (const auto& [counter, amount] : used) {
      auto cap = capacity.find(counter);
      if (cap == capacity.end() || amount > cap->second) {
        out.push_back(StrCat("counter ", counter.second, " of set ", counter.first, ": devices allocated take ", amount,
                             " of ", cap == capacity.end() ? 0 : cap->second));
      }
    }
    // The pods: their claims, and what those hold (GPU index -> milli).
    dra_held_.clear();
    for (const auto& [node, pods] : view.on_node) {
      const CheckedNode& n = NodeOf(node);
      for (const PodRef& p : pods) {
        const CheckedPod* s = Spec(*p);
        if (s == nullptr || !view.bound.contains(p->Key())) continue;  // claims are written before the bind
        auto ext = view.extended_status.find(p->Key());
        std::string claim_name = s->claim;
        const bool via_request = s->claim.empty() && s->gpus > 0 && n.dra;
        if (via_request) {
          if (ext == view.extended_status.end() || !ext->second.contains("resourceClaimName")) {
            out.push_back(StrCat(p->Key(), " runs on DRA node ", node, " asking nvidia.com/gpu but has no "
                                 "status.extendedResourceClaimStatus naming its claim"));
            continue;
          }
          claim_name = ext->second["resourceClaimName"].get<std::string>();
        } else if (ext != view.extended_status.end()) {
          out.push_back(StrCat(p->Key(), " runs on ", node, ", whose GPUs are no DRA devices, with an "
                               "extendedResourceClaimStatus: ", ext->second.dump()));
        }
        if (claim_name.empty()) continue;
        const std::string key = StrCat(p->meta.namespace_, "/", claim_name);
        auto claim = view.claims.find(key);
        if (claim == view.claims.end()) {
          out.push_back(StrCat(p->Key(), " runs on ", node, " but its claim ", key, " does not exist"));
          continue;
        }
        if (via_request) {
          const nlohmann::json& meta = claim->second["metadata"];
          const bool annotated = meta.value("annotations", nlohmann::json::object())
                                     .value("resource.kubernetes.io/extended-resource-claim", "") == "true";
          bool owned = false;
          for (const nlohmann::json& o : meta.value("ownerReferences", nlohmann::json::array())) {
            owned |= o.value("kind", "") == "Pod" && o.value("uid", "") == p->meta.uid && o.value("controller", false);
          }
          if (!annotated || !owned) {
            out.push_back(StrCat("claim ", key, " serving the GPUs of ", p->Key(), " is not its extended-resource "
                                 "claim (annotated ", annotated, ", owned ", owned, ")"));
          }
        }
        auto at = claim_node.find(key);
        if (at == claim_node.end()) {
          out.push_back(StrCat(p->Key(), " runs on ", node, " but its claim ", key, " is not allocated"));
          continue;
        }
        if (at->second.first != node || at->second.second != DraDevices(*s)) {
          out.push_back(StrCat(p->Key(), " runs on ", node, " asking ", DraDevices(*s), " devices, but its claim ", key,
                               " has ", at->second.second, " on ", at->second.first));
        }
        if (!ReservedFor(claim->second).contains({p->meta.name, p->meta.uid})) {
          out.push_back(StrCat(p->Key(), " runs on ", node, " but is not in the reservedFor of its claim ", key));
        }
        for (const nlohmann::json& r : *Results(claim->second)) {
          // The test's devices: gpu-<i> (the whole GPU) and gpu-<i>-half-<h>.
          const std::string device = r.value("device", "");
          if (!device.starts_with("gpu-")) continue;
          const size_t dash = device.find('-', 4);
          dra_held_[p->Key()].emplace_back(std::stoi(device.substr(4, dash - 4)), dash == std::string::npos ? 1000 : 500);
        }
      }
    }
  }

  const CheckedPod* SpecOf(const std::string& key) const {
    auto it = world_->pods.find(key);
    return it == world_->pods.end() ? nullptr : &it->second;
  }
  static bool Terminating(const Pod& p) { return p.meta.deletion_timestamp.has_value(); }

  // GPU room, in the node's own unit: milli-GPUs on an exclusive node (a device is 1000), slots
  // on a time-sliced one (each GPU asked for is one replica; a fraction takes one too).
  // On a DRA node, milli-GPUs too: a device takes a whole GPU (1000), or at least half of one
  // where the node's GPUs are partitionable (the checker's least, for room it cannot see).
  static int64_t GpuRoom(const CheckedNode& n) {
    return n.replicas > 1 ? n.gpus * n.replicas : n.gpus * 1000;
  }
  // DRA devices the pod takes on a DRA node: its claim's count, or one per GPU it asks for (one
  // for a fraction: a device is not shared).
  static int64_t DraDevices(const CheckedPod& s) { return s.gpu_milli > 0 ? 1 : s.gpus; }
  static int64_t GpuDemandOn(const CheckedPod& s, const CheckedNode& n) {
    if (s.gpus == 0) return 0;
    if (n.dra) return DraDevices(s) * (n.partitionable ? 500 : 1000);
    if (n.replicas > 1) return s.gpu_milli > 0 ? 1 : s.gpus;
    return s.gpu_milli > 0 ? s.gpu_milli : s.gpus * 1000;
  }
  // What the pod charges its queue, in milli-GPUs of physical GPUs: a replica is 1/R of a GPU;
  // a DRA device is one GPU, whatever share of a GPU the device is (as the claim's class names
  // nvidia.com/gpu per device); a claim of its own charges its devices wherever it is.
  static int64_t QuotaMilliOn(const CheckedPod& s, const CheckedNode& n) {
    if (!s.claim.empty()) return s.gpus * 1000;
    if (n.dra) return s.gpus == 0 ? 0 : DraDevices(s) * 1000;
    if (n.replicas > 1) return GpuDemandOn(s, n) * 1000 / n.replicas;
    return GpuDemandOn(s, n);
  }

  // Resources (CPU, GPU room), devices (whole GPUs alone on theirs, fractions within 1000 milli,
  // at most R replicas per GPU), the opt-out from shared GPUs, and required anti-affinity.
  void CheckNode(const CheckedNode& n, const std::vector<PodRef>& pods, std::vector<std::string>& out) {
    int64_t cpu = 0, room = 0;
    std::map<int32_t, int64_t> on_device;  // device -> milli (exclusive node) or slots (shared)
    for (const PodRef& p : pods) {
      const CheckedPod* s = Spec(*p);
      if (s == nullptr) continue;
      cpu += s->milli_cpu;
      room += GpuDemandOn(*s, n);
      if (s->gpus == 0) continue;
      if (n.dra || !s->claim.empty()) {
        // DRA devices (CheckDra); no device-plugin GPU besides, which would count a GPU twice.
        if (p->gpu_devices && !p->gpu_devices->empty()) {
          out.push_back(StrCat(p->Key(), " holds device-plugin GPUs ", absl::StrJoin(*p->gpu_devices, ","), " on ",
                               n.name, n.dra ? ", a node whose GPUs are DRA devices" : " for a claim of its own"));
        }
        continue;
      }
      if (s->sharing_never && n.replicas > 1) {
        out.push_back(StrCat(p->Key(), " opted out of shared GPUs but runs on time-sliced ", n.name));
      }
      const int64_t held = p->gpu_devices ? static_cast<int64_t>(p->gpu_devices->size()) : 0;
      const int64_t want = n.replicas > 1 || s->gpu_milli == 0 ? s->gpus : 1;
      if (held != want) {
        out.push_back(StrCat(p->Key(), " asks ", s->gpus, " GPUs but holds ", held, " devices on ", n.name));
      }
      if (!p->gpu_devices) continue;
      for (int32_t d : *p->gpu_devices) {
        if (d < 0 || d >= n.gpus) out.push_back(StrCat(p->Key(), " holds device ", d, " of ", n.name));
        on_device[d] += n.replicas > 1 ? 1 : (s->gpu_milli > 0 ? s->gpu_milli : 1000);
      }
    }
    for (const auto& [d, used] : on_device) {
      const int64_t cap = n.replicas > 1 ? n.replicas : 1000;
      if (used > cap) {
        out.push_back(StrCat("device ", d, " of ", n.name, " is overcommitted: ", used, " of ", cap,
                             n.replicas > 1 ? " replicas" : " milli"));
      }
    }
    if (room > GpuRoom(n)) {
      out.push_back(StrCat(n.name, " overcommitted: GPU room ", room, " of ", GpuRoom(n),
                           n.replicas > 1 ? " replicas" : " milli"));
    }
    if (cpu > n.milli_cpu) out.push_back(StrCat(n.name, " overcommitted: cpu ", cpu, "m of ", n.milli_cpu, "m"));
    for (const PodRef& a : pods) {
      const CheckedPod* sa = Spec(*a);
      if (sa == nullptr || sa->anti_app.empty()) continue;
      for (const PodRef& b : pods) {
        const CheckedPod* sb = Spec(*b);
        if (a == b || sb == nullptr || sb->app != sa->anti_app || sb->namespace_ != sa->namespace_) continue;
        out.push_back(StrCat(a->Key(), " (anti-affinity to app=", sa->anti_app, ") shares ", n.name,
                             " with ", b->Key()));
      }
    }
  }

  // A pod placed this cycle left the room of the pods nominated to its node that are at least as
  // important: once the node's terminating pods are gone (their room is what preemption freed
  // for those pods), the pods that stay, the pod and all those nominated pods fit together
  // (kube-scheduler adds the nominated pods to the node; it also keeps the terminating pods,
  // which counts a victim's room twice).
  void CheckNominations(const ClusterView& view, const std::map<std::string, std::string>& placed_now,
                        std::vector<std::string>& out) {
    for (const auto& [key, node_name] : placed_now) {
      const CheckedPod* s = SpecOf(key);
      if (s == nullptr) continue;
      auto nominated = before_.nominated.find(node_name);
      if (nominated == before_.nominated.end()) continue;
      const CheckedNode& n = NodeOf(node_name);
      int64_t cpu = 0, gpus = 0;  // gpus: GPU room, in the node's unit (GpuRoom)
      for (const PodRef& p : view.on_node.at(node_name)) {
        if (Terminating(*p)) continue;
        if (const CheckedPod* o = Spec(*p)) cpu += o->milli_cpu, gpus += GpuDemandOn(*o, n);
      }
      std::vector<std::string> ahead;
      for (const PodRef& q : nominated->second) {
        const CheckedPod* sq = Spec(*q);
        if (sq == nullptr || q->Key() == key || sq->priority < s->priority) continue;
        if (placed_now.contains(q->Key())) continue;  // placed in the same cycle (a gang mate)
        cpu += sq->milli_cpu, gpus += GpuDemandOn(*sq, n);
        ahead.push_back(q->Key());
      }
      if (ahead.empty()) continue;
      // Only what the pod asks for is checked (a pod without GPUs may join a node whose GPUs
      // are still held by a nominated pod's victims).
      if (cpu > n.milli_cpu || (s->gpus > 0 && gpus > GpuRoom(n))) {
        out.push_back(StrCat(key, " (priority ", s->priority, ") took the room on ", node_name,
                             " of nominated ", absl::StrJoin(ahead, ", "), ": once its terminating pods are gone, cpu ",
                             cpu, "m of ", n.milli_cpu, "m, GPU room ", gpus, " of ", GpuRoom(n)));
      }
    }
  }

  // DoNotSchedule, maxSkew 1 over hostnames, among the pods of one app that are not
  // terminating: a cycle that places such a pod never leaves a skew above 1 that it made worse.
  void CheckSpread(const ClusterView& view, const std::map<std::string, std::string>& placed_now,
                   std::vector<std::string>& out) {
    std::set<std::string> apps;
    for (const auto& entry : placed_now) {
      const CheckedPod* s = SpecOf(entry.first);
      if (s != nullptr && s->spread) apps.insert(StrCat(s->namespace_, "/", s->app));
    }
    for (const std::string& app : apps) {
      const int64_t after = Skew(view, app), before = Skew(before_, app);
      if (after > 1 && after > before) {
        out.push_back(StrCat("spread of ", app, " went from skew ", before, " to ", after));
      }
    }
  }
  int64_t Skew(const ClusterView& view, const std::string& app) const {
    int64_t lo = INT64_MAX, hi = 0;
    for (const CheckedNode& n : world_->nodes) {
      int64_t count = 0;
      if (auto it = view.on_node.find(n.name); it != view.on_node.end()) {
        for (const PodRef& p : it->second) {
          const CheckedPod* s = Spec(*p);
          count += s != nullptr && !Terminating(*p) && StrCat(s->namespace_, "/", s->app) == app;
        }
      }
      lo = std::min(lo, count);
      hi = std::max(hi, count);
    }
    return hi - lo;
  }

  // A queue without a cohort stays within its nominal GPUs; a cohort's queues together within
  // the sum of their nominal GPUs. Pods being deleted hold no quota; a replica is 1/R of a GPU,
  // a fraction its milli (docs/quota.md, docs/gpu.md). Compared in milli-GPUs.
  // What each namespace's running pods charge their queue, in milli-GPUs (with the terminating
  // ones, which hold their quota until they are gone, when asked).
  // With `pool`, only the pods on nodes of that ResourceFlavor (a flavored tree's quota is per
  // flavor).
  std::map<std::string, int64_t> QuotaUsed(const ClusterView& view, bool with_terminating = false,
                                           const std::optional<std::string>& pool = std::nullopt) const {
    std::map<std::string, int64_t> used;
    for (const auto& [node, pods] : view.on_node) {
      const CheckedNode& n = NodeOf(node);
      if (pool.has_value() && PoolOf(n) != *pool) continue;
      for (const PodRef& p : pods) {
        const CheckedPod* s = Spec(*p);
        if (s != nullptr && (with_terminating || !Terminating(*p))) used[s->namespace_] += QuotaMilliOn(*s, n);
      }
    }
    return used;
  }
  const CheckedQueue* QueueOf(const std::string& namespace_) const {
    for (const CheckedQueue& q : world_->queues) {
      if (q.namespace_ == namespace_) return &q;
    }
    return nullptr;
  }
  // A world whose queues have flavors and hang in a tree of Cohorts: one tree per flavor.
  bool FlavoredTree() const { return !world_->cohorts.empty() && !world_->flavors.empty(); }
  // The ResourceFlavor whose node labels the node has, "" for none (the test's pools are
  // disjoint: a node is in one at most).
  std::string PoolOf(const CheckedNode& n) const {
    for (const auto& [flavor, labels] : world_->flavors) {
      const bool in = std::all_of(labels.begin(), labels.end(), [&](const auto& label) {
        auto l = n.labels.find(label.first);
        return l != n.labels.end() && l->second == label.second;
      });
      if (in) return flavor;
    }
    return "";
  }
  // The key a flavored tree's quota is kept under for what runs on `node`: its pool ("" when the
  // quotas are flat).
  std::string QuotaKeyOn(const std::string& node) const { return FlavoredTree() ? PoolOf(NodeOf(node)) : ""; }
  // The tree of Cohorts and queues, in milli-GPUs, with `used` by namespace: the flat quotas, or
  // with `flavor` those of that flavor (a flavor a node does not list: nominal 0, no limits).
  QuotaTreeModel TreeOf(const std::map<std::string, int64_t>& used, const std::string& flavor = "") const {
    QuotaTreeModel tree;
    auto milli = [](std::optional<int64_t> gpus) { return gpus ? std::optional<int64_t>(*gpus * 1000) : std::nullopt; };
    auto node = [&](const std::string& name, bool queue, const std::string& parent, int64_t nominal,
                    std::optional<int64_t> borrowing, std::optional<int64_t> lending,
                    const std::vector<CheckedFlavorQuota>& flavors) {
      QuotaTreeModel::Node n{.name = name, .queue = queue, .parent = parent};
      if (flavor.empty()) {
        n.nominal = nominal * 1000, n.borrowing_limit = milli(borrowing), n.lending_limit = milli(lending);
      }
      for (const CheckedFlavorQuota& f : flavors) {
        if (flavor.empty() || f.flavor != flavor) continue;
        n.nominal = f.nominal_gpus * 1000, n.borrowing_limit = milli(f.borrowing_gpus), n.lending_limit = milli(f.lending_gpus);
      }
      tree.nodes.push_back(std::move(n));
    };
    for (const CheckedCohort& c : world_->cohorts) {
      node(c.name, false, c.parent, c.nominal_gpus, c.borrowing_limit_gpus, c.lending_limit_gpus, c.flavors);
    }
    for (const CheckedQueue& q : world_->queues) {
      node(q.name, true, q.cohort, q.nominal_gpus, q.borrowing_limit_gpus, q.lending_limit_gpus, q.flavors);
      if (auto it = used.find(q.namespace_); it != used.end()) tree.usage[q.name] = it->second;
    }
    return tree;
  }
  // In a tree: `q` cannot take `demand` more milli-GPUs (of `flavor`) on top of `used`, some
  // limit on its path breaking.
  bool TreeRejects(const CheckedQueue& q, int64_t demand, const std::map<std::string, int64_t>& used,
                   const std::string& flavor = "") const {
    QuotaTreeModel tree = TreeOf(used, flavor);
    tree.usage[q.name] += demand;
    return !tree.Holds();
  }
  // In a tree: a victim of queue `victim` gives room back to queue `preemptor` by reclaim only
  // from a subtree that borrows: the child of their lowest common cohort on the victim's side
  // uses more than its subtree quota (of `flavor`).
  bool TreeLent(const CheckedQueue& victim, const CheckedQueue& preemptor, const std::map<std::string, int64_t>& used,
                const std::string& flavor = "") const {
    const QuotaTreeModel tree = TreeOf(used, flavor);
    const std::vector<const QuotaTreeModel::Node*> vp = tree.Path(victim.name), pp = tree.Path(preemptor.name);
    for (size_t i = 0; i + 1 < vp.size(); ++i) {
      const QuotaTreeModel::Node* above = vp[i + 1];
      const bool common = std::any_of(pp.begin(), pp.end(), [&](const QuotaTreeModel::Node* n) { return n == above; });
      if (common) return tree.Use(*vp[i]) > tree.Subtree(*vp[i]);
    }
    return false;  // no common cohort: nothing lent between them
  }

  void CheckQuota(const ClusterView& view, std::vector<std::string>& out) {
    std::map<std::string, int64_t> used = QuotaUsed(view);
    if (!world_->cohorts.empty()) {
      // Flat quotas: one tree; flavored ones: a tree per flavor, of what runs on its nodes.
      std::vector<std::string> keys = {""};
      if (FlavoredTree()) {
        keys.clear();
        for (const auto& [flavor, labels] : world_->flavors) keys.push_back(flavor);
      }
      bool borrows = false;
      for (const std::string& key : keys) {
        const QuotaTreeModel tree = TreeOf(key.empty() ? used : QuotaUsed(view, false, key), key);
        borrows |= std::any_of(tree.nodes.begin(), tree.nodes.end(), [&](const QuotaTreeModel::Node& n) {
          return !n.queue && !n.parent.empty() && tree.Use(n) > tree.Subtree(n);
        });
        if (const QuotaTreeModel::Node* n = tree.Broken()) {
          out.push_back(StrCat(n->queue ? "queue " : "cohort ", n->name, " uses ", tree.Use(*n), " milli-GPUs",
                               key.empty() ? "" : StrCat(" of flavor ", key), " of subtree quota ", tree.Subtree(*n),
                               n->borrowing_limit ? StrCat(" and borrowing limit ", *n->borrowing_limit) : ""));
        }
      }
      cycles_cohort_borrowing_ += borrows;
      return;
    }
    std::map<std::string, std::pair<int64_t, int64_t>> cohorts;  // used, nominal
    for (const CheckedQueue& q : world_->queues) {
      if (!q.flavors.empty()) continue;  // CheckFlavors
      const int64_t u = used[q.namespace_];
      if (q.cohort.empty()) {
        if (u > q.nominal_gpus * 1000) {
          out.push_back(StrCat("queue ", q.name, " holds ", u, " milli-GPUs of nominal ", q.nominal_gpus));
        }
        continue;
      }
      cohorts[q.cohort].first += u;
      cohorts[q.cohort].second += q.nominal_gpus * 1000;
    }
    for (const auto& [cohort, un] : cohorts) {
      if (un.first > un.second) {
        out.push_back(StrCat("cohort ", cohort, " holds ", un.first, " milli-GPUs of nominal ", un.second));
      }
    }
  }

  // Flavored queues (docs/flavors.md), for pods that ask for GPUs: each runs on a node of one
  // of its queue's flavors (a node is in a flavor when it has all the flavor's node labels; the
  // queue's first such flavor is the node's), a gang's running members on one flavor; per (queue,
  // flavor) the pods not being deleted hold at most nominal + borrowing limit, and a cohort's
  // queues together at most the sum of their nominal quotas of that flavor. Milli-GPUs as above.
  void CheckFlavors(const ClusterView& view, std::vector<std::string>& out) {
    std::map<std::pair<std::string, std::string>, int64_t> used;  // (queue, flavor) -> milli-GPUs
    std::map<std::string, std::map<std::string, int32_t>> gang_flavors;  // gang -> flavor -> members on it
    std::map<std::string, std::vector<std::string>> gang_where;    // gang -> "member on node (flavor)"
    for (const auto& [node, pods] : view.on_node) {
      const CheckedNode& n = NodeOf(node);
      for (const PodRef& p : pods) {
        const CheckedPod* s = Spec(*p);
        const CheckedQueue* q = s == nullptr ? nullptr : FlavoredQueueOf(s->namespace_);
        if (q == nullptr || s->gpus == 0) continue;
        const std::string flavor = FlavorOf(*q, n);
        if (flavor.empty()) {
          out.push_back(StrCat(p->Key(), " of queue ", q->name, " runs on ", node, ", a node of none of its flavors"));
          continue;
        }
        if (Terminating(*p)) continue;
        used[{q->name, flavor}] += QuotaMilliOn(*s, n);
        if (!s->gang.empty()) {
          ++gang_flavors[s->gang][flavor];
          gang_where[s->gang].push_back(StrCat(p->Key(), " on ", node, " (", flavor, ")"));
        }
      }
    }
    // A gang's running members share one flavor, those placed after the gang (beyond minMember)
    // too: they join the flavor the others run on.
    for (const auto& [gang, flavors] : gang_flavors) {
      if (flavors.size() > 1) {
        std::vector<std::string> names;
        for (const auto& [flavor, n] : flavors) names.push_back(flavor);
        out.push_back(StrCat("gang ", gang, " (minMember ", world_->gang_min.at(gang), ") runs on flavors ",
                             absl::StrJoin(names, ", "), ": ", absl::StrJoin(gang_where[gang], ", ")));
      }
    }
    std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> cohorts;  // (cohort, flavor) -> used, nominal
    bool borrowing = false;
    for (const CheckedQueue& q : world_->queues) {
      for (const CheckedFlavorQuota& f : q.flavors) {
        const int64_t u = used[{q.name, f.flavor}];
        borrowing |= u > f.nominal_gpus * 1000;
        const bool alone = q.cohort.empty();
        if (alone || f.borrowing_gpus.has_value()) {
          const int64_t limit = (f.nominal_gpus + (alone ? 0 : *f.borrowing_gpus)) * 1000;
          if (u > limit) {
            out.push_back(StrCat("queue ", q.name, " holds ", u, " milli-GPUs of flavor ", f.flavor, ", above its nominal ",
                                 f.nominal_gpus, alone ? "" : StrCat(" + borrowing limit ", *f.borrowing_gpus)));
          }
        }
        if (alone || !world_->cohorts.empty()) continue;  // a tree: CheckQuota, per flavor
        cohorts[{q.cohort, f.flavor}].first += u;
        cohorts[{q.cohort, f.flavor}].second += f.nominal_gpus * 1000;
      }
    }
    cycles_borrowing_ += borrowing;
    for (const auto& [key, un] : cohorts) {
      if (un.first > un.second) {
        out.push_back(StrCat("cohort ", key.first, " holds ", un.first, " milli-GPUs of flavor ", key.second,
                             " of nominal ", un.second));
      }
    }
  }
  // The flavor a workload of a flavored queue takes (docs/flavors.md): the first of its flavors
  // with quota and room; with whenCanBorrow: TryNextFlavor, a flavor where it does not borrow
  // before every flavor where it would. A gang and a single pod are judged by this one rule (a
  // gang by its minMember members together). Checked where the checker can tell for sure: a pod,
  // or a gang none of whose members ran, without pod rules, not nominated before the cycle, placed
  // this cycle on flavor F, while a flavor it should have preferred had, before the cycle, room
  // for it on nodes that hold no nominated pod and no reservation, and quota for it that needs no
  // reclaim (terminating pods still holding both).
  void CheckFlavorChoice(const ClusterView& view, const std::map<std::string, std::string>& placed_now,
                         std::vector<std::string>& out) const {
    std::set<std::string> nominated_before;
    for (const auto& [node, pods] : before_.nominated) {
      for (const PodRef& p : pods) nominated_before.insert(Preemptor(p->Key()));
    }
    std::set<std::string> ran_before;
    for (const auto& [key, node] : placed_before_) ran_before.insert(Preemptor(key));
    std::map<std::string, std::vector<std::string>> workloads;  // pod key or "gang G" -> keys placed now
    for (const auto& [key, node] : placed_now) {
      if (SpecOf(key) != nullptr) workloads[Preemptor(key)].push_back(key);
    }
    for (const auto& [who, keys] : workloads) {
      const CheckedPod& s = *SpecOf(keys.front());
      const CheckedQueue* q = FlavoredQueueOf(s.namespace_);
      if (q == nullptr || s.gpus == 0 || !s.anti_app.empty() || s.spread) continue;
      if (nominated_before.contains(who) || ran_before.contains(who)) continue;
      const std::string chosen = FlavorOf(*q, NodeOf(placed_now.at(keys.front())));
      if (chosen.empty()) continue;  // CheckFlavors reports it
      const int32_t count = s.gang.empty() ? 1 : world_->gang_min.at(s.gang);
      // Borrowing for certain: above the nominal quota with neither terminating nor nominated
      // pods counted. Members placed beyond minMember join the gang's flavor and may borrow there
      // (docs/flavors.md): the gang's choice is judged without them.
      const bool beyond_min = static_cast<int32_t>(keys.size()) > count;
      const bool borrowed = !beyond_min && HeldOf(view, *q, chosen, false).queue > NominalMilli(*q, chosen);
      const auto chosen_at = std::find_if(q->flavors.begin(), q->flavors.end(),
                                          [&](const CheckedFlavorQuota& f) { return f.flavor == chosen; });
      for (auto f = q->flavors.begin(); f != q->flavors.end(); ++f) {
        if (f == chosen_at) continue;
        const bool earlier = f < chosen_at;
        if (!earlier && !(q->borrow_next_flavor && borrowed)) continue;
        // An earlier flavor wins if it takes the workload as the chosen one did (borrowing or
        // not); under TryNextFlavor a later one wins only without borrowing.
        const bool may_borrow = earlier && (!q->borrow_next_flavor || borrowed);
        // The most it may charge there: a flavor's nodes may charge differently (a fraction holds
        // a whole device on a DRA node, a whole replica on a time-sliced one), and the room may be
        // on the dearest of them.
        const int64_t demand = MostCharge(*q, f->flavor, s) * count;
        if (!Admits(*q, f->flavor, demand, HeldOf(before_, *q, f->flavor, true), may_borrow)) continue;
        if (!HasRoom(*q, f->flavor, s, count)) continue;
        out.push_back(StrCat(who, " of queue ", q->name, " (whenCanBorrow: ",
                             q->borrow_next_flavor ? "TryNextFlavor" : "Borrow", ") was placed on flavor ", chosen,
                             borrowed ? ", borrowing," : "", " though flavor ", f->flavor, " had room and quota for it",
                             may_borrow ? "" : " without borrowing", earlier ? " and comes first" : ""));
      }
    }
  }
  // Required anti-affinity (hostname) keeps the two pods apart, in either direction.
  static bool AntiAffine(const CheckedPod& a, const CheckedPod& b) {
    return a.namespace_ == b.namespace_ &&
           ((!a.anti_app.empty() && a.anti_app == b.app) || (!b.anti_app.empty() && b.anti_app == a.app));
  }
  bool ReservedBefore(const std::string& node) const {
    return std::any_of(before_.reserved.begin(), before_.reserved.end(), [&](const auto& held) {
      return std::find(held.second.begin(), held.second.end(), node) != held.second.end();
    });
  }
  // Whether `count` pods like `s` fit at once, before the cycle, on the flavor's nodes that hold
  // no nominated pod and no reservation.
  bool HasRoom(const CheckedQueue& q, const std::string& flavor, const CheckedPod& s, int32_t count) const {
    std::map<std::string, Room> rooms;
    for (const CheckedNode& n : world_->nodes) {
      if (FlavorOf(q, n) != flavor || ReservedBefore(n.name)) continue;
      if (auto nominated = before_.nominated.find(n.name); nominated != before_.nominated.end() && !nominated->second.empty()) {
        continue;
      }
      auto on = before_.on_node.find(n.name);
      if (on == before_.on_node.end()) {
        rooms[n.name] = RoomOf(n, {});
        continue;
      }
      if (std::any_of(on->second.begin(), on->second.end(), [&](const PodRef& p) {
            const CheckedPod* o = Spec(*p);
            return o != nullptr && AntiAffine(s, *o);
          })) {
        continue;
      }
      rooms[n.name] = RoomOf(n, on->second, /*terminating_hold=*/true);
    }
    return PlaceAll(rooms, std::vector<const CheckedPod*>(static_cast<size_t>(count), &s), 0);
  }

  // --- Quota bounds. A flat queue is one flavor, "", with its nominal quota. In milli-GPUs.
  static int64_t FullCharge(const CheckedPod& s) { return s.gpu_milli > 0 ? s.gpu_milli : s.gpus * 1000; }
  // The least the pod charges on a node of the flavor (a replica of a time-sliced GPU is 1/R).
  int64_t LeastCharge(const CheckedQueue& q, const std::string& flavor, const CheckedPod& s) const {
    int64_t least = FullCharge(s);
    for (const CheckedNode& n : world_->nodes) {
      if (q.flavors.empty() || FlavorOf(q, n) == flavor) least = std::min(least, QuotaMilliOn(s, n));
    }
    return least;
  }
  // The most the pod charges on a node of the flavor.
  int64_t MostCharge(const CheckedQueue& q, const std::string& flavor, const CheckedPod& s) const {
    int64_t most = 0;
    for (const CheckedNode& n : world_->nodes) {
      if (q.flavors.empty() || FlavorOf(q, n) == flavor) most = std::max(most, QuotaMilliOn(s, n));
    }
    return most > 0 ? most : FullCharge(s);
  }
  int64_t NominalMilli(const CheckedQueue& q, const std::string& flavor) const {
    if (q.flavors.empty()) return q.nominal_gpus * 1000;
    for (const CheckedFlavorQuota& f : q.flavors) {
      if (f.flavor == flavor) return f.nominal_gpus * 1000;
    }
    return 0;
  }
  std::optional<int64_t> BorrowingMilli(const CheckedQueue& q, const std::string& flavor) const {
    for (const CheckedFlavorQuota& f : q.flavors) {
      if (f.flavor == flavor && f.borrowing_gpus.has_value()) return *f.borrowing_gpus * 1000;
    }
    return std::nullopt;
  }
  // What the queue, and its cohort, hold of a flavor, and the cohort's nominal quota of it.
  struct QuotaHeld {
    int64_t queue = 0, cohort = 0, cohort_nominal = 0;
    std::map<std::string, int64_t> by_namespace;  // in a tree: what every queue holds of the flavor
  };
  // With `at_most`, the most the scheduler may count: pods being deleted, and pods nominated to
  // nodes (their room is being made); else the least: neither.
  QuotaHeld HeldOf(const ClusterView& view, const CheckedQueue& q, const std::string& flavor, bool at_most) const {
    QuotaHeld h;
    for (const CheckedQueue& c : world_->queues) {
      const bool same = c.name == q.name;
      const bool tree = !world_->cohorts.empty();  // one tree holds both queues
      if (!same && !tree && (q.cohort.empty() || c.cohort != q.cohort)) continue;
      h.cohort_nominal += NominalMilli(c, flavor);
      auto count = [&](const std::map<std::string, std::vector<PodRef>>& pods_by_node) {
        for (const auto& [node, pods] : pods_by_node) {
          const CheckedNode& n = NodeOf(node);
          if (!c.flavors.empty() && FlavorOf(c, n) != flavor) continue;
          for (const PodRef& p : pods) {
            const CheckedPod* s = Spec(*p);
            if (s == nullptr || s->namespace_ != c.namespace_ || (!at_most && Terminating(*p))) continue;
            const int64_t charge = QuotaMilliOn(*s, n);
            h.cohort += charge;
            h.by_namespace[c.namespace_] += charge;
            if (same) h.queue += charge;
          }
        }
      };
      count(view.on_node);
      if (at_most) count(view.nominated);
    }
    return h;
  }
  // The queue takes `demand` more of the flavor with no pod reclaimed: within its nominal quota
  // and the cohort's, or (when it may borrow) within its borrowing limit and the cohort's.
  bool Admits(const CheckedQueue& q, const std::string& flavor, int64_t demand, const QuotaHeld& h,
              bool may_borrow) const {
    const int64_t own = h.queue + demand, nominal = NominalMilli(q, flavor);
    if (q.cohort.empty()) return own <= nominal;
    if (!world_->cohorts.empty()) {  // a tree: every limit on its path holds (the flavor's)
      if (TreeRejects(q, demand, h.by_namespace, q.flavors.empty() ? "" : flavor)) return false;
      return may_borrow || own <= nominal;
    }
    if (h.cohort + demand > h.cohort_nominal) return false;
    if (!may_borrow) return own <= nominal;
    const std::optional<int64_t> borrowing = BorrowingMilli(q, flavor);
    return !borrowing.has_value() || own <= nominal + *borrowing;
  }
  // The queue cannot take `demand` more of the flavor, whatever is reclaimed: above its nominal
  // quota (alone) or its borrowing limit, or above its nominal quota while the cohort's is used up.
  bool Rejects(const CheckedQueue& q, const std::string& flavor, int64_t demand, const QuotaHeld& h) const {
    const int64_t own = h.queue + demand, nominal = NominalMilli(q, flavor);
    if (q.cohort.empty()) return own > nominal;
    const std::optional<int64_t> borrowing = BorrowingMilli(q, flavor);
    if (borrowing.has_value() && own > nominal + *borrowing) return true;
    // In a tree, reclaim may free room at any level above the queue: for certain only its own
    // borrowing limit.
    if (!world_->cohorts.empty()) return false;
    return own > nominal && h.cohort + demand > h.cohort_nominal;
  }
  // Whether the queue of `s` rejects `count` pods like it on every one of its flavors, for certain
  // (pods being deleted not counted, the least charge per pod).
  bool QuotaRejects(const ClusterView& view, const CheckedPod& s, int32_t count) const {
    const CheckedQueue* q = QueueOf(s.namespace_);
    if (q == nullptr || s.gpus == 0 || count <= 0) return false;
    if (!world_->cohorts.empty() && q->flavors.empty()) {
      // In a tree, reclaim may free room at any level above the queue; for certain only the
      // queue's own borrowing limit (what it alone holds counts against it).
      if (!q->borrowing_limit_gpus) return false;
      int64_t least = FullCharge(s);
      for (const CheckedNode& n : world_->nodes) least = std::min(least, QuotaMilliOn(s, n));
      const std::map<std::string, int64_t> used = QuotaUsed(view);
      const auto it = used.find(q->namespace_);
      const int64_t own = it == used.end() ? 0 : it->second;
      return own + least * count > (q->nominal_gpus + *q->borrowing_limit_gpus) * 1000;
    }
    std::vector<std::string> flavors;
    for (const CheckedFlavorQuota& f : q->flavors) flavors.push_back(f.flavor);
    if (flavors.empty()) flavors.push_back("");
    return std::all_of(flavors.begin(), flavors.end(), [&](const std::string& f) {
      return Rejects(*q, f, LeastCharge(*q, f, s) * count, HeldOf(view, *q, f, false));
    });
  }
  // The members of `s`'s gang still to place for minMember (1 for a pod).
  int32_t StillToPlace(const ClusterView& view, const CheckedPod& s) const {
    if (s.gang.empty()) return 1;
    int32_t running = 0;
    for (const auto& [node, pods] : view.on_node) {
      for (const PodRef& p : pods) {
        const CheckedPod* o = Spec(*p);
        running += o != nullptr && o->gang == s.gang && !Terminating(*p);
      }
    }
    return std::max(0, world_->gang_min.at(s.gang) - running);
  }

  // A preemptor of a flavored queue (a pod, or a gang) evicts or moves pods for room on one of
  // its flavors only: the pods it chose (not their gang mates, which go wherever they run) are
  // all on nodes of one flavor of its queue, since it is placed on one.
  void CheckFlavorOfEvictions(const std::vector<Eviction>& evictions, std::vector<std::string>& out) const {
    std::map<std::string, std::set<std::string>> flavors_of;  // preemptor -> flavors of its victims' nodes
    for (const Eviction& e : evictions) {
      const CheckedPod* preemptor = SpecOf(e.preemptor);
      const CheckedPod* victim = SpecOf(e.victim);
      const CheckedQueue* q = preemptor == nullptr ? nullptr : FlavoredQueueOf(preemptor->namespace_);
      if (q == nullptr || victim == nullptr || !victim->gang.empty() || preemptor->gpus == 0) continue;
      const std::string flavor = FlavorOf(*q, NodeOf(e.node));
      flavors_of[Preemptor(e.preemptor)].insert(flavor.empty() ? "(none of its flavors)" : flavor);
    }
    for (const auto& [who, flavors] : flavors_of) {
      if (flavors.size() > 1 || flavors.contains("(none of its flavors)")) {
        out.push_back(StrCat(who, " evicted pods on flavors ", absl::StrJoin(flavors, ", "), " in one cycle"));
      }
    }
  }
  // Room is made (pods evicted or moved) for a workload of a flavored queue only when no flavor
  // that comes first for it had room and quota (docs/flavors.md): with whenCanPreempt:
  // TryNextFlavor, none of its flavors; with Preempt, none before the flavor it makes room on
  // (it preempts there before it takes a later flavor's free room). Judged where the checker can
  // tell for sure: a pod, or a gang none of whose members ran, without pod rules, not nominated
  // before the cycle, and a flavor with room, before the cycle, on nodes that hold no nominated
  // pod and no reservation, and quota within its nominal quota and the cohort's (terminating and
  // nominated pods counted).
  void CheckRoomMadeOnlyWhenNeeded(const std::vector<Eviction>& evictions, std::vector<std::string>& out) const {
    std::set<std::string> nominated_before;
    for (const auto& [node, pods] : before_.nominated) {
      for (const PodRef& p : pods) nominated_before.insert(Preemptor(p->Key()));
    }
    std::set<std::string> ran_before;
    for (const auto& [key, node] : placed_before_) ran_before.insert(Preemptor(key));
    std::map<std::string, std::pair<const CheckedPod*, std::string>> made_for;  // who -> (spec, flavor of the room)
    for (const Eviction& e : evictions) {
      const CheckedPod* s = SpecOf(e.preemptor);
      const CheckedQueue* q = s == nullptr ? nullptr : FlavoredQueueOf(s->namespace_);
      if (q == nullptr || s->gpus == 0 || !s->anti_app.empty() || s->spread) continue;
      const std::string who = Preemptor(e.preemptor);
      if (nominated_before.contains(who) || ran_before.contains(who)) continue;
      const std::string flavor = FlavorOf(*q, NodeOf(e.node));
      if (!flavor.empty()) made_for.try_emplace(who, s, flavor);  // CheckFlavorOfEvictions: one flavor
    }
    for (const auto& [who, made] : made_for) {
      const auto& [s, flavor] = made;
      const CheckedQueue& q = *FlavoredQueueOf(s->namespace_);
      const int32_t count = s->gang.empty() ? 1 : world_->gang_min.at(s->gang);
      for (const CheckedFlavorQuota& f : q.flavors) {
        if (q.preempt_first && f.flavor == flavor) break;  // only the flavors before it
        // The most it may charge there (a fraction holds a whole replica of a time-sliced GPU).
        const int64_t demand = MostCharge(q, f.flavor, *s) * count;
        if (!Admits(q, f.flavor, demand, HeldOf(before_, q, f.flavor, true), /*may_borrow=*/false)) continue;
        if (!HasRoom(q, f.flavor, *s, count)) continue;
        out.push_back(StrCat("room was made for ", who, " of queue ", q.name, " (whenCanPreempt: ",
                             q.preempt_first ? "Preempt" : "TryNextFlavor", ") on flavor ", flavor,
                             " though flavor ", f.flavor, " had room and quota for it"));
        break;
      }
    }
  }
  const CheckedQueue* FlavoredQueueOf(const std::string& namespace_) const {
    for (const CheckedQueue& q : world_->queues) {
      if (q.namespace_ == namespace_ && !q.flavors.empty()) return &q;
    }
    return nullptr;
  }
  // The queue's first flavor whose node labels the node has; "" for none.
  std::string FlavorOf(const CheckedQueue& q, const CheckedNode& n) const {
    for (const CheckedFlavorQuota& f : q.flavors) {
      auto it = world_->flavors.find(f.flavor);
      if (it == world_->flavors.end()) continue;
      const bool in = std::all_of(it->second.begin(), it->second.end(), [&](const auto& label) {
        auto l = n.labels.find(label.first);
        return l != n.labels.end() && l->second == label.second;
      });
      if (in) return f.flavor;
    }
    return "";
  }

  // A gang is either not running or running with at least minMember members (terminating
  // members do not count; the test ends gangs whole).
  void CheckGangs(const ClusterView& view, std::vector<std::string>& out) {
    std::map<std::string, int32_t> running;
    for (const auto& [node, pods] : view.on_node) {
      for (const PodRef& p : pods) {
        const CheckedPod* s = Spec(*p);
        if (s != nullptr && !s->gang.empty() && !Terminating(*p)) ++running[s->gang];
      }
    }
    for (const auto& [gang, n] : running) {
      const int32_t min = world_->gang_min.at(gang);
      if (n > 0 && n < min) out.push_back(StrCat("gang ", gang, " runs ", n, " of minMember ", min));
    }
  }

  // A preemptor (a pod, or a gang) does not evict again while its earlier victims still
  // terminate on the node it is nominated to.
  void CheckEvictions(const std::vector<Eviction>& evictions, std::vector<std::string>& out) {
    std::set<std::string> reported;
    for (const Eviction& e : evictions) {
      const std::string who = Preemptor(e.preemptor);
      if (reported.contains(who)) continue;
      for (const auto& [node, pods] : before_.nominated) {
        bool nominated_here = false;
        for (const PodRef& p : pods) nominated_here |= Preemptor(p->Key()) == who;
        if (!nominated_here) continue;
        auto victims = earlier_victims_.find(who);
        if (victims == earlier_victims_.end()) continue;
        for (const PodRef& p : before_.on_node[node]) {
          if (Terminating(*p) && victims->second.contains(p->Key()) && reported.insert(who).second) {
            out.push_back(StrCat(who, " evicted ", e.victim, " while its victim ", p->Key(),
                                 " still terminates on ", node));
          }
        }
      }
    }
    for (const Eviction& e : evictions) earlier_victims_[Preemptor(e.preemptor)].insert(e.victim);
  }
  // No bystanders: a preemption's victim ran on a node its preemptor (the pod, or a member of
  // its gang) is now nominated to, or belongs to a gang that lost a pod on such a node (a gang
  // is evicted whole), or gives back quota the preemptor lacks: the preemptor's queue (its
  // cohort) could not hold what it is nominated for on top of its use before the cycle, and the
  // victim is of the same queue or of a cohort queue that borrowed (used more than its nominal).
  // Moves are checked by CheckMoves.
  void CheckNoBystanders(const ClusterView& view, const std::vector<Eviction>& evictions,
                         std::vector<std::string>& out) const {
    // The most the scheduler may count as held: pods bound or terminating, and the pods other
    // preemptors left nominated before the cycle (a nominated pod's claim on its queue's quota
    // holds, as on its node); the preemptor's own nominations are what it asks for (below).
    // In a flavored tree, all of this per flavor (the pool of the nodes): quota key "" otherwise.
    std::map<std::string, std::map<std::string, int64_t>> used_before;  // key -> namespace -> milli
    auto used_before_of = [&](const std::string& key) -> const std::map<std::string, int64_t>& {
      auto it = used_before.find(key);
      if (it == used_before.end()) {
        it = used_before.emplace(key, QuotaUsed(before_, /*with_terminating=*/true,
                                                FlavoredTree() ? std::optional<std::string>(key) : std::nullopt)).first;
      }
      return it->second;
    };
    std::map<std::string, std::map<std::string, std::map<std::string, int64_t>>> nominated_before;  // preemptor -> key -> namespace -> milli
    for (const auto& [node, pods] : before_.nominated) {
      for (const PodRef& p : pods) {
        if (const CheckedPod* s = Spec(*p)) {
          nominated_before[Preemptor(p->Key())][QuotaKeyOn(node)][s->namespace_] += QuotaMilliOn(*s, NodeOf(node));
        }
      }
    }
    // What each namespace held (of the quota key) as judged for `preemptor`'s evictions.
    auto held_for = [&](const std::string& preemptor, const std::string& key) {
      std::map<std::string, int64_t> held = used_before_of(key);
      for (const auto& [who, by_key] : nominated_before) {
        if (who == preemptor || !by_key.contains(key)) continue;
        for (const auto& [namespace_, milli] : by_key.at(key)) held[namespace_] += milli;
      }
      return held;
    };
    auto used = [](const std::map<std::string, int64_t>& held, const std::string& namespace_) {
      auto it = held.find(namespace_);
      return it == held.end() ? int64_t{0} : it->second;
    };
    std::map<std::string, std::set<std::string>> nominated_to;  // preemptor -> nodes
    std::map<std::string, std::map<std::string, int64_t>> nominated_milli;  // preemptor -> key -> what its nominations charge
    for (const auto& [node, pods] : view.nominated) {
      for (const PodRef& p : pods) {
        nominated_to[Preemptor(p->Key())].insert(node);
        if (const CheckedPod* s = Spec(*p)) nominated_milli[Preemptor(p->Key())][QuotaKeyOn(node)] += QuotaMilliOn(*s, NodeOf(node));
      }
    }
    auto quota_bound = [&](const CheckedQueue& q, int64_t need, const std::map<std::string, int64_t>& held,
                           const std::string& key) {
      if (!world_->cohorts.empty()) return TreeRejects(q, need, held, key);
      if (q.cohort.empty()) return used(held, q.namespace_) + need > q.nominal_gpus * 1000;
      int64_t cohort_used = 0, cohort_nominal = 0;
      for (const CheckedQueue& c : world_->queues) {
        if (c.cohort != q.cohort) continue;
        cohort_used += used(held, c.namespace_);
        cohort_nominal += c.nominal_gpus * 1000;
      }
      return cohort_used + need > cohort_nominal;
    };
    auto reclaimed = [&](const Eviction& e) {
      const CheckedPod* victim = SpecOf(e.victim);
      const CheckedPod* preemptor = SpecOf(e.preemptor);
      if (victim == nullptr || preemptor == nullptr) return false;
      const CheckedQueue* vq = QueueOf(victim->namespace_);
      const CheckedQueue* pq = QueueOf(preemptor->namespace_);
      if (vq == nullptr || pq == nullptr) return false;
      const std::string who = Preemptor(e.preemptor);
      const std::string key = QuotaKeyOn(e.node);
      const std::map<std::string, int64_t> held = held_for(who, key);
      if (!quota_bound(*pq, nominated_milli[who][key], held, key)) return false;
      if (vq == pq) return true;
      if (!world_->cohorts.empty()) return TreeLent(*vq, *pq, held, key);
      return !vq->cohort.empty() && vq->cohort == pq->cohort && used(held, vq->namespace_) > vq->nominal_gpus * 1000;
    };
    auto frees_its_room = [&](const Eviction& e) {
      auto it = nominated_to.find(Preemptor(e.preemptor));
      return it != nominated_to.end() && it->second.contains(e.node);
    };
    auto gang_of = [&](const std::string& key) {
      const CheckedPod* s = SpecOf(key);
      return s == nullptr ? std::string() : s->gang;
    };
    std::set<std::string> gangs_hit;
    for (const Eviction& e : evictions) {
      if (!e.move && frees_its_room(e) && !gang_of(e.victim).empty()) gangs_hit.insert(gang_of(e.victim));
    }
    for (const Eviction& e : evictions) {
      if (e.move || frees_its_room(e) || gangs_hit.contains(gang_of(e.victim)) || reclaimed(e)) continue;
      out.push_back(StrCat(Preemptor(e.preemptor), " evicted ", e.victim, " on ", e.node,
                           ", a node none of it is nominated to (a bystander)"));
    }
  }
  // Stable preemption: a preemptor may evict again in a later cycle when its room was taken
  // meanwhile, which under the nomination rules only a more important pod (placed, or nominated:
  // its preemption clears less important nominations) can do, or when the room it was nominated
  // for no longer suits it for a reason kube-scheduler does not protect either (its own spread
  // constraint, devices that a smaller pod fragmented). A third round with no more important pod
  // since the first is a loop: evictions repeat for one placement.
  void CheckRepeatedPreemption(const ClusterView& view, const std::map<std::string, std::string>& placed_now,
                               const std::vector<Eviction>& evictions, std::vector<std::string>& out) {
    auto note = [&](const std::string& key) {
      const CheckedPod* s = SpecOf(key);
      if (s == nullptr) return;
      for (auto& [who, r] : rounds_) {
        if (s->priority > PriorityOfPreemptor(who)) r = 0;  // its room may have been taken
      }
    };
    std::set<std::string> this_round;
    for (const Eviction& e : evictions) this_round.insert(Preemptor(e.preemptor));
    for (const std::string& who : this_round) {
      if (++rounds_[who] >= 3) {
        out.push_back(StrCat(who, " (priority ", PriorityOfPreemptor(who), ") preempts for the ",
                             rounds_[who], "th time though no more important pod was placed or "
                             "nominated since its first round: a preemption loop"));
      }
    }
    for (const auto& [key, node] : placed_now) note(key);
    for (const auto& [node, pods] : view.nominated) {
      for (const PodRef& p : pods) {
        if (!nominated_before_.contains(p->Key())) note(p->Key());
      }
    }
    nominated_before_.clear();
    for (const auto& [node, pods] : view.nominated) {
      for (const PodRef& p : pods) nominated_before_.insert(p->Key());
    }
  }
  // No preemption loop between queues (issue 40; kueue#3779): once a pod of queue V was evicted
  // for a preemptor of queue X (reclaim or fair sharing), no pod of X is evicted for a preemptor
  // of V that does not outrank it (so not by priority: for quota) while X holds no more than it
  // did once that preemptor was placed and V no less than it kept. Reclaim leaves X within its
  // nominal quota, so V cannot reclaim from it; fair sharing leaves X's side at a share no higher than
  // V's, so V's side cannot take it back by the same rule. Per flavor with flavored queues (the
  // pool of the nodes: each flavor's quota is its own). What X held after: its pods running and nominated; then: running,
  // terminating and nominated (the most the scheduler may count); V the other way round. Fair
  // sharing compares dominant shares over every flavor of the tree, so X that holds more on
  // another flavor since (or V less) has a larger share (a smaller one) than when it took: a take
  // back is no loop then (seed 9028 of 8,000 + 4,000: team-b took spot from team-a, then
  // borrowed more on-demand, and team-a took spot back).
  void CheckNoQuotaLoop(const ClusterView& view, const std::vector<Eviction>& evictions, std::vector<std::string>& out) {
    auto queue_of = [&](const std::string& key) -> const CheckedQueue* {
      const CheckedPod* s = SpecOf(key);
      const CheckedQueue* q = s == nullptr ? nullptr : QueueOf(s->namespace_);
      return q != nullptr && !q->cohort.empty() ? q : nullptr;
    };
    const bool flavored = !world_->flavors.empty();
    auto key_on = [&](const std::string& node) { return flavored ? PoolOf(NodeOf(node)) : std::string(); };
    auto holds = [&](const ClusterView& v, const std::string& namespace_, const std::string& key, bool terminating,
                     bool nominated) {
      const std::optional<std::string> pool = flavored ? std::optional<std::string>(key) : std::nullopt;
      const std::map<std::string, int64_t> used = QuotaUsed(v, terminating, pool);
      int64_t milli = used.contains(namespace_) ? used.at(namespace_) : 0;
      if (!nominated) return milli;
      for (const auto& [node, pods] : v.nominated) {
        if (key_on(node) != key) continue;
        for (const PodRef& p : pods) {
          const CheckedPod* s = Spec(*p);
          if (s != nullptr && s->namespace_ == namespace_) milli += QuotaMilliOn(*s, NodeOf(node));
        }
      }
      return milli;
    };
    std::vector<std::string> pools = {""};
    if (flavored) {
      for (const auto& [flavor, labels] : world_->flavors) pools.push_back(flavor);
    }
    // What the queue holds on each pool but `key`.
    auto elsewhere = [&](const ClusterView& v, const std::string& namespace_, const std::string& key, bool terminating,
                         bool nominated) {
      std::map<std::string, int64_t> out;
      for (const std::string& pool : pools) {
        if (pool != key) out[pool] = holds(v, namespace_, pool, terminating, nominated);
      }
      return out;
    };
    auto none_above = [](const std::map<std::string, int64_t>& now, const std::map<std::string, int64_t>& then) {
      return std::all_of(now.begin(), now.end(), [&](const auto& p) { return p.second <= then.at(p.first); });
    };
    for (const Eviction& e : evictions) {
      const CheckedQueue* x = queue_of(e.victim);
      const CheckedQueue* v = queue_of(e.preemptor);
      if (e.move || x == nullptr || v == nullptr || x == v) continue;
      if (SpecOf(e.preemptor)->priority > SpecOf(e.victim)->priority) continue;  // by priority
      const std::string key = key_on(e.node);
      auto it = loop_guards_.find({v->name, x->name, key});
      if (it == loop_guards_.end()) continue;
      const int64_t x_now = holds(before_, x->namespace_, key, true, true);
      const int64_t v_now = holds(before_, v->namespace_, key, false, false);
      const bool unchanged_elsewhere =
          none_above(elsewhere(before_, x->namespace_, key, true, true), it->second.taker_elsewhere) &&
          none_above(it->second.giver_elsewhere, elsewhere(before_, v->namespace_, key, false, false));
      if (x_now <= it->second.taker_after && v_now >= it->second.giver_after && unchanged_elsewhere) {
        out.push_back(StrCat(Preemptor(e.preemptor), " of queue ", v->name, " evicted ", e.victim, " of queue ", x->name,
                             " (not by priority) on ", e.node, ", though ", it->second.first, " took from ", v->name,
                             " and ", x->name, " holds ", x_now, " milli-GPUs", key.empty() ? "" : StrCat(" of flavor ", key),
                             " (", it->second.taker_after, " then), ", v->name, " ", v_now, " (", it->second.giver_after,
                             " then): a preemption loop"));
      }
    }
    for (const Eviction& e : evictions) {
      const CheckedQueue* v = queue_of(e.victim);
      const CheckedQueue* x = queue_of(e.preemptor);
      if (e.move || x == nullptr || v == nullptr || x == v) continue;
      // A take by priority is no take for quota (seeds 3444 and 4169 of 3,000 + 1,500: a CPU pod
      // of higher priority took a node's CPU; the victim's queue then reclaimed GPU quota lent to
      // the taker's, by the quota rule, which is no loop).
      if (SpecOf(e.preemptor)->priority > SpecOf(e.victim)->priority) continue;
      const std::string key = key_on(e.node);
      loop_guards_[{v->name, x->name, key}] = {.first = StrCat(Preemptor(e.preemptor), " of queue ", x->name, " evicting ", e.victim),
                                              .taker_after = holds(view, x->namespace_, key, false, true),
                                              .giver_after = holds(view, v->namespace_, key, false, true),
                                              .taker_elsewhere = elsewhere(view, x->namespace_, key, false, true),
                                              .giver_elsewhere = elsewhere(view, v->namespace_, key, false, true)};
    }
  }
  int32_t PriorityOfPreemptor(const std::string& who) const {
    for (const auto& [key, spec] : world_->pods) {
      if (key == who || StrCat("gang ", spec.gang) == who) return spec.priority;
    }
    return 0;
  }
  std::string Preemptor(const std::string& key) const {
    auto it = world_->pods.find(key);
    return it != world_->pods.end() && !it->second.gang.empty() ? StrCat("gang ", it->second.gang) : key;
  }

  const CheckedNode& NodeOf(const std::string& name) const {
    return *std::find_if(world_->nodes.begin(), world_->nodes.end(),
                         [&](const CheckedNode& n) { return n.name == name; });
  }

  // The room a node has for pods the checker places in its head: CPU, GPU room, and each
  // device's use (milli on an exclusive node, replicas on a time-sliced one).
  struct Room {
    int64_t cpu = 0;
    std::vector<int64_t> device_used;
  };
  // With `terminating_hold`, pods being deleted still hold their room (as a scheduler's cache
  // sees them until they are gone).
  Room RoomOf(const CheckedNode& n, const std::vector<PodRef>& pods, bool terminating_hold = false) const {
    Room r{.cpu = n.milli_cpu, .device_used = std::vector<int64_t>(static_cast<size_t>(n.gpus), 0)};
    for (const PodRef& p : pods) {
      if (terminating_hold || !Terminating(*p)) Hold(n, r, *p);
    }
    return r;
  }
  // The room `p` holds, taken from `r`.
  void Hold(const CheckedNode& n, Room& r, const Pod& p) const {
    const CheckedPod* s = Spec(p);
    if (s == nullptr) return;
    r.cpu -= s->milli_cpu;
    if (n.dra) {  // the devices its claims hold (CheckDra read them from the claims)
      if (auto held = dra_held_.find(p.Key()); held != dra_held_.end()) {
        for (const auto& [gpu, milli] : held->second) {
          if (gpu >= 0 && gpu < n.gpus) r.device_used[static_cast<size_t>(gpu)] += milli;
        }
      }
      return;
    }
    if (!p.gpu_devices) return;
    for (int32_t d : *p.gpu_devices) {
      if (d >= 0 && d < n.gpus) {
        r.device_used[static_cast<size_t>(d)] += n.replicas > 1 ? 1 : (s->gpu_milli > 0 ? s->gpu_milli : 1000);
      }
    }
  }
  // Takes the pod's room from `r` if it is there: whole GPUs on devices nobody uses, a fraction
  // within one device, replicas on free slots (a device may give a pod more than one).
  // On a DRA node, a device per GPU asked for (one for a fraction), each a free GPU, or half of
  // one where the GPUs are partitionable; a claim of its own only there.
  static bool Take(const CheckedNode& n, Room& r, const CheckedPod& s) {
    if (s.milli_cpu > r.cpu) return false;
    if (!s.claim.empty() && !n.dra) return false;
    if (n.dra) {
      Room after = r;
      after.cpu -= s.milli_cpu;
      int64_t want = s.gpus > 0 ? DraDevices(s) : 0;
      const int64_t unit = n.partitionable ? 500 : 1000;
      for (int64_t& used : after.device_used) {
        for (; want > 0 && used + unit <= 1000; --want) used += unit;
      }
      if (want > 0) return false;
      r = std::move(after);
      return true;
    }
    if (s.gpus > 0 && s.sharing_never && n.replicas > 1) return false;
    Room after = r;
    after.cpu -= s.milli_cpu;
    int64_t want = s.gpus;
    if (n.replicas == 1 && s.gpu_milli > 0) {
      auto d = std::find_if(after.device_used.begin(), after.device_used.end(),
                            [&](int64_t used) { return used + s.gpu_milli <= 1000; });
      if (d == after.device_used.end()) return false;
      *d += s.gpu_milli;
      want = 0;
    }
    if (n.replicas > 1 && s.gpu_milli > 0) want = 1;
    if (n.replicas > 1) {
      // Slots, least-loaded device first, several on one device if need be (docs/gpu.md).
      for (; want > 0; --want) {
        auto d = std::min_element(after.device_used.begin(), after.device_used.end());
        if (d == after.device_used.end() || *d >= n.replicas) return false;
        ++*d;
      }
    }
    for (int64_t& used : after.device_used) {
      if (want == 0) break;
      if (used == 0) {
        used += 1000;
        --want;
      }
    }
    if (want > 0) return false;
    r = std::move(after);
    return true;
  }
  // Whether `pods` (moved) each fit on some node of `rooms` at once: a search over the nodes.
  bool PlaceAll(std::map<std::string, Room>& rooms, const std::vector<const CheckedPod*>& pods, size_t i) const {
    if (i == pods.size()) return true;
    for (auto& [name, room] : rooms) {
      Room saved = room;
      if (Take(NodeOf(name), room, *pods[i]) && PlaceAll(rooms, pods, i + 1)) return true;
      room = std::move(saved);
    }
    return false;
  }

 public:
  // After how many cycles a flavored queue held more than its nominal quota of a flavor.
  int cycles_borrowing() const { return cycles_borrowing_; }
  // Cycles after which a cohort of a tree used more than its subtree quota (borrowed from its
  // parent).
  int cycles_cohort_borrowing() const { return cycles_cohort_borrowing_; }

  // After a cycle, the reservations: none is held by a holder that was attempted in the cycle
  // (`attempted`: pod keys) and that its quota rejects for certain: room cannot help it, and the
  // nodes it holds are taken from other teams for nothing.
  std::vector<std::string> CheckReservations(const ClusterView& view, const std::set<std::string>& attempted) const {
    std::vector<std::string> out;
    for (const auto& [holder, nodes] : view.reserved) {
      const CheckedPod* s = SpecOf(holder);
      std::string member = holder;
      if (s == nullptr) {  // a gang: "podgroup:NAMESPACE/NAME"
        for (const auto& [key, spec] : world_->pods) {
          if (!spec.gang.empty() && holder == StrCat("podgroup:", spec.namespace_, "/", spec.gang) &&
              (s == nullptr || attempted.contains(key))) {
            s = &spec, member = key;
          }
        }
      }
      if (s == nullptr || !attempted.contains(member)) continue;
      if (QuotaRejects(view, *s, StillToPlace(view, *s))) {
        out.push_back(StrCat("reservation of ", absl::StrJoin(nodes, ", "), " is held for ", holder,
                             ", which its queue's quota rejects"));
      }
    }
    return out;
  }

  // After a cycle, its asks for capacity (each: the pending members, or the pod): none for a
  // workload its quota rejects for certain, as the cluster stood when the cycle began.
  std::vector<std::string> CheckProvisioningAsks(const std::vector<std::vector<std::string>>& asks) const {
    std::vector<std::string> out;
    for (const std::vector<std::string>& members : asks) {
      const CheckedPod* s = members.empty() ? nullptr : SpecOf(members.front());
      if (s == nullptr) continue;
      const int32_t count = std::min(StillToPlace(before_, *s), static_cast<int32_t>(members.size()));
      if (QuotaRejects(before_, *s, count)) {
        out.push_back(StrCat("capacity was asked for ", Preemptor(members.front()), " (", count,
                             " x ", FullCharge(*s), " milli-GPU), which its queue's quota rejects"));
      }
    }
    return out;
  }

  // Move plans (consolidation), after a cycle, with every eviction asked for (`asked`: accepted
  // and refused). The test keeps the scheduler's budgets as they are before every cycle, so a
  // plan one of whose evictions a budget refused after another went through was half carried
  // out, which the plan could have known. And no pod is moved that the plan does not need: on a
  // node that had no terminating pod, keeping any one of the moved pods leaves the waiting pod
  // (a single pod) without room.
  std::vector<std::string> CheckMovePlans(const ClusterView& view, const std::vector<Eviction>& asked) const {
    std::vector<std::string> out;
    std::map<std::string, std::vector<const Eviction*>> accepted, refused;  // preemptor -> moves
    for (const Eviction& e : asked) {
      if (e.move) (e.refused ? refused : accepted)[e.preemptor].push_back(&e);
    }
    for (const auto& [who, moved] : accepted) {
      if (auto r = refused.find(who); r != refused.end()) {
        out.push_back(StrCat("the move plan for ", who, " was half carried out: ", moved.size(),
                             " pod(s) moved, then a budget refused ", r->second.front()->victim));
      }
      const CheckedPod* waiting = SpecOf(who);
      if (waiting == nullptr || !waiting->gang.empty() || waiting->spread) continue;
      const std::string& node = moved.front()->node;
      const CheckedNode& n = NodeOf(node);
      auto before = before_.on_node.find(node);
      if (before == before_.on_node.end() || before_.nominated.contains(node) || ReservedBefore(node) ||
          std::any_of(before->second.begin(), before->second.end(), [](const PodRef& p) { return Terminating(*p); })) {
        continue;
      }
      for (const Eviction* kept : moved) {
        const CheckedPod* k = SpecOf(kept->victim);
        if (k == nullptr || AntiAffine(*waiting, *k)) continue;  // it had to go for the rule
        Room room = RoomOf(n, view.on_node.at(node));
        for (const PodRef& p : view.on_node.at(node)) {
          if (p->Key() == kept->victim) Hold(n, room, *p);
        }
        if (Take(n, room, *waiting)) {
          out.push_back(StrCat(kept->victim, " was moved off ", node, " for ", who,
                               ", which fits there without that move"));
        }
      }
    }
    return out;
  }

  // Moves (consolidation), after a cycle: a pod is moved only if it opted in, is in no gang,
  // ran at least the minimum run time, and was not moved more than the limit within the
  // window; and only for a plan that works out by the checker's own arithmetic: with the moved
  // pods gone, the waiting pod fits on the node they left, and every moved pod fits on another
  // node at the same time.
  std::vector<std::string> CheckMoves(const ClusterView& view, const std::vector<Eviction>& evictions,
                                      absl::Time now, const MoveRules& rules) {
    std::vector<std::string> out;
    std::map<std::string, std::vector<const Eviction*>> by_preemptor;
    for (const Eviction& e : evictions) {
      if (e.move) by_preemptor[e.preemptor].push_back(&e);
    }
    for (const auto& [who, moved] : by_preemptor) {
      const CheckedPod* waiting = SpecOf(who);
      if (waiting == nullptr) {
        out.push_back(StrCat("pods were moved for ", who, ", which the test never made"));
        continue;
      }
      // A gang counts the GPU milli of its members still pending (not on a node); a fraction
      // counts its milli.
      auto milli = [](const CheckedPod& p) { return p.gpu_milli > 0 ? p.gpu_milli : p.gpus * 1000; };
      int64_t asked = milli(*waiting);
      if (!waiting->gang.empty()) {
        std::set<std::string> placed;
        for (const auto& [node, pods] : view.on_node) {
          for (const PodRef& p : pods) placed.insert(p->Key());
        }
        asked = 0;
        for (const auto& [key, spec] : world_->pods) {
          if (spec.gang == waiting->gang && !placed.contains(key)) asked += milli(spec);
        }
      }
      if (asked < rules.min_pod_gpus * 1000) {
        out.push_back(StrCat("pods were moved for ", who, ", which asks for fewer than ", rules.min_pod_gpus, " GPUs"));
      }
      const std::string node = moved.front()->node;
      std::vector<const CheckedPod*> specs;
      for (const Eviction* e : moved) {
        const CheckedPod* s = SpecOf(e->victim);
        if (s == nullptr) continue;
        if (e->node != node) out.push_back(StrCat(e->victim, " was moved from ", e->node, " for ", who, " but the plan's node is ", node));
        if (!s->movable) out.push_back(StrCat(e->victim, " was moved for ", who, " but did not opt in"));
        if (!s->gang.empty()) out.push_back(StrCat(e->victim, " of gang ", s->gang, " was moved"));
        for (const PodRef& p : view.on_node.at(e->node)) {
          if (p->Key() != e->victim) continue;
          const absl::Time start = p->start_time.value_or(p->meta.creation_timestamp);
          if (now - start < rules.min_run) {
            out.push_back(StrCat(e->victim, " was moved after ", absl::FormatDuration(now - start),
                                 " of running, below the minimum ", absl::FormatDuration(rules.min_run)));
          }
        }
        std::vector<absl::Time>& times = moves_[s->workload];
        times.push_back(now);
        const auto recent = std::count_if(times.begin(), times.end(), [&](absl::Time t) { return now - t < rules.window; });
        if (recent > rules.max_moves) {
          out.push_back(StrCat("workload ", s->workload, " was moved ", recent, " times within ",
                               absl::FormatDuration(rules.window), " (limit ", rules.max_moves, ")"));
        }
        specs.push_back(s);
      }
      std::map<std::string, Room> rooms;
      for (const CheckedNode& n : world_->nodes) {
        auto it = view.on_node.find(n.name);
        if (it != view.on_node.end()) rooms[n.name] = RoomOf(n, it->second);
      }
      if (!rooms.contains(node) || !Take(NodeOf(node), rooms[node], *waiting)) {
        std::vector<std::string> names;
        for (const Eviction* e : moved) names.push_back(e->victim);
        out.push_back(StrCat("pods were moved off ", node, " for ", who, ", which does not fit there without them (",
                             absl::StrJoin(names, ", "), ")"));
        continue;
      }
      rooms.erase(node);
      std::stable_sort(specs.begin(), specs.end(), [](const CheckedPod* a, const CheckedPod* b) { return a->gpus > b->gpus; });
      if (!PlaceAll(rooms, specs, 0)) {
        out.push_back(StrCat("the ", specs.size(), " pod(s) moved off ", node, " for ", who,
                             " do not all fit on the other nodes"));
      }
    }
    return out;
  }

 private:
  const CheckedWorld* world_;
  // What each pod's DRA claims hold on its node, as of the last view: (GPU index, milli).
  std::map<std::string, std::vector<std::pair<int32_t, int64_t>>> dra_held_;
  std::map<std::string, std::vector<absl::Time>> moves_;  // workload -> when it was moved
  ClusterView before_;
  std::map<std::string, std::string> placed_before_;
  std::map<std::string, std::set<std::string>> earlier_victims_;
  std::map<std::string, int> rounds_;  // preemptor -> eviction rounds since a more important pod came
  std::set<std::string> nominated_before_;
  // (giver, taker, quota key) -> the last eviction of a giver's pod for a taker's preemptor.
  struct LoopGuard {
    std::string first;  // who evicted whom
    int64_t taker_after = 0, giver_after = 0;  // what each held after that cycle
    std::map<std::string, int64_t> taker_elsewhere, giver_elsewhere;  // and on the other pools
  };
  std::map<std::tuple<std::string, std::string, std::string>, LoopGuard> loop_guards_;
  int cycles_borrowing_ = 0;
  int cycles_cohort_borrowing_ = 0;
};

}  // namespace tessel::testing
