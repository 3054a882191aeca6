// Small pieces every plugin would otherwise write again: argument reading with field-named
// errors, and kube-scheduler's default score normalisation.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/framework/interface.h"
#include "yaml-cpp/yaml.h"

namespace tessel {

// Scales scores so the highest becomes 100 (reverse: the highest becomes 0, the lowest 100).
void DefaultNormalizeScore(NodeScoreList& scores, bool reverse = false);

// A PreFilter whose whole work is a per-cycle state: written under `key`, or Skip when the pod
// needs none (`state_data` null).
template <typename State>
Status WritePreFilterState(CycleState& state, std::string_view key,
                           std::unique_ptr<State> state_data) {
  if (state_data == nullptr) return Status::Skip();
  state.Write(key, std::move(state_data));
  return Status::Ok();
}

// The state that PreFilter wrote under `key`; when a profile runs the Filter without the
// PreFilter, `compute()` builds it now into `scratch` (slow, but the same answer). Null when the
// pod needs none.
template <typename State, typename Compute>
const State* PreFilterStateOrCompute(const CycleState& state, std::string_view key,
                                     std::unique_ptr<State>& scratch, Compute compute) {
  if (const State* s = state.Read<State>(key)) return s;
  scratch = compute();
  return scratch.get();
}

// Reads plugin args without letting a yaml-cpp conversion throw. Each getter returns the
// fallback when the key is absent, and an InvalidArgument naming the plugin and the field
// ("NodeResourcesFit: args.<key>: ...", or "...: args.a.b[2].c: ..." for a reader made by
// At/Item) when the value has the wrong type or is out of range.
//
//   ArgsReader reader = ArgsReader::Of(kName, args);
//   RETURN_IF_ERROR(reader.OnlyKeys({"scoringStrategy", "ignoredResources"}));
//   ASSIGN_OR_RETURN(std::vector<std::string> ignored, reader.StringList("ignoredResources"));
//   ArgsReader strategy = reader.At("scoringStrategy");   // errors say args.scoringStrategy.*
class ArgsReader {
 public:
  // The args of the plugin `plugin`: paths read "<plugin>: args...".
  static ArgsReader Of(std::string_view plugin, const YAML::Node& args);
  // A reader whose errors start with `path` (At and Item make these).
  ArgsReader(const YAML::Node& args, std::string path) : args_(args), path_(std::move(path)) {}
  // Fails if args is not a map (absent or null is fine) or has keys outside `known` (catches
  // typos in configurations).
  absl::Status OnlyKeys(std::span<const std::string_view> known) const;
  absl::Status OnlyKeys(std::initializer_list<std::string_view> known) const {
    return OnlyKeys(std::span<const std::string_view>(known.begin(), known.size()));
  }
  absl::StatusOr<int64_t> Int(std::string_view key, int64_t fallback, int64_t min, int64_t max) const;
  absl::StatusOr<std::string> String(std::string_view key, std::string fallback) const;
  absl::StatusOr<bool> Bool(std::string_view key, bool fallback) const;
  // A list of strings; absent or null gives an empty list.
  absl::StatusOr<std::vector<std::string>> StringList(std::string_view key) const;
  // The raw value (undefined when absent).
  YAML::Node Child(std::string_view key) const;
  // Readers for a nested map and for the i-th element of a list under `key`.
  ArgsReader At(std::string_view key) const;
  ArgsReader Item(std::string_view key, size_t i) const;
  // "<path>.<key>" for this reader.
  std::string PathOf(std::string_view key) const;
  // An InvalidArgument "<path>.<key>: <what>" (`key` empty: "<path>: <what>").
  absl::Status Error(std::string_view key, std::string_view what) const;
  const std::string& path() const { return path_; }

 private:
  YAML::Node args_;
  std::string path_;
};

}  // namespace tessel
