// Plugin helpers. yaml-cpp conversion exceptions are avoided: values are type-checked, then
// read with Scalar() or convert<>::decode.
#include "scheduler/framework/plugin_util.h"

#include <algorithm>

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

absl::Status ArgsReader::OnlyKeys(std::span<const std::string_view> known) const {
  if (!args_ || args_.IsNull()) return absl::OkStatus();
  if (!args_.IsMap()) return absl::InvalidArgumentError(StrCat(path_, ": expected a map"));
  for (const auto& kv : args_) {
    if (!kv.first.IsScalar()) {
      return absl::InvalidArgumentError(StrCat(path_, ": a key is not a plain string"));
    }
    const std::string& key = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      if (known.empty()) return absl::InvalidArgumentError(StrCat(PathOf(key), ": unknown field (the plugin takes no args)"));
      return absl::InvalidArgumentError(StrCat(PathOf(key), ": unknown field (known: ",
                                               StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

ArgsReader ArgsReader::Of(std::string_view plugin, const YAML::Node& args) {
  return ArgsReader(args, StrCat(plugin, ": args"));
}

std::string ArgsReader::PathOf(std::string_view key) const { return StrCat(path_, ".", key); }

absl::Status ArgsReader::Error(std::string_view key, std::string_view what) const {
  return absl::InvalidArgumentError(StrCat(key.empty() ? path_ : PathOf(key), ": ", what));
}

YAML::Node ArgsReader::Child(std::string_view key) const {
  if (!args_ || !args_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node& args = args_;
  return args[std::string(key)];
}

ArgsReader ArgsReader::At(std::string_view key) const { return ArgsReader(Child(key), PathOf(key)); }

ArgsReader ArgsReader::Item(std::string_view key, size_t i) const {
  const YAML::Node list = Child(key);
  const YAML::Node item =
      list && list.IsSequence() && i < list.size() ? list[i] : YAML::Node(YAML::NodeType::Undefined);
  return ArgsReader(item, StrCat(PathOf(key), "[", i, "]"));
}

absl::StatusOr<int64_t> ArgsReader::Int(std::string_view key, int64_t fallback, int64_t min,
                                        int64_t max) const {
  YAML::Node v = Child(key);
  if (!v || v.IsNull()) return fallback;
  int64_t out = 0;
  if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, out) || out < min || out > max) {
    return absl::InvalidArgumentError(StrCat(PathOf(key), ": want an integer in ", min, "..", max,
                                             ", got ", v.IsScalar() ? StrCat("\"", v.Scalar(), "\"") : "a non-scalar"));
  }
  return out;
}

absl::StatusOr<std::string> ArgsReader::String(std::string_view key, std::string fallback) const {
  YAML::Node v = Child(key);
  if (!v || v.IsNull()) return fallback;
  if (!v.IsScalar()) return absl::InvalidArgumentError(StrCat(PathOf(key), ": want a string"));
  return v.Scalar();
}

absl::StatusOr<bool> ArgsReader::Bool(std::string_view key, bool fallback) const {
  YAML::Node v = Child(key);
  if (!v || v.IsNull()) return fallback;
  bool out = false;
  if (!v.IsScalar() || !YAML::convert<bool>::decode(v, out)) {
    return absl::InvalidArgumentError(StrCat(PathOf(key), ": want true or false"));
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ArgsReader::StringList(std::string_view key) const {
  std::vector<std::string> out;
  const YAML::Node v = Child(key);
  if (!v || v.IsNull()) return out;
  if (!v.IsSequence()) return absl::InvalidArgumentError(StrCat(PathOf(key), ": want a list of strings"));
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].IsScalar()) {
      return absl::InvalidArgumentError(StrCat(PathOf(key), "[", i, "]: want a string"));
    }
    out.push_back(v[i].Scalar());
  }
  return out;
}

}  // namespace tessel
