// Reason histogram formatting.
#include "scheduler/core/fit_error.h"

#include <algorithm>
#include <map>
#include <vector>

#include "scheduler/util/strings.h"
#include "scheduler/util/strings.h"

namespace tessel {

std::string FormatFitError(size_t num_nodes, const NodeStatusMap& rejected) {
  std::map<std::string, int> histogram;
  for (const auto& [node, status] : rejected) {
    for (const std::string& reason : status.reasons()) ++histogram[reason];
  }
  std::vector<std::string> parts;
  for (const auto& [reason, count] : histogram) parts.push_back(StrCat(count, " ", reason));
  std::sort(parts.begin(), parts.end());
  std::string msg = StrCat("0/", num_nodes, " nodes are available");
  if (parts.empty()) return StrCat(msg, ".");
  return StrCat(msg, ": ", StrJoin(parts, ", "), ".");
}

std::string FormatPreFilterError(size_t num_nodes, const Status& status) {
  std::string reasons = StrJoin(status.reasons(), ", ");
  if (reasons.empty()) reasons = std::string(CodeName(status.code()));
  return StrCat("0/", num_nodes, " nodes are available: ", reasons, ".");
}

}  // namespace tessel
