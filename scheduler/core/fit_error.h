// kube-scheduler's message for a pod that fits nowhere:
//   "0/5 nodes are available: 1 node(s) were unschedulable, 2 Insufficient nvidia.com/gpu."
// Reasons are counted over nodes, formatted "<count> <reason>", sorted as strings, joined.
#pragma once

#include <string>

#include "scheduler/framework/interface.h"

namespace tessel {

std::string FormatFitError(size_t num_nodes, const NodeStatusMap& rejected);
// When a PreFilter rejected the pod before any node was looked at.
std::string FormatPreFilterError(size_t num_nodes, const Status& status);

}  // namespace tessel
