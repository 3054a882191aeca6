// Label selector matching (see label_selector.h).
#include "scheduler/api/label_selector.h"

#include <algorithm>

namespace tessel {

bool MatchesLabelSelector(const LabelSelector& selector, const StringMap& labels) {
  for (const auto& [key, value] : selector.match_labels) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  using Op = LabelSelectorRequirement::Operator;
  for (const LabelSelectorRequirement& r : selector.match_expressions) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool listed =
        has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    switch (r.op) {
      case Op::kIn:
        if (!listed) return false;
        break;
      case Op::kNotIn:
        if (listed) return false;
        break;
      case Op::kExists:
        if (!has) return false;
        break;
      case Op::kDoesNotExist:
        if (has) return false;
        break;
    }
  }
  return true;
}

bool MatchesLabelSelector(const std::optional<LabelSelector>& selector, const StringMap& labels) {
  return selector.has_value() && MatchesLabelSelector(*selector, labels);
}

}  // namespace tessel
