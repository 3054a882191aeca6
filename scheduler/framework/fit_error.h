// kube-scheduler's message for a pod that fits nowhere:
//   "0/5 nodes are available: 1 node(s) were unschedulable, 2 Insufficient nvidia.com/gpu."
// Reasons are counted over nodes, formatted "<count> <reason>", sorted as strings, joined.
//
// The summary is built from the distinct rejections and their node counts (the decision cache
// keeps them per pod shape, in step with the nodes that change), so a pod that fits nowhere is
// described in time proportional to the distinct rejections, not to the nodes:
//   FitError e = SummarizeFitError(snapshot.size(), histogram);
#pragma once

#include <string>
#include <vector>

#include "scheduler/framework/interface.h"

namespace tessel {

struct FitError {
  std::string message;
  // The plugins that rejected some node, each once, sorted (which events may help: EventsFor).
  std::vector<std::string> rejecting_plugins;
  // A node's Error status, if one failed rather than rejected (valid while the input is).
  const Status* error = nullptr;
};

FitError SummarizeFitError(size_t num_nodes, const std::vector<NodeRejections>& histogram);
// The same from every node's rejection.
FitError SummarizeFitError(size_t num_nodes, const NodeStatusMap& rejected);

std::string FormatFitError(size_t num_nodes, const NodeStatusMap& rejected);
// When a PreFilter rejected the pod before any node was looked at.
std::string FormatPreFilterError(size_t num_nodes, const Status& status);

}  // namespace tessel
