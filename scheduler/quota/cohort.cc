// Decoding Cohorts and building the quota tree (see cohort.h).
#include "scheduler/quota/cohort.h"

#include <algorithm>
#include <functional>
#include <set>

#include "nlohmann/json.hpp"
#include "scheduler/api/decode.h"
#include "scheduler/quota/queue.h"
#include "scheduler/util/saturating.h"
#include "scheduler/util/strings.h"

namespace tessel {

using nlohmann::json;

absl::StatusOr<Cohort> DecodeCohort(const json& object) {
  FieldDecoder d(DescribeObject(object));
  Cohort c;
  c.meta = d.Meta(object);
  const json* spec = d.Object(object, "spec", "spec");
  static const json kEmpty = json::object();
  if (spec == nullptr) spec = &kEmpty;  // a bare cohort: a root with no quota of its own
  c.parent = d.String(*spec, "parent", "spec.parent");
  if (!c.parent.empty() && c.parent == c.name()) d.Fail("spec.parent", "names the cohort itself");
  DecodeQuotaSpec(d, *spec,
                  {.kind = "Cohort", .parent_field = "spec.parent", .has_parent = !c.parent.empty(),
                   .lending_within_nominal = false},
                  c);
  if (c.parent.empty() && !c.lending_limit.empty()) {
    d.Fail("spec.lendingLimit", "is only meaningful with spec.parent");
  }
  if (!d.ok()) return d.status();
  return c;
}

CohortTree CohortTree::Build(const std::vector<Queue>& queues, const std::vector<Cohort>& cohorts,
                             const HeldCohortMap& held) {
  CohortTree t;
  auto cohort_node = [&t](const std::string& name) {
    auto [it, fresh] = t.cohort_index_.emplace(name, static_cast<int>(t.nodes_.size()));
    if (fresh) t.nodes_.push_back(Node{.name = name});
    return it->second;
  };
  for (const Cohort& c : cohorts) t.nodes_[cohort_node(c.name())].quota = static_cast<const QuotaSpec&>(c);
  for (const auto& [name, problem] : held) {
    Node& n = t.nodes_[cohort_node(name)];
    if (!n.quota.has_value()) n.problem = StrCat(problem, "; the Cohort does not decode");
  }
  for (const Cohort& c : cohorts) {
    if (c.parent.empty()) continue;
    const int parent = cohort_node(c.parent);
    t.nodes_[t.cohort_index_.at(c.name())].parent = parent;
  }
  for (const Queue& q : queues) {
    const int parent = q.cohort.empty() ? kNone : cohort_node(q.cohort);
    t.queue_index_.emplace(q.name(), static_cast<int>(t.nodes_.size()));
    t.nodes_.push_back(Node{.name = q.name(), .queue = true, .parent = parent, .quota = static_cast<const QuotaSpec&>(q)});
  }
  // Cycles of spec.parent: every cohort on one gets the problem, and becomes a root so the
  // arithmetic below ends (its queues wait anyway).
  std::vector<int> state(t.nodes_.size(), 0);  // 0 unseen, 1 on the current walk, 2 done
  for (int start = 0; start < static_cast<int>(t.nodes_.size()); ++start) {
    std::vector<int> walk;
    int n = start;
    while (n != kNone && state[n] == 0) {
      state[n] = 1;
      walk.push_back(n);
      n = t.nodes_[n].parent;
    }
    if (n != kNone && state[n] == 1) {
      const std::vector<int> cycle(std::find(walk.begin(), walk.end(), n), walk.end());
      for (size_t j = 0; j < cycle.size(); ++j) {
        // Each member names the cycle from itself: "org -> dept -> org".
        std::vector<std::string> names;
        for (size_t k = 0; k <= cycle.size(); ++k) names.push_back(t.nodes_[cycle[(j + k) % cycle.size()]].name);
        Node& member = t.nodes_[cycle[j]];
        member.problem = StrCat("Cohort ", member.name, ": spec.parent: the cohorts' parents form a cycle (",
                                StrJoin(names, " -> "), ")");
      }
      const auto from = walk.end() - static_cast<std::ptrdiff_t>(cycle.size());
      for (auto it = from; it != walk.end(); ++it) t.nodes_[*it].parent = kNone;
    }
    for (int w : walk) state[w] = 2;
  }
  for (int i = 0; i < static_cast<int>(t.nodes_.size()); ++i) {
    if (t.nodes_[i].parent != kNone) t.nodes_[t.nodes_[i].parent].children.push_back(i);
  }
  for (Node& n : t.nodes_) {
    std::sort(n.children.begin(), n.children.end(),
              [&t](int a, int b) { return t.nodes_[a].name < t.nodes_[b].name; });
  }
  // subtree and guaranteed, children before parents.
  std::function<void(int)> fill = [&](int i) {
    Node& n = t.nodes_[i];
    if (n.quota.has_value()) n.subtree = n.quota->nominal;
    for (int k : n.children) {
      fill(k);
      const Node& child = t.nodes_[k];
      for (const auto& [r, amount] : child.subtree.Entries()) {
        n.subtree.Set(r, SaturatingAdd(n.subtree.Get(r), SaturatingSub(amount, child.guaranteed.Get(r))));
      }
    }
    if (n.quota.has_value()) {
      for (const auto& [r, limit] : n.quota->lending_limit) {
        n.guaranteed.Set(r, std::max<int64_t>(0, SaturatingSub(n.subtree.Get(r), limit)));
      }
    }
  };
  for (int i = 0; i < static_cast<int>(t.nodes_.size()); ++i) {
    if (t.nodes_[i].parent == kNone) fill(i);
  }
  // The resources each tree governs.
  for (int i = 0; i < static_cast<int>(t.nodes_.size()); ++i) {
    const std::optional<QuotaSpec>& q = t.nodes_[i].quota;
    if (!q.has_value()) continue;
    std::vector<std::string>& g = t.governed_[t.Root(i)];
    for (const auto& [name, amount] : q->nominal.Entries()) g.push_back(name);
    g.insert(g.end(), q->listed.begin(), q->listed.end());
    for (const auto& [name, amount] : q->borrowing_limit) g.push_back(name);
  }
  for (auto& [root, g] : t.governed_) {
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
  }
  return t;
}

int CohortTree::QueueNode(std::string_view queue) const {
  auto it = queue_index_.find(queue);
  return it == queue_index_.end() ? kNone : it->second;
}

int CohortTree::CohortNode(std::string_view cohort) const {
  auto it = cohort_index_.find(cohort);
  return it == cohort_index_.end() ? kNone : it->second;
}

int CohortTree::Root(int index) const {
  while (nodes_[index].parent != kNone) index = nodes_[index].parent;
  return index;
}

std::vector<int> CohortTree::Ancestors(int index) const {
  std::vector<int> out;
  for (int n = nodes_[index].parent; n != kNone; n = nodes_[n].parent) out.push_back(n);
  return out;
}

int CohortTree::CommonAncestor(int a, int b) const {
  const std::vector<int> above_a = Ancestors(a);
  for (int n = nodes_[b].parent; n != kNone; n = nodes_[n].parent) {
    if (std::find(above_a.begin(), above_a.end(), n) != above_a.end()) return n;
  }
  return kNone;
}

int CohortTree::ChildToward(int ancestor, int index) const {
  while (index != kNone && nodes_[index].parent != ancestor) index = nodes_[index].parent;
  return index;
}

std::string CohortTree::QueueProblem(std::string_view queue) const {
  const int q = QueueNode(queue);
  if (q == kNone) return "";
  for (int n = nodes_[q].parent; n != kNone; n = nodes_[n].parent) {
    if (!nodes_[n].problem.empty()) return nodes_[n].problem;
  }
  return "";
}

std::map<std::string, std::string> CohortTree::Problems() const {
  std::map<std::string, std::string> out;
  for (const Node& n : nodes_) {
    if (!n.queue && !n.problem.empty()) out.emplace(n.name, n.problem);
  }
  return out;
}

const std::vector<std::string>& CohortTree::Governed(int index) const {
  static const std::vector<std::string> kNone;
  auto it = governed_.find(Root(index));
  return it == governed_.end() ? kNone : it->second;
}

}  // namespace tessel
