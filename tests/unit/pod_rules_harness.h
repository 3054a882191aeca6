// Helpers for the pod-to-pod rule tests (InterPodAffinity, PodTopologySpread, NodePorts) and the
// volume plugin tests: pods with labels, owners or claims, and one call that runs a plugin's
// PreFilter and Filter over every node of a FakeHandle's snapshot, the way the framework does.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "scheduler/framework/interface.h"
#include "scheduler/testing/builders.h"
#include "tests/unit/fake_handle.h"

namespace tessel::testing {

inline Pod LabeledPod(std::string name, StringMap labels, std::string node = "",
                      std::string ns = "default") {
  PodBuilder b(std::move(name), std::move(ns));
  b.Requests("cpu:100m");
  if (!node.empty()) b.Node(std::move(node));
  b.mutable_pod().meta.labels = std::move(labels);
  return b.Build();
}

// A pod (as LabeledPod, no labels) whose volumes use the named claims, in order.
inline Pod WithClaims(std::string name, const std::vector<std::string>& claims, std::string node = "") {
  Pod p = LabeledPod(std::move(name), {}, std::move(node));
  for (const std::string& c : claims) p.volumes.push_back({.name = "v-" + c, .claim_name = c});
  return p;
}

inline LabelSelector MatchLabels(StringMap labels) { return LabelSelector{.match_labels = std::move(labels)}; }

// "ok", "skip", or "<Code>: <reason>" per node; "prefilter: ..." when PreFilter rejected.
struct FilterRun {
  std::map<std::string, std::string> by_node;
  CycleState state;
};

inline std::string Describe(const Status& st) {
  if (st.ok()) return "ok";
  std::string out(CodeName(st.code()));
  for (const std::string& r : st.reasons()) out += ": " + r;
  return out;
}

template <typename P>
FilterRun RunFilter(P& plugin, const FakeHandle& handle, const Pod& pod) {
  FilterRun run;
  Status pre = plugin.PreFilter(run.state, pod);
  for (const NodeInfo* n : handle.snapshot().nodes()) {
    if (pre.IsSkip()) {
      run.by_node[n->name()] = "skip";
    } else if (!pre.ok()) {
      run.by_node[n->name()] = "prefilter: " + Describe(pre);
    } else {
      run.by_node[n->name()] = Describe(plugin.Filter(run.state, pod, *n));
    }
  }
  return run;
}

// PreScore + Score + NormalizeScore over every node of the snapshot (all taken as feasible).
// Empty when PreScore skipped.
template <typename P>
std::map<std::string, int64_t> RunScore(P& plugin, const FakeHandle& handle, const Pod& pod) {
  CycleState state;
  std::vector<const NodeInfo*> feasible(handle.snapshot().nodes().begin(), handle.snapshot().nodes().end());
  Status pre = plugin.PreScore(state, pod, feasible);
  std::map<std::string, int64_t> out;
  if (pre.IsSkip()) return out;
  NodeScoreList scores;
  for (const NodeInfo* n : feasible) {
    ScoreResult r = plugin.Score(state, pod, *n);
    if (!r.status.ok()) throw std::runtime_error(r.status.Message());
    scores.push_back({n->name(), r.score});
  }
  Status norm = plugin.NormalizeScore(state, pod, scores);
  if (!norm.ok()) throw std::runtime_error(norm.Message());
  for (const NodeScore& s : scores) out[s.name] = s.score;
  return out;
}

}  // namespace tessel::testing
