// Plugin helpers. yaml-cpp conversion exceptions are avoided with convert<>::decode.
#include "scheduler/framework/plugin_util.h"

#include <algorithm>

#include "scheduler/util/strings.h"
#include "scheduler/util/strings.h"

namespace tessel {

void DefaultNormalizeScore(NodeScoreList& scores, bool reverse) {
  int64_t max = 0;
  for (const NodeScore& s : scores) max = std::max(max, s.score);
  for (NodeScore& s : scores) {
    int64_t v = max == 0 ? (reverse ? kMaxNodeScore : 0) : s.score * kMaxNodeScore / max;
    if (max != 0 && reverse) v = kMaxNodeScore - v;
    s.score = v;
  }
}

absl::Status ArgsReader::OnlyKeys(std::initializer_list<std::string_view> known) const {
  if (!args_ || args_.IsNull()) return absl::OkStatus();
  if (!args_.IsMap()) return absl::InvalidArgumentError("args: expected a map");
  for (const auto& kv : args_) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return absl::InvalidArgumentError(StrCat("args.", key, ": unknown field (known: ",
                                                     StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

YAML::Node ArgsReader::Child(std::string_view key) const {
  if (!args_ || !args_.IsMap()) return YAML::Node();
  return args_[std::string(key)];
}

absl::StatusOr<int64_t> ArgsReader::Int(std::string_view key, int64_t fallback, int64_t min,
                                        int64_t max) const {
  YAML::Node v = Child(key);
  if (!v || v.IsNull()) return fallback;
  int64_t out = 0;
  if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, out) || out < min || out > max) {
    return absl::InvalidArgumentError(StrCat("args.", key, ": want an integer in ", min,
                                                   "..", max, ", got \"",
                                                   v.IsScalar() ? v.Scalar() : "<not a scalar>", "\""));
  }
  return out;
}

absl::StatusOr<std::string> ArgsReader::String(std::string_view key, std::string fallback) const {
  YAML::Node v = Child(key);
  if (!v || v.IsNull()) return fallback;
  if (!v.IsScalar()) return absl::InvalidArgumentError(StrCat("args.", key, ": want a string"));
  return v.Scalar();
}

absl::StatusOr<bool> ArgsReader::Bool(std::string_view key, bool fallback) const {
  YAML::Node v = Child(key);
  if (!v || v.IsNull()) return fallback;
  bool out = false;
  if (!v.IsScalar() || !YAML::convert<bool>::decode(v, out)) {
    return absl::InvalidArgumentError(StrCat("args.", key, ": want true or false"));
  }
  return out;
}

}  // namespace tessel
