// The tests' own reading of a tree of Cohorts and Queues (docs/quota.md, "Cohorts as a tree"),
// written apart from scheduler/quota (no CohortTree, no QuotaTracker) so that it can check
// them: a node's subtree quota is its own nominal quota plus what each child can pass up (all
// it holds beyond what its lending limit keeps back); a subtree takes from its parent its use
// beyond what it keeps back; every root holds what its subtree has, and no node borrows from
// its parent beyond its borrowing limit. Amounts are plain integers in one unit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessel::testing {

struct QuotaTreeModel {
  struct Node {
    std::string name;
    bool queue = false;
    std::string parent;  // "" for a root
    int64_t nominal = 0;
    std::optional<int64_t> borrowing_limit, lending_limit;
  };
  std::vector<Node> nodes;
  std::map<std::string, int64_t> usage;  // by queue

  const Node* Find(const std::string& name, bool queue) const {
    for (const Node& n : nodes) {
      if (n.name == name && n.queue == queue) return &n;
    }
    return nullptr;
  }
  std::vector<const Node*> Children(const Node& n) const {
    std::vector<const Node*> out;
    if (n.queue) return out;
    for (const Node& m : nodes) {
      if (m.parent == n.name) out.push_back(&m);
    }
    return out;
  }
  int64_t Subtree(const Node& n) const {
    int64_t sum = n.nominal;
    for (const Node* k : Children(n)) sum += Subtree(*k) - Kept(*k);
    return sum;
  }
  int64_t Kept(const Node& n) const { return n.lending_limit ? std::max<int64_t>(0, Subtree(n) - *n.lending_limit) : 0; }
  int64_t Use(const Node& n) const {
    int64_t u = 0;
    if (n.queue) {
      auto it = usage.find(n.name);
      u = it == usage.end() ? 0 : it->second;
    } else {
      for (const Node* k : Children(n)) u += std::max<int64_t>(0, Use(*k) - Kept(*k));
    }
    return u;
  }
  // The node whose limit breaks, or null: every limit on every path holds.
  const Node* Broken() const {
    for (const Node& n : nodes) {
      if (n.parent.empty() && Use(n) > Subtree(n)) return &n;
      if (!n.parent.empty() && n.borrowing_limit && Use(n) > Subtree(n) + *n.borrowing_limit) return &n;
    }
    return nullptr;
  }
  bool Holds() const { return Broken() == nullptr; }
  // The queue, then each cohort above it up to its root.
  std::vector<const Node*> Path(const std::string& queue) const {
    std::vector<const Node*> out;
    for (const Node* n = Find(queue, true); n != nullptr; n = n->parent.empty() ? nullptr : Find(n->parent, false)) {
      out.push_back(n);
    }
    return out;
  }
};

}  // namespace tessel::testing
