// Cohorts as a tree: the tessel.io/v1alpha1 Cohort object and the quota tree it builds with the
// Queues (Kueue's hierarchical Cohorts).
//
// A Cohort (cluster-scoped) names its parent (spec.parent) and may hold a quota of its own
// (QuotaSpec: nominal, borrowing and lending limits, flat or per flavor) and a weight. Queues
// hang at the leaves (Queue.spec.cohort). A cohort that a Queue or a Cohort names but no object
// defines is a root with no quota of its own: flat cohorts keep working as before.
//
// The quota flows as Kueue defines it, per resource (flavored keys included):
//   guaranteed(n)  = max(0, subtree(n) - lendingLimit(n)) if lendingLimit is set, else 0
//   subtree(q)     = nominal(q)                                          (a Queue)
//   subtree(c)     = nominal(c) + sum over children k of (subtree(k) - guaranteed(k))
//   usage(c)       = sum over children k of max(0, usage(k) - guaranteed(k))
//   available(root) = subtree(root) - usage(root)
//   available(n)   = max(0, guaranteed(n) - usage(n))
//                    + min(available(parent),
//                          subtree(n) - guaranteed(n) - max(0, usage(n) - guaranteed(n))
//                          + borrowingLimit(n))                         (the min only with a limit)
// A queue may take what its `available` says: its own guaranteed part first, then what its
// ancestors' pools hold, within every borrowing limit along the path. With one level this is
// exactly the flat cohort rule of quota_tracker.h.
//
// Bad trees fail closed: a cohort on a cycle of spec.parent, or one whose object does not decode
// and never did, gets a problem naming the object and the field, and every Queue below it holds
// its pods (they wait with that message) — nothing becomes unlimited.
//
//   absl::StatusOr<Cohort> c = DecodeCohort(json);      // errors name the object and field
//   CohortTree tree = CohortTree::Build(queues, cohorts, held_cohorts);
//   tree.QueueProblem("team-a");                        // "" or why its pods wait
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "scheduler/api/objects.h"
#include "scheduler/quota/quota_spec.h"
#include "scheduler/util/strings.h"

namespace tessel {

struct Queue;

inline constexpr std::string_view kCohortKind = "Cohort";

struct Cohort : QuotaSpec {
  ObjectMeta meta;
  std::string parent;  // spec.parent: "" for a root

  const std::string& name() const { return meta.name; }
};

// Decodes a Cohort. Errors name the field: a parent naming itself, limits on a root, every rule
// of DecodeQuotaSpec.
absl::StatusOr<Cohort> DecodeCohort(const nlohmann::json& object);

// Cohorts that do not decode and have no earlier version that did: name -> the problem.
using HeldCohortMap = std::map<std::string, std::string, std::less<>>;

class CohortTree {
 public:
  static constexpr int kNone = -1;

  struct Node {
    std::string name;
    bool queue = false;         // a leaf Queue, else a cohort
    int parent = kNone;
    std::vector<int> children;  // in name order
    std::optional<QuotaSpec> quota;  // none for a cohort no object defines
    Resources subtree;          // subtree(n) per resource
    Resources guaranteed;       // guaranteed(n) per resource
    std::string problem;        // a cohort that breaks the tree: why (naming object and field)
  };

  static CohortTree Build(const std::vector<Queue>& queues, const std::vector<Cohort>& cohorts,
                          const HeldCohortMap& held = {});

  int QueueNode(std::string_view queue) const;
  int CohortNode(std::string_view cohort) const;
  const Node& node(int index) const { return nodes_[index]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  int Root(int index) const;
  // The cohorts from the node's parent up to its root.
  std::vector<int> Ancestors(int index) const;
  // The nearest cohort above both nodes (kNone when they are in different trees), and the child
  // of `ancestor` whose subtree holds `index`.
  int CommonAncestor(int a, int b) const;
  int ChildToward(int ancestor, int index) const;
  // Why the queue's pods must wait because of the tree ("" when they need not): the problem of
  // the first broken cohort on its path.
  std::string QueueProblem(std::string_view queue) const;
  // The problem of every broken cohort, by name.
  std::map<std::string, std::string> Problems() const;
  // Every resource key some node of the node's tree lists (nominal, listed or borrowing limit):
  // the ones quota limits for the queues of that tree.
  const std::vector<std::string>& Governed(int index) const;

 private:
  std::vector<Node> nodes_;
  StringKeyedMap<int> queue_index_;  // lookups only: hashed
  StringKeyedMap<int> cohort_index_;
  std::map<int, std::vector<std::string>> governed_;  // by root
};

}  // namespace tessel
