// Reason histogram formatting.
#include "scheduler/framework/fit_error.h"

#include <algorithm>
#include <map>
#include <vector>

#include "scheduler/util/strings.h"

namespace tessel {

FitError SummarizeFitError(size_t num_nodes, const std::vector<NodeRejections>& histogram) {
  FitError out;
  std::map<std::string_view, int64_t> by_reason;
  for (const NodeRejections& r : histogram) {
    if (r.nodes <= 0) continue;
    if (r.status->code() == Code::kError && out.error == nullptr) out.error = r.status;
    for (const std::string& reason : r.status->reasons()) by_reason[reason] += r.nodes;
    out.rejecting_plugins.push_back(r.status->plugin());
  }
  std::sort(out.rejecting_plugins.begin(), out.rejecting_plugins.end());
  out.rejecting_plugins.erase(std::unique(out.rejecting_plugins.begin(), out.rejecting_plugins.end()),
                              out.rejecting_plugins.end());
  std::vector<std::string> parts;
  for (const auto& [reason, count] : by_reason) parts.push_back(StrCat(count, " ", reason));
  std::sort(parts.begin(), parts.end());
  out.message = StrCat("0/", num_nodes, " nodes are available");
  out.message = parts.empty() ? StrCat(out.message, ".") : StrCat(out.message, ": ", StrJoin(parts, ", "), ".");
  return out;
}

FitError SummarizeFitError(size_t num_nodes, const NodeStatusMap& rejected) {
  std::vector<NodeRejections> histogram;
  histogram.reserve(rejected.size());
  for (const auto& [node, status] : rejected) histogram.push_back({&status, 1});
  return SummarizeFitError(num_nodes, histogram);
}

std::string FormatFitError(size_t num_nodes, const NodeStatusMap& rejected) {
  return SummarizeFitError(num_nodes, rejected).message;
}

std::string FormatPreFilterError(size_t num_nodes, const Status& status) {
  std::string reasons = StrJoin(status.reasons(), ", ");
  if (reasons.empty()) reasons = std::string(CodeName(status.code()));
  return StrCat("0/", num_nodes, " nodes are available: ", reasons, ".");
}

}  // namespace tessel
