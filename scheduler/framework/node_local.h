// What a plugin promises so that the framework may reuse its Filter and Score results between
// cycles (decision_cache.h): for a given pod, its verdict and raw score on a node depend only on
// that pod and that node's NodeInfo (whose generation moves with every change to the node), plus
// a version the plugin reports for anything cluster-wide it reads (e.g. FGD's learned workload).
//
//   class TaintToleration final : public FilterPlugin, public ScorePlugin, public NodeLocalPlugin {
//     bool AppendFilterKey(const CycleState&, const Pod& pod, std::string& key) const override {
//       AppendTolerations(pod.tolerations, key);
//       return true;
//     }
//     ...
//   };
//
// A plugin that does not implement it is never cached: a cycle with it active evaluates every
// node (the reference behaviour). The differential test (tests/unit/decision_cache_test.cc)
// compares both paths decision by decision for every plugin of the default profile and every
// GPU policy.
#pragma once

#include <cstdint>
#include <string>

#include "scheduler/api/objects.h"
#include "scheduler/framework/cycle_state.h"
#include "scheduler/gpu/gpu_devices.h"

namespace tessel {

class NodeLocalPlugin {
 public:
  virtual ~NodeLocalPlugin() = default;

  // Called after PreFilter, when the plugin's Filter is not skipped. Appends to `key` everything
  // of the pod and of the cycle state that Filter reads, so that two pods with equal keys get
  // the same verdict on every node; false when Filter reads more than the pod and the node
  // (other pods, other nodes).
  virtual bool AppendFilterKey(const CycleState& /*state*/, const Pod& /*pod*/,
                               std::string& /*key*/) const {
    return false;
  }

  enum class ScoreUse {
    kUnused,     // PreScore will answer Skip for this pod: Score does not run
    kNodeLocal,  // Score reads the pod (what was appended to the key) and the node only
    kOther,      // Score (or PreScore) reads other nodes or pods: not cached
  };
  // Called after PreFilter, before PreScore. With kUnused or kNodeLocal, PreScore reads nothing
  // of its `feasible` argument but whether it is empty, and with kNodeLocal NormalizeScore maps
  // each raw score by a function of that score and of the set of raw scores (not of node names,
  // nor of how many nodes share a score), as min-max and max scaling do.
  virtual ScoreUse AppendScoreKey(const CycleState& /*state*/, const Pod& /*pod*/,
                                  std::string& /*key*/) const {
    return ScoreUse::kOther;
  }

  // Moves whenever something that Filter or Score read, other than the pod and the node,
  // changes. Cached results taken under another version are recomputed.
  virtual int64_t ResultVersion() const { return 0; }
};

// Canonical encodings of the pod fields plugins read, for their keys.
void AppendKeyInt(int64_t v, std::string& key);
void AppendKeyString(std::string_view s, std::string& key);
void AppendResources(const Resources& r, std::string& key);
void AppendTolerations(const std::vector<Toleration>& tolerations, std::string& key);
void AppendNodeSelection(const Pod& pod, std::string& key);  // nodeSelector and node affinity
void AppendGpuRequest(const gpu::GpuRequest& r, std::string& key);  // without its error text

}  // namespace tessel
